"""The stack: PostgreSQL, a salt-master and (optionally) a real salt-minion.

Use it as a context manager; whatever it started is stopped on exit, also on
errors and Ctrl-C::

    with Stack(StackSettings(real_minion=True)) as stack:
        stack.cmd("*", "test.ping")

:meth:`Stack.detach` leaves the processes running and returns a
:class:`StackState` that ``python -m harness down`` uses to stop them by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import migrations
from harness.errors import HarnessError, simulator_errors
from harness.events import EventListener
from harness.master import Master, MasterSettings
from harness.minion import SaltMinion
from harness.ports import pick_port
from harness.postgres import (
    ConnectionInfo,
    EmbeddedPostgres,
    check_reachable,
    connection_from_dsn,
)
from harness.processes import ProcessRecord, stop_process_tree

if TYPE_CHECKING:
    from evil_minions import FleetConfig

DSN_ENV = "SALTFLEET_PG_DSN"
STATE_FILE = "stack.json"
REAL_MINION_ID = "saltfleet-minion-1"


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
    # simulated minions (evil_minions): how many, where their keys are cached,
    # and FleetConfig fields to override (timing, processes, prefix ...)
    simulated_minions: int = 0
    simulated_keys_dir: Path | None = None
    simulated_config: dict[str, Any] = field(default_factory=dict)
    ext_pillar: list[dict[str, Any]] | None = None
    master_opts: dict[str, Any] = field(default_factory=dict)
    apply_migrations: bool = True
    # Where the daemons' logs are copied when the stack stops (its root may be
    # a temporary directory that goes away).
    logs_dir: Path | None = None

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

    def save(self) -> Path:
        path = Path(self.root) / STATE_FILE
        data = asdict(self)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, root: Path) -> StackState:
        path = root / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except OSError:
            raise HarnessError(
                f"no stack is recorded in {root} ({path} is missing)"
            ) from None
        except ValueError as exc:
            raise HarnessError(f"{path} is not a stack state file: {exc}") from None
        data["processes"] = [ProcessRecord(**p) for p in data["processes"]]
        return cls(**data)

    def stop(self) -> None:
        """Stop every recorded process by pid, last started first."""
        for record in reversed(self.processes):
            proc = record.process()
            if proc is not None:
                stop_process_tree(record.pid, record.stop_signal)
        (Path(self.root) / STATE_FILE).unlink(missing_ok=True)
        for path in self.remove_dirs:
            shutil.rmtree(path, ignore_errors=True)
        if self.owns_root:
            shutil.rmtree(self.root, ignore_errors=True)


class Stack:
    """Starts the parts in order and stops them in reverse."""

    def __init__(self, settings: StackSettings | None = None) -> None:
        self.settings = settings or StackSettings()
        self._owns_root = self.settings.root is None
        self.root = Path(self.settings.root or tempfile.mkdtemp(prefix="saltfleet-"))
        if self._owns_root:
            # mkdtemp makes it 0700; an unprivileged PostgreSQL must enter it.
            self.root.chmod(0o755)
        self.postgres: EmbeddedPostgres | None = None
        self.pg: ConnectionInfo | None = None
        self.listener: EventListener | None = None
        self.master: Master | None = None
        self.minion: SaltMinion | None = None
        self.fleet: Any = None  # harness.fleet.SimulatedFleet, imported lazily
        self._detached = False

    # -- lifecycle -----------------------------------------------------
    def __enter__(self) -> Stack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
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
        # so must a bad simulator setting
        fleet_config = self._fleet_config() if s.simulated_minions else None
        if s.dsn:
            self.pg = connection_from_dsn(s.dsn)
            check_reachable(self.pg)
        else:
            self.postgres = EmbeddedPostgres(
                self.root / "postgres", pick_port(s.pg_port, "PostgreSQL")
            )
            self.postgres.start()
            self.pg = self.postgres.connection
        if s.apply_migrations:
            migrations.apply(self.pg)
        self.listener = EventListener()
        self.listener.start()
        self.master = Master(
            MasterSettings(
                root=self.root / "master",
                publish_port=publish_port,
                ret_port=ret_port,
                worker_threads=s.worker_threads,
                postgres=self.pg,
                ext_pillar=s.ext_pillar,
                extra=s.master_opts,
            ),
            self.listener,
        )
        self.master.start()
        if s.real_minion:
            self.minion = SaltMinion(
                self.root / "minion", s.minion_id, self.master, self.listener
            )
            self.minion.start()
        if fleet_config is not None:
            self._start_fleet(fleet_config)

    def _fleet_config(self) -> FleetConfig:
        """The simulated fleet's settings, checked: a bad one is a SimulatorError."""
        from evil_minions.config import config_from_fields
        from harness.fleet import DEFAULT_KEYS_DIR

        s = self.settings
        # absolute: the fleet's worker processes do not share our cwd
        keys_dir = (s.simulated_keys_dir or DEFAULT_KEYS_DIR).resolve()
        fields = {"count": s.simulated_minions, "keys_dir": str(keys_dir)}
        with simulator_errors():
            return config_from_fields({**fields, **s.simulated_config})

    def _start_fleet(self, config: FleetConfig) -> None:
        from harness.fleet import SimulatedFleet

        assert self.master is not None
        self.fleet = SimulatedFleet(self.root / "fleet", self.master, config)
        with simulator_errors():
            self.fleet.start()

    def stop(self) -> None:
        """Stop what was started, in reverse order; safe to call twice."""
        if self._detached:
            return
        for part in self._parts()[::-1]:
            part.stop()
        if self.postgres is not None:
            self.postgres.cleanup()
        if self.listener is not None:
            self.listener.stop()
            self.listener = None
        if self.settings.logs_dir is not None:
            self.collect_logs(self.settings.logs_dir)
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
            for p in (self.postgres, self.master, self.minion, self.fleet)
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
