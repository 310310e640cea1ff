"""Simulated minions (``evil_minions``) as a part of the stack.

Keys are generated once into a cache directory and pre-seeded into the
master's accepted keys, so a fleet of 1000 starts without key generation or
an acceptance wait; start-up prints progress until every minion is
authenticated and connected.

The harness hands the simulator one value: it writes the fleet's
:class:`FleetConfig` as JSON and starts ``python -m evil_minions run --config
FILE --keys-ready``. Keys are made ready here, by :func:`evil_minions.prepare_keys`
(the same function the simulator's own CLI uses), in :meth:`SimulatedFleet.start`
or ahead of time with :func:`cache_keys`.

This module is the fleet's only door for benchmarks and scenarios: it
re-exports what they need of ``evil_minions``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Final

from evil_minions import (
    DEFAULT_EXEMPT_FUNCTIONS,
    DEFAULT_PREFIX,
    STYLES,
    FleetConfig,
    LatencySpec,
    PackageSet,
    TimingModel,
    apply_package_states,
    candidate_level,
    common_names,
    filler_name,
    fire_beacons,
    format_progress,
    format_summary,
    is_orphan,
    minion_ids,
    offered_fillers,
    os_profile_for,
    package_version,
    prepare_keys,
    read_status,
    state_id,
    synthetic_grains,
)
from harness.master import Master
from harness.processes import ManagedProcess, StartupError

__all__ = [
    "DEFAULT_EXEMPT_FUNCTIONS",
    "DEFAULT_KEYS_DIR",
    "DEFAULT_PREFIX",
    "STYLES",
    "FleetConfig",
    "LatencySpec",
    "PackageSet",
    "SimulatedFleet",
    "StallWatch",
    "TimingModel",
    "apply_package_states",
    "cache_keys",
    "candidate_level",
    "common_names",
    "filler_name",
    "fire_beacons",
    "is_orphan",
    "minion_ids",
    "offered_fillers",
    "os_profile_for",
    "package_version",
    "state_id",
    "synthetic_grains",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: the harness's key cache: absolute, the fleet's processes do not share our cwd
DEFAULT_KEYS_DIR: Final = PROJECT_ROOT / ".saltfleet" / "keys"
# ~ what 1000 minions need here with cached keys, with a wide margin
START_TIMEOUT = 900.0
#: start-up fails early when it made no progress (see StallWatch) for this long
STALL_TIMEOUT = 180.0
#: the file SimulatedFleet hands the fleet's config over in, under its root
CONFIG_FILE: Final = "fleet.json"
#: the simulator's default keys dir: relative, meant for a person at a shell
_SIMULATOR_KEYS_DIR: Final = FleetConfig().keys_dir

Progress = Callable[[str], None]


class _ProgressPrinter:
    """One updating line on a terminal; a line every few seconds in a log."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._last = 0.0

    def __call__(self, line: str) -> None:
        if sys.stderr.isatty():
            end = "" if not line.endswith("\n") else "\n"
            print(f"\r{line.rstrip()}\033[K", end=end, file=sys.stderr, flush=True)
            return
        now = time.monotonic()
        if line.endswith("\n") or now - self._last >= self.interval:
            self._last = now
            print(line.rstrip(), file=sys.stderr, flush=True)


print_progress = _ProgressPrinter()


class StallWatch:
    """Tells when a fleet's start-up stopped making progress.

    Progress is any change in the fleet's state or in how many minions
    authenticated, connected, failed to authenticate, fetched their start-up
    pillar or sent their start events. A fleet that sits still for ``stall_after``
    seconds (a master that stopped answering, a wrong port) is reported
    then, not after the whole start-up timeout.
    """

    def __init__(self, stall_after: float, now: float) -> None:
        self.stall_after = stall_after
        self._seen: tuple[object, ...] | None = None
        self._since = now

    def stalled(self, status: dict[str, object] | None, now: float) -> float | None:
        """Seconds without progress if that is ``stall_after`` or more, else None."""
        if status is not None:
            seen = tuple(
                status.get(key)
                for key in (
                    "state",
                    "authenticated",
                    "connected",
                    "auth_failures",
                    "pillar_requests",
                    "events_sent",
                )
            )
            if seen != self._seen:
                self._seen, self._since = seen, now
        idle = now - self._since
        return idle if idle >= self.stall_after else None


