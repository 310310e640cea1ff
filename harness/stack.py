"""The stack: PostgreSQL, a salt-master, (optionally) a real salt-minion and
a fleet of simulated ones.

Use it as a context manager; whatever it started is stopped on exit, also on
errors and Ctrl-C::

    with Stack(StackSettings(real_minion=True)) as stack:
        stack.cmd("*", "test.ping")

Benchmarks and scenarios that need "N simulated minions on a master with these
options" take :func:`fleet_stack`::

    with fleet_stack(1000, root=work / "stack", master_opts=opts) as stack:
        stack.cmd("*", "test.ping", timeout=300)

:meth:`Stack.detach` leaves the processes running and returns a
:class:`StackState` that ``python -m harness down`` uses to stop them by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import migrations
from harness.consumer import ConsumerSettings
from harness.errors import HarnessError, simulator_errors
from harness.events import EventListener
from harness.fleet import FleetConfig, SimulatedFleet
from harness.master import Master, MasterLayout, MasterSettings
from harness.minion import SaltMinion
from harness.ports import pick_port
from harness.postgres import (
    ConnectionInfo,
    EmbeddedPostgres,
    check_reachable,
    connection_from_dsn,
    open_temp_dir,
    remove_stale_copies,
)
from harness.processes import ProcessRecord, signals_deferred, stop_process_tree
from harness.saltapi import ApiSettings, SaltApi

if TYPE_CHECKING:
    from evil_minions import FleetConfig

DSN_ENV = "SALTFLEET_PG_DSN"
STATE_FILE = "stack.json"
REAL_MINION_ID = "saltfleet-minion-1"
#: the master's root under the stack's root
MASTER_DIR = "master"


def master_layout(root: Path) -> MasterLayout:
    """Where the master of a stack rooted at ``root`` keeps everything, known
    before the stack starts (e.g. to install modules into its
    ``extension_modules``)."""
    return MasterLayout(root / MASTER_DIR)


@dataclass
class StackSettings:
    """What to start. Unset ports are picked free on loopback."""

    root: Path | None = None
    dsn: str | None = None
    pg_port: int | None = None
    publish_port: int | None = None
    ret_port: int | None = None
    worker_threads: int = 4
    real_minion: bool = True
    minion_id: str = REAL_MINION_ID
    #: simulated minions (evil_minions), None: none. Master address and run
    #: dir are the stack's; keys_dir left at the simulator's default means the
    #: harness's key cache (harness.fleet.DEFAULT_KEYS_DIR).
    fleet: FleetConfig | None = None
    ext_pillar: list[dict[str, Any]] | None = None
    master_opts: dict[str, Any] = field(default_factory=dict)
    #: pillar SLS files placed in the master's pillar root, by relative name
    pillar_files: dict[str, str] = field(default_factory=dict)
    apply_migrations: bool = True
    #: package states: the saltext.pkgstate runner, ext_pillar, master_tops,
    #: engine and SLS tree, on the stack's PostgreSQL
    pkgstates: bool = False
    # salt-api (rest_cherrypy) beside the master; None: no API
    api: ApiSettings | None = None
    # Where the daemons' logs are copied when the stack stops (its root may be
    # a temporary directory that goes away).
    logs_dir: Path | None = None
    #: the event consumer engine on the master, storing every event in the
    #: stack's database at a bounded rate (harness.consumer); None: none
    consumer: ConsumerSettings | None = None
    #: the master imports the ``salt`` package in this directory instead of
    #: the installed one (``MasterSettings.salt_tree``); None: the installed
    master_salt_tree: Path | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> StackSettings:
        """Settings with the external DSN taken from ``$SALTFLEET_PG_DSN`` if set."""
        overrides.setdefault("dsn", os.environ.get(DSN_ENV) or None)
        return cls(**overrides)


@dataclass
class StackState:
    """A running stack as ``up`` leaves it for ``status`` and ``down``."""

    root: str
    master_conf_dir: str
    publish_port: int
    ret_port: int
    postgres_dsn: str
    processes: list[ProcessRecord]
    owns_root: bool
    remove_dirs: list[str] = field(default_factory=list)
    api_url: str | None = None

    def save(self) -> Path:
        """Write the state to the root's ``stack.json``; return its path."""
        path = Path(self.root) / STATE_FILE
        data = asdict(self)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, root: Path) -> StackState:
        """The state recorded in ``root``; raises HarnessError if there is none."""
        path = root / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except OSError:
            raise HarnessError(
                f"no stack is recorded in {root} ({path} is missing); start one "
                "with `nox -s harness -- up`"
            ) from None
        except ValueError as exc:
            raise HarnessError(f"{path} is not a stack state file: {exc}") from None
        data["processes"] = [ProcessRecord(**p) for p in data["processes"]]
        return cls(**data)

    def stop(self, say: Callable[[str], None] | None = None) -> None:
        """Stop every recorded process by pid, last started first; ``say``
        hears a line before each (a process may take up to 15 s).

        As :meth:`Stack.stop`: Ctrl-C or SIGTERM during it arrives once every
        process is stopped and the state file is gone.
        """
        with signals_deferred():
            self._stop(say)

    def _stop(self, say: Callable[[str], None] | None) -> None:
        records = [r for r in reversed(self.processes) if r.process() is not None]
        for number, record in enumerate(records, 1):
            if say is not None:
                say(
                    f"stopping {record.name} (pid {record.pid}), {number} of {len(records)} ..."
                )
            stop_process_tree(record.pid, record.stop_signal)
        (Path(self.root) / STATE_FILE).unlink(missing_ok=True)
        for path in self.remove_dirs:
            shutil.rmtree(path, ignore_errors=True)
        if self.owns_root:
            shutil.rmtree(self.root, ignore_errors=True)
        # the PostgreSQL install copied for an unprivileged server, once no
        # server runs from it
        remove_stale_copies()


