"""A salt-master from the patched install, in a root directory of its own."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.consumer import ConsumerSettings
from harness.errors import HarnessError
from harness.events import ENGINE_DIR, EventListener
from harness.ports import LOOPBACK, is_listening
from harness.postgres import ConnectionInfo
from harness.processes import ManagedProcess

MASTER_ID = "saltfleet-master"
START_TIMEOUT = 120.0
KEY_SIZE = 2048


def salt_script(name: str) -> str:
    """The console script ``name`` of the Salt installed beside this Python."""
    return str(Path(sys.executable).parent / name)


@dataclass
class MasterLayout:
    """Where a master rooted at ``root`` keeps each thing.

    The one place paths under a master's root are spelled: the rendered
    config, in-process options (:func:`in_process_opts`) and every caller
    read them from here.
    """

    root: Path

    @property
    def conf_dir(self) -> Path:
        """The config directory (``-c``), holding :attr:`conf_file`."""
        return self.root / "etc" / "salt"

    @property
    def conf_file(self) -> Path:
        """The rendered master config."""
        return self.conf_dir / "master"

    @property
    def pki_dir(self) -> Path:
        """The master's keys."""
        return self.root / "pki" / "master"

    @property
    def accepted_keys_dir(self) -> Path:
        """Accepted minion public keys, one file per minion id."""
        return self.pki_dir / "minions"

    @property
    def cachedir(self) -> Path:
        """The master's cache: job cache, minion data, extension modules."""
        return self.root / "cache" / "master"

    @property
    def extension_modules(self) -> Path:
        """Salt's default place (``<cachedir>/extmods``), named explicitly."""
        return self.cachedir / "extmods"

    @property
    def sock_dir(self) -> Path:
        """The master's IPC sockets, the event bus's among them."""
        return self.root / "run" / "master"

    @property
    def pidfile(self) -> Path:
        """The daemon's pidfile."""
        return self.root / "run" / "salt-master.pid"

    @property
    def log_file(self) -> Path:
        """The master's log."""
        return self.root / "log" / "master.log"

    @property
    def key_log_file(self) -> Path:
        """The key log (``key_logfile``)."""
        return self.root / "log" / "key.log"

    @property
    def stdout_log(self) -> Path:
        """Where the daemon's own stdout and stderr go."""
        return self.root / "log" / "salt-master.stdout.log"

    @property
    def file_root(self) -> Path:
        """The ``base`` file root."""
        return self.root / "srv" / "salt"

    @property
    def pillar_root(self) -> Path:
        """The ``base`` pillar root."""
        return self.root / "srv" / "pillar"

    def path_options(self) -> dict[str, Any]:
        """The master options that put everything under :attr:`root`."""
        return {
            "root_dir": str(self.root),
            "pki_dir": str(self.pki_dir),
            "cachedir": str(self.cachedir),
            "extension_modules": str(self.extension_modules),
            "sock_dir": str(self.sock_dir),
            "pidfile": str(self.pidfile),
            "log_file": str(self.log_file),
            "key_logfile": str(self.key_log_file),
            "file_roots": {"base": [str(self.file_root)]},
            "pillar_roots": {"base": [str(self.pillar_root)]},
        }


@dataclass
class MasterSettings(MasterLayout):
    """Everything the harness decides about the master it renders."""

    publish_port: int
    ret_port: int
    worker_threads: int = 4
    postgres: ConnectionInfo | None = None
    ext_pillar: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: pillar SLS files written under :attr:`pillar_root` before the start,
    #: by name relative to it (``{"top.sls": "base: ..."}``)
    pillar_files: Mapping[str, str] = field(default_factory=dict)
    #: serve package states (saltext.pkgstate) from :attr:`postgres`
    pkgstates: bool = False
    #: the event consumer engine (stores every event in :attr:`postgres`
    #: at a bounded rate); None: none
    consumer: ConsumerSettings | None = None
    #: a directory holding a ``salt`` package the daemon imports instead of
    #: the installed one (first on its ``PYTHONPATH``), such as pristine
    #: 3008.3 for a benchmark; None: the installed Salt
    salt_tree: Path | None = None

    def environment(self) -> dict[str, str] | None:
        """The daemon's environment: this one, with :attr:`salt_tree` first
        on ``PYTHONPATH``; None (inherit) without a tree."""
        if self.salt_tree is None:
            return None
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, (str(self.salt_tree), env.get("PYTHONPATH")))
        )
        return env


def render_config(
    settings: MasterSettings, listener: EventListener | None
) -> dict[str, Any]:
    """The master configuration as a dict (written as YAML by :func:`write_config`)."""
    opts: dict[str, Any] = {
        "id": MASTER_ID,
        **settings.path_options(),
        "user": getpass.getuser(),
        "interface": LOOPBACK,
        "publish_port": settings.publish_port,
        "ret_port": settings.ret_port,
        "worker_threads": settings.worker_threads,
        "log_level_logfile": "info",
        "keysize": KEY_SIZE,
        "open_mode": False,
        "auto_accept": False,
        "enable_fqdns_grains": False,
    }
    if listener is not None:
        opts.update(listener.engine_config())
    if settings.postgres is not None:
        opts["postgres"] = settings.postgres.salt_options()
    if settings.ext_pillar:
        opts["ext_pillar"] = settings.ext_pillar
    if settings.pkgstates:
        from harness.pkgstate_master import master_options

        opts.update(master_options(opts, settings.postgres))
    opts.update(settings.extra)
    if settings.consumer is not None:
        _add_consumer(opts, settings.consumer, settings.postgres)
    return opts