def _in_key_cache(config: FleetConfig) -> FleetConfig:
    """``config`` with an absolute keys dir: the harness's cache unless it
    names its own (the simulator's default is relative, meant for a shell)."""
    if config.keys_dir == _SIMULATOR_KEYS_DIR:
        return replace(config, keys_dir=str(DEFAULT_KEYS_DIR))
    return replace(config, keys_dir=str(Path(config.keys_dir).resolve()))


def _key_progress(progress: Progress | None) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(f"minion keys: {done}/{total}")


def cache_keys(
    count: int,
    *,
    fleet: FleetConfig | None = None,
    progress: Progress | None = print_progress,
) -> list[str]:
    """Generate the keys of ``count`` simulated minions now; return their ids.

    For benchmarks that must not time key generation: the stack's fleet finds
    them cached. ``fleet`` gives prefix and keys dir (default: the harness's
    cache, ids ``evil-0001`` ...).

    .. code-block:: python

        cache_keys(1000)  # ['evil-0001', ..., 'evil-1000']
    """
    config = _in_key_cache(replace(fleet or FleetConfig(), count=count))
    prepare_keys(config, progress=_key_progress(progress))
    return config.minion_ids()


class SimulatedFleet:
    """One ``python -m evil_minions`` supervisor and its worker processes."""

    def __init__(
        self,
        root: Path,
        master: Master,
        config: FleetConfig,
        *,
        progress: Progress | None = print_progress,
    ) -> None:
        self.root = root
        self.master = master
        self.config = replace(
            _in_key_cache(config),
            master_host="127.0.0.1",
            ret_port=master.settings.ret_port,
            publish_port=master.settings.publish_port,
            run_dir=str(root / "run"),
        )
        self.config_file = root / CONFIG_FILE
        self.progress = progress
        self.process = ManagedProcess(
            "evil_minions",
            [
                sys.executable,
                "-m",
                "evil_minions",
                "run",
                "--config",
                str(self.config_file),
                "--keys-ready",
            ],
            root / "evil_minions.log",
        )

    @property
    def ids(self) -> list[str]:
        """The simulated minions' ids."""
        return self.config.minion_ids()

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def start(self) -> dict[str, object]:
        """Make the keys ready, start the fleet; return its status once every
        minion is connected."""
        ids = self.ids
        prepare_keys(
            self.config,
            master_pki_dir=self.master.settings.pki_dir,
            progress=_key_progress(self.progress),
        )
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(self.config.to_json())
        started = time.time()
        self.process.start()
        deadline = time.monotonic() + START_TIMEOUT
        watch = StallWatch(STALL_TIMEOUT, time.monotonic())
        while True:
            status = read_status(self.config.run_dir)
            fresh = status is not None and float(status.get("updated_at", 0)) >= started
            if fresh and status is not None:
                self._say(format_progress(status))
                if status.get("ready"):
                    self._say(format_summary(status) + "\n")
                    self.process.remember_descendants()
                    return status
                if status.get("state") in ("failed", "stopped"):
                    raise self.process.fail(
                        f"stopped while starting: {format_summary(status)}"
                    )
            if not self.process.running():
                raise self.process.fail(f"exited with code {self.process.returncode()}")
            idle = watch.stalled(status if fresh else None, time.monotonic())
            if idle is not None:
                raise StartupError(
                    f"{len(ids)} simulated minions: start-up made no progress for "
                    f"{idle:.0f}s; last status: "
                    f"{format_summary(status) if fresh and status else 'none'}\n"
                    f"{self.process.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise StartupError(
                    f"{len(ids)} simulated minions not all connected after "
                    f"{START_TIMEOUT:.0f}s; last status: "
                    f"{format_summary(status) if status else 'none'}\n{self.process.log_tail()}"
                )
            time.sleep(0.5)

    def status(self) -> dict[str, object] | None:
        """The status the fleet wrote last, or ``None``."""
        return read_status(self.config.run_dir)

    def stop(self) -> None:
        """Stop the simulator and every process it forked."""
        self.process.stop(timeout=60)
