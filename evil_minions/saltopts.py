"""
Salt minion opts for simulated minions.

Salt's client channels and ``AsyncAuth`` are driven by a minion opts dict.
:func:`base_opts` builds Salt's own minion defaults once per process and sets
what a simulated fleet needs; :func:`minion_opts` derives one minion's opts
from it (id and ``pki_dir`` differ). The values chosen here, and why:

- ``rejected_retry: True`` -- with Salt's default a rejected key makes
  ``AsyncAuth`` sleep 10-20 s synchronously and ``sys.exit``, which would
  freeze and kill a whole worker process with all its minions.
- ``auth_retries`` and a short ``acceptance_wait_time`` -- an unaccepted
  minion reports an authentication failure within seconds (the fleet then
  retries it with backoff) instead of looping inside Salt forever.
- ``user`` is the current user, so Salt's path traversal check of
  ``pki_dir`` accepts the keys directory.
"""

from __future__ import annotations

import getpass
import os
from typing import Any

from evil_minions.config import FleetConfig
from evil_minions.keys import minion_pki_dir

#: Seconds between sign-in retries while the master says "pending".
_ACCEPTANCE_WAIT: float = 2.0
#: Sign-in attempts before AsyncAuth gives up and the fleet's backoff takes over.
_AUTH_RETRIES: int = 3


def base_opts(cfg: FleetConfig, run_dir: str) -> dict[str, Any]:
    """Salt minion opts shared by every simulated minion of a process."""
    import salt.config

    opts: dict[str, Any] = dict(salt.config.minion_config(None))
    opts.update(
        master=cfg.master_host,
        master_ip=cfg.master_host,
        master_port=cfg.ret_port,
        master_uri=cfg.master_uri,
        publish_port=cfg.publish_port,
        transport=cfg.transport,
        keysize=cfg.keysize,
        user=getpass.getuser(),
        cachedir=os.path.join(run_dir, "cache"),
        sock_dir=os.path.join(run_dir, "sock"),
        rejected_retry=True,
        acceptance_wait_time=_ACCEPTANCE_WAIT,
        acceptance_wait_time_max=_ACCEPTANCE_WAIT,
        auth_retries=_AUTH_RETRIES,
        auth_safemode=False,
        request_channel_timeout=cfg.request_timeout,
        request_channel_tries=cfg.request_tries,
        # One subscription socket per process receives every publication; with
        # zmq_filtering the master would address per-minion topics instead.
        zmq_filtering=False,
        # The monitor thread only logs socket events; not worth a thread.
        zmq_monitor=False,
        auth_events=False,
        grains={},
    )
    opts.update(cfg.return_retry_options())
    return opts


def minion_opts(base: dict[str, Any], pki_root: str, minion_id: str) -> dict[str, Any]:
    """One minion's opts: ``base`` with its id and its own ``pki_dir`` under
    ``pki_root`` (the run's, see :func:`evil_minions.keys.run_pki_dirs`)."""
    opts = dict(base)
    opts["id"] = minion_id
    opts["pki_dir"] = str(minion_pki_dir(pki_root, minion_id))
    return opts