def _add_consumer(
    opts: dict[str, Any],
    consumer: ConsumerSettings,
    postgres: ConnectionInfo | None,
) -> None:
    """Append the consumer engine to ``opts["engines"]``, beside whatever
    engines the listener or ``extra`` configured."""
    if postgres is None:
        raise HarnessError(
            "the event consumer stores events in PostgreSQL: give the master "
            "a database (MasterSettings.postgres)"
        )
    engines = opts.get("engines") or []
    if isinstance(engines, dict):
        engines = [{name: conf} for name, conf in engines.items()]
    opts["engines"] = [*engines, consumer.engine(postgres.dsn)]
    dirs = list(opts.get("engines_dirs") or [])
    if str(ENGINE_DIR) not in dirs:
        dirs.append(str(ENGINE_DIR))
    opts["engines_dirs"] = dirs


def in_process_opts(workdir: Path, **overrides: Any) -> dict[str, Any]:
    """Master options for Salt code run in this process, not in a daemon.

    Salt's defaults through ``salt.config.apply_master_config``, with every
    path laid out under ``workdir`` as a rendered master's (:class:`MasterLayout`),
    then ``overrides``. The (empty) pillar root is created.

    .. code-block:: python

        opts = in_process_opts(tmp, postgres=info.salt_options())
        pillars = salt.loader.pillars(opts, salt.loader.minion_mods(opts))
    """
    import copy

    import salt.config

    layout = MasterLayout(workdir)
    layout.pillar_root.mkdir(parents=True, exist_ok=True)
    opts = salt.config.apply_master_config(
        {**layout.path_options(), **overrides},
        copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS),
    )
    return dict(opts)


def _write_pillar_files(settings: MasterSettings) -> None:
    root = settings.pillar_root
    for name, text in settings.pillar_files.items():
        path = root / name
        if not path.resolve().is_relative_to(root.resolve()):
            raise HarnessError(
                f"pillar file {name!r} lies outside the pillar root {root}: "
                "name it relative to the root"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def write_config(settings: MasterSettings, listener: EventListener | None) -> Path:
    """Make the master's directories and pillar files and render its config;
    return the config file's path."""
    for path in (
        settings.conf_dir,
        settings.accepted_keys_dir,
        settings.file_root,
        settings.pillar_root,
    ):
        path.mkdir(parents=True, exist_ok=True)
    _write_pillar_files(settings)
    settings.conf_file.write_text(
        yaml.safe_dump(render_config(settings, listener), default_flow_style=False)
    )
    return settings.conf_file


def wait_for_start_event(
    process: ManagedProcess,
    listener: EventListener,
    tag: str,
    *,
    since: int,
    daemon_log: Path,
    timeout: float = START_TIMEOUT,
) -> None:
    """Wait for a daemon's start event; fail with its log tails if none comes."""
    if listener.wait_for(tag, timeout=timeout, since=since, alive=process.running):
        return
    if not process.running():
        raise process.fail(
            f"exited with code {process.returncode()} before {tag}", daemon_log
        )
    raise process.fail(f"sent no {tag} event within {timeout:.0f}s", daemon_log)


class Master:
    """One salt-master process, confirmed up by its start event."""

    def __init__(self, settings: MasterSettings, listener: EventListener) -> None:
        self.settings = settings
        self.listener = listener
        self.process = ManagedProcess(
            "salt-master",
            [salt_script("salt-master"), "-c", str(settings.conf_dir), "-l", "warning"],
            settings.stdout_log,
            env=settings.environment(),
        )

    def start(self) -> None:
        """Write the config and start the daemon; return once it sent its start
        event and listens on its ret_port."""
        write_config(self.settings, self.listener)
        since = self.listener.mark()
        self.process.start()
        wait_for_start_event(
            self.process,
            self.listener,
            f"salt/master/{MASTER_ID}/start",
            since=since,
            daemon_log=self.settings.log_file,
        )
        if self.settings.consumer is not None:
            # events fired before it reads the bus would never reach it
            wait_for_start_event(
                self.process,
                self.listener,
                self.settings.consumer.start_tag,
                since=since,
                daemon_log=self.settings.log_file,
            )
        self.process.wait_until(
            lambda: is_listening(self.settings.ret_port),
            timeout=30,
            what=f"listening on ret_port {self.settings.ret_port}",
        )
        self.process.remember_descendants()

    def stop(self) -> None:
        """Stop the daemon and every process it forked."""
        self.process.stop()

    def effective_opts(self) -> dict[str, Any]:
        """The options this master runs with: the configuration file it was
        started with, read by Salt with its defaults filled in."""
        import salt.config

        return dict(salt.config.master_config(str(self.settings.conf_file)))

    def run_cli(
        self, script: str, *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the Salt CLI ``script`` (``salt``, ``salt-run`` ...) against this master.

        Warnings are silenced (they would mix with the output tests read);
        PATH keeps the system's directories because loading grains runs
        commands such as ``dpkg``; PYTHONPATH is kept so that the CLI loads
        the same code as the daemons (which inherit it), e.g. a worktree's
        extension in front of an installed one.
        """
        env = {
            "PYTHONWARNINGS": "ignore",
            "PATH": f"{Path(sys.executable).parent}:"
            f"{os.environ.get('PATH', '/usr/bin:/bin')}",
        }
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return subprocess.run(
            [salt_script(script), "-c", str(self.settings.conf_dir), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            env=env,
        )

    def accept_key(self, minion_id: str, public_pem: str) -> None:
        """Pre-seed a minion's public key as accepted (no acceptance wait)."""
        (self.settings.accepted_keys_dir / minion_id).write_text(public_pem)
