"""
evil_minions: many simulated Salt minions on Salt's own protocol, for Salt 3008.

A real salt-master treats every simulated minion like a real one: each has its
own id and RSA key, authenticates with Salt's ``AsyncAuth``, talks over Salt's
``AsyncReqChannel``, matches targets with Salt's matchers against synthetic
grains, answers the functions a fleet sees and fires start and beacon events.
Many minions share one event loop per process; ``--processes`` spreads them
over cores.

Layout (one job per module)::

    errors.py      EvilMinionsError: the base of every error, the tree drawn
    argtypes.py    argparse value types of every saltfleet CLI
    entrypoint.py  run_cli: exit codes, error lines and SIGTERM of every CLI
    config.py      FleetConfig, TimingModel, LatencySpec: every knob and default
    keys.py        prepare_keys (ensure_keys, seed_master): per-minion RSA keys, cached
    grains.py      synthetic_grains: deterministic per-id grains (OS mix, network)
    packages.py    PackageSet: per-minion package set behind pkg.list_pkgs
    matching.py    TargetMatcher: Salt's matcher modules on a minion's view
    jobs.py        JobTracker: in-flight jobs and job slots (saltutil.running)
    states.py      synthetic_state_run: state results in highstate format
    functions.py   the simulated execution functions and the job -> return path
    replay.py      replay files: record a real minion, replay with own id
    saltopts.py    Salt minion opts for simulated minions
    minion.py      SimulatedMinion: one identity on Salt's request channel
    fleet.py       FleetWorker: one process, one loop, one publish subscription
    supervisor.py  FleetSupervisor: workers, progress, readiness, shutdown
    control.py     control sockets: beacons, slowdown, live status
    status.py      counters, status.json, wait_ready
    cli.py         python -m evil_minions

Typical use from a harness (the supervisor reads the same config file its
workers do; the harness made the keys ready, so the supervisor skips that):

.. code-block:: python

    import subprocess, sys
    from evil_minions import FleetConfig, prepare_keys, wait_ready, fire_beacons

    cfg = FleetConfig(master_host="127.0.0.1", ret_port=4506, publish_port=4505,
                      count=1000, keys_dir="/var/tmp/em-keys", run_dir="/tmp/em-run")
    prepare_keys(cfg, master_pki_dir="/etc/salt/pki/master", progress=print)
    with open("/tmp/em-fleet.json", "w") as handle:
        handle.write(cfg.to_json())
    proc = subprocess.Popen([sys.executable, "-m", "evil_minions", "run",
                             "--config", "/tmp/em-fleet.json", "--keys-ready"])
    wait_ready(cfg.effective_run_dir, timeout=600)
    fire_beacons(cfg.effective_run_dir, ["evil-0001"])
    proc.terminate(); proc.wait()
"""

from evil_minions import argtypes
from evil_minions.config import (
    DEFAULT_EXEMPT_FUNCTIONS,
    DEFAULT_PREFIX,
    ConfigError,
    FleetConfig,
    LatencySpec,
    TimingModel,
    minion_ids,
)
from evil_minions.control import BeaconReport, fire_beacons, set_slowdown
from evil_minions.entrypoint import EXIT_INTERRUPTED, EXIT_USAGE, CliMain, run_cli
from evil_minions.errors import EvilMinionsError
from evil_minions.grains import os_profile_for, synthetic_grains
from evil_minions.keys import ensure_keys, prepare_keys, seed_master
from evil_minions.packages import (
    STYLES,
    PackageSet,
    candidate_level,
    common_names,
    filler_name,
    is_orphan,
    offered_fillers,
    package_version,
)
from evil_minions.pkgstate_apply import apply_package_states, state_id
from evil_minions.replay import (
    ReplayCall,
    ReplayStore,
    record_from_client,
    record_from_returns,
)
from evil_minions.status import format_progress, format_summary, read_status, wait_ready

__all__ = [
    "DEFAULT_EXEMPT_FUNCTIONS",
    "DEFAULT_PREFIX",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "STYLES",
    "BeaconReport",
    "CliMain",
    "ConfigError",
    "EvilMinionsError",
    "FleetConfig",
    "LatencySpec",
    "PackageSet",
    "ReplayCall",
    "ReplayStore",
    "TimingModel",
    "apply_package_states",
    "argtypes",
    "candidate_level",
    "common_names",
    "ensure_keys",
    "filler_name",
    "fire_beacons",
    "format_progress",
    "format_summary",
    "is_orphan",
    "minion_ids",
    "offered_fillers",
    "os_profile_for",
    "package_version",
    "prepare_keys",
    "read_status",
    "record_from_client",
    "record_from_returns",
    "run_cli",
    "seed_master",
    "set_slowdown",
    "state_id",
    "synthetic_grains",
    "wait_ready",
]