#: what a stack root holds besides ``stack.json`` (``purge_root`` checks them)
STACK_PARTS = ("postgres", MASTER_DIR, "minion", "fleet")


def purge_root(root: Path) -> None:
    """Remove the data of a stopped stack in ``root``: its database, keys,
    job cache and logs. Refuses a directory that is not a stack's root."""
    if not root.exists():
        return
    if (root / STATE_FILE).exists():
        raise HarnessError(f"a stack is recorded in {root}; stop it first")
    strangers = sorted(p.name for p in root.iterdir() if p.name not in STACK_PARTS)
    if strangers:
        raise HarnessError(
            f"{root} holds more than a stack ({', '.join(strangers)}); "
            "nothing was removed"
        )
    shutil.rmtree(root)


class Stack:
    """Starts the parts in order and stops them in reverse."""

    def __init__(
        self,
        settings: StackSettings | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings or StackSettings()
        # hears a line as each part starts (``up`` prints them)
        self._say = say or (lambda line: None)
        self._owns_root = self.settings.root is None
        self.root = Path(self.settings.root or open_temp_dir("saltfleet-"))
        self.postgres: EmbeddedPostgres | None = None
        self.pg: ConnectionInfo | None = None
        self.listener: EventListener | None = None
        self.master: Master | None = None
        self.minion: SaltMinion | None = None
        self.api: SaltApi | None = None
        self.fleet: SimulatedFleet | None = None
        self._detached = False

    # -- lifecycle -----------------------------------------------------
    def __enter__(self) -> Stack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the parts in order; if one fails, stop what started and re-raise."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        s = self.settings
        self.root.mkdir(parents=True, exist_ok=True)
        # Ports first: a taken port must fail before anything is started.
        publish_port = pick_port(s.publish_port, "publish")
        ret_port = pick_port(s.ret_port, "ret")
        api_port = pick_port(s.api.port, "salt-api") if s.api is not None else None
        # so must a bad simulator setting
        if s.dsn:
            self.pg = connection_from_dsn(s.dsn)
            check_reachable(self.pg)
        else:
            self.postgres = EmbeddedPostgres(
                self.root / "postgres", pick_port(s.pg_port, "PostgreSQL")
            )
            self._say(f"PostgreSQL: starting on port {self.postgres.port} ...")
            self.postgres.start()
            self.pg = self.postgres.connection
        if s.apply_migrations:
            migrations.apply(self.pg)
        self.listener = EventListener()
        self.listener.start()
        self.master = Master(
            MasterSettings(
                root=self.root / MASTER_DIR,
                publish_port=publish_port,
                ret_port=ret_port,
                worker_threads=s.worker_threads,
                postgres=self.pg,
                ext_pillar=s.ext_pillar,
                extra=s.master_opts,
                pillar_files=s.pillar_files,
                pkgstates=s.pkgstates,
                consumer=s.consumer,
                salt_tree=s.master_salt_tree,
            ),
            self.listener,
        )
        if s.api is not None and api_port is not None:
            self.api = SaltApi(self.master.settings, s.api, api_port)
            self.api.configure()  # the master reads its eauth settings
        self._say(f"salt-master: starting on ports {publish_port}, {ret_port} ...")
        self.master.start()
        if self.api is not None:
            self._say(f"salt-api: starting on port {api_port} ...")
            self.api.start()
        if s.real_minion:
            self._say(f"salt-minion {s.minion_id}: starting ...")
            self.minion = SaltMinion(
                self.root / "minion", s.minion_id, self.master, self.listener
            )
            self.minion.start()
        if s.fleet is not None:
            self.fleet = SimulatedFleet(self.root / "fleet", self.master, s.fleet)
            self._say(
                f"{s.fleet.count} simulated minions: starting, then waiting until "
                "every one answers ..."
            )
            with simulator_errors():
                self.fleet.start()

    def stop(self) -> None:
        """Stop what was started, in reverse order; safe to call twice.

        Ctrl-C or SIGTERM during the stop arrives after it: every part is
        stopped (each within its timeout) before the interrupt is raised.
        """
        if self._detached:
            return
        with signals_deferred():
            self._stop()

    def _stop(self) -> None:
        for part in self._parts()[::-1]:
            part.stop()
        if self.listener is not None:
            self.listener.stop()
            self.listener = None
        # before the cleanup: a relocated PostgreSQL's log goes with its copy
        if self.settings.logs_dir is not None:
            self.collect_logs(self.settings.logs_dir)
        if self.postgres is not None:
            self.postgres.cleanup()
            remove_stale_copies()
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def collect_logs(self, dest: Path) -> list[Path]:
        """Copy every daemon log into ``dest`` (same paths relative to the root)."""
        copied = []
        roots = [self.root]
        if self.postgres is not None and self.postgres.relocated:
            roots.append(self.postgres.base_dir)
        for root, log in ((r, f) for r in roots for f in sorted(r.rglob("*.log"))):
            target = dest / log.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, target)
            copied.append(target)
        return copied

    def detach(self) -> StackState:
        """Leave the processes running; return (and save) what stops them."""
        assert self.master is not None and self.pg is not None
        records = [part.process.record() for part in self._parts()]
        state = StackState(
            root=str(self.root),
            master_conf_dir=str(self.master.settings.conf_dir),
            publish_port=self.master.settings.publish_port,
            ret_port=self.master.settings.ret_port,
            postgres_dsn=self.pg.dsn,
            processes=records,
            owns_root=self._owns_root,
            api_url=self.api.url if self.api is not None else None,
            remove_dirs=[str(self.postgres.base_dir)]
            if self.postgres is not None and self.postgres.relocated
            else [],
        )
        state.save()
        if self.listener is not None:
            self.listener.stop()
        self._detached = True
        return state

    # -- using it --------------------------------------------------------
    def _parts(self) -> list[Any]:
        """The started parts, in start order."""
        return [
            p
            for p in (self.postgres, self.master, self.api, self.minion, self.fleet)
            if p is not None
        ]

    def pids(self) -> list[int]:
        """Every pid the stack started or saw its daemons fork."""
        pids: list[int] = []
        for part in self._parts():
            if part.process.returncode() is None:
                part.process.remember_descendants()
            pids.append(part.process.pid)
            pids.extend(part.process.seen_pids())
        return pids

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A ``salt.client.LocalClient`` for this master, destroyed after use.

        Not kept across calls: a LocalClient stops receiving returns once
        another master's client has lived in the same process (seen with
        Salt 3008.3 when a test runs two stacks one after the other).
        """
        import salt.client
        import salt.config

        assert self.master is not None
        opts = salt.config.client_config(str(self.master.settings.conf_file))
        client = salt.client.LocalClient(mopts=opts)
        try:
            yield client
        finally:
            client.destroy()

    def cmd(
        self, tgt: str, fun: str, arg: list[Any] | tuple[Any, ...] = (), **kwargs: Any
    ) -> dict[str, Any]:
        """Run ``fun`` on ``tgt`` and return ``{minion_id: return}``."""
        kwargs.setdefault("timeout", 30)
        with self.client() as client:
            return dict(client.cmd(tgt, fun, list(arg), **kwargs))


def fleet_stack(
    minions: int,
    *,
    root: Path,
    master_opts: Mapping[str, Any] | None = None,
    fleet: FleetConfig | None = None,
    worker_threads: int = 4,
    ext_pillar: list[dict[str, Any]] | None = None,
    logs_dir: Path | None = None,
    pillar_files: Mapping[str, str] | None = None,
    dsn: str | None = None,
    api: ApiSettings | None = None,
    pkgstates: bool = False,
    consumer: ConsumerSettings | None = None,
    master_salt_tree: Path | None = None,
) -> Stack:
    """A stack of ``minions`` simulated minions and no real one, not started.

    ``fleet`` carries the simulator's knobs (timing, processes,
    startup_pillar ...); its ``count`` becomes ``minions`` (so a fleet with
    ``processes=P`` needs ``count >= P`` itself too) and its keys live in the
    harness's key cache unless it names a ``keys_dir``. ``pillar_files`` are
    written into the master's pillar root (``{"top.sls": ...}``); ``dsn``
    points the master at an existing PostgreSQL instead of an embedded one;
    ``api`` adds salt-api beside the master; ``pkgstates`` serves package
    states (:mod:`harness.pkgstate_master`); ``consumer`` adds the event consumer
    engine; ``master_salt_tree`` runs the master on the ``salt`` package in
    that directory (pristine 3008.3 beside the series, say).

    .. code-block:: python

        fleet = FleetConfig(processes=2, startup_pillar=False)
        with fleet_stack(1000, root=work / "stack", fleet=fleet) as stack:
            stack.cmd("*", "test.ping", timeout=300)
    """
    with simulator_errors():
        config = replace(fleet or FleetConfig(), count=minions)
    return Stack(
        StackSettings(
            root=root,
            dsn=dsn,
            real_minion=False,
            worker_threads=worker_threads,
            fleet=config,
            ext_pillar=ext_pillar,
            master_opts=dict(master_opts or {}),
            pillar_files=dict(pillar_files or {}),
            logs_dir=logs_dir,
            api=api,
            pkgstates=pkgstates,
            consumer=consumer,
            master_salt_tree=master_salt_tree,
        )
    )
