"""
Fleet status: counters per worker process, their aggregate, and how to wait for readiness.

Every worker process writes ``<run_dir>/status-<k>.json`` about once a
second; the supervisor sums them into ``<run_dir>/status.json``. The files are
the on-demand status (``python -m evil_minions status --run-dir DIR`` prints
it) and the harness's readiness signal:

.. code-block:: python

    from evil_minions import status

    summary = status.wait_ready("/tmp/em-run", timeout=300)
    summary["authenticated"] == summary["count"]  # True

``status.json`` fields: ``count``, ``processes``, ``state`` (``starting``,
``ready``, ``stopping``, ``stopped``, ``failed``), ``ready`` (all minions
authenticated and connected), ``elapsed`` (seconds since start),
``ready_after`` (seconds from start to ready), ``supervisor_pid``,
``updated_at`` (epoch seconds), the counters of
:class:`ProcessStats` summed over processes, ``rss_kb`` (all workers),
``baseline_rss_kb`` (the workers before they created minions),
``rss_kb_per_minion`` (``(rss_kb - baseline_rss_kb) / minions``) and
``per_process`` (the worker files).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from evil_minions.errors import EvilMinionsError

STATUS_FILE: Final = "status.json"
PROCESS_STATUS_GLOB: Final = "status-*.json"

#: What became of job returns (see evil_minions.returns).
RETURN_COUNTERS: Final = (
    "returns_sent", "return_tries", "return_retries", "return_timeouts",
    "returns_given_up", "return_errors",
)  # fmt: skip
#: Counters summed over processes; ``errors`` is their error total.
COUNTERS: Final = (
    "minions", "started", "authenticated", "connected", "auth_failures",
    "publications", "jobs_seen", "jobs_running", "jobs_waiting",
    *RETURN_COUNTERS,
    "events_sent", "event_errors", "pillar_requests",
    "pillar_errors", "errors", "rss_kb", "baseline_rss_kb",
)  # fmt: skip
_ERROR_COUNTERS: Final = (
    "auth_failures",
    "return_errors",
    "event_errors",
    "pillar_errors",
)


class FleetStoppedError(EvilMinionsError, RuntimeError):
    """The fleet failed or stopped while a caller waited for it to be ready."""


@dataclasses.dataclass
class ProcessStats:
    """Live counters of one worker process."""

    index: int
    pid: int
    minions: int
    started: int = 0
    authenticated: int = 0
    connected: int = 0
    auth_failures: int = 0
    publications: int = 0
    jobs_seen: int = 0
    jobs_running: int = 0
    jobs_waiting: int = 0
    #: returns the master acknowledged
    returns_sent: int = 0
    #: tries of returns sent, first tries included (see evil_minions.returns)
    return_tries: int = 0
    #: tries of a return after its first
    return_retries: int = 0
    #: tries that timed out; one may still reach the master, which then gets
    #: that return twice if another try does too (duplicates: count them there)
    return_timeouts: int = 0
    #: returns whose job logged Salt's "failed to return" and stopped waiting,
    #: as a real minion's job process does; the return may still arrive later
    returns_given_up: int = 0
    #: returns whose every try failed; the minion sends them no more (a
    #: timed-out copy may still reach the master: count losses there)
    return_errors: int = 0
    events_sent: int = 0
    event_errors: int = 0
    #: ``_pillar`` requests sent to the master, retries after a timeout included
    pillar_requests: int = 0
    pillar_errors: int = 0
    rss_kb: int = 0
    #: RSS before any minion existed (Salt imported, loop and context set up)
    baseline_rss_kb: int = 0
    cpu_seconds: float = 0.0
    pub_connected: bool = False
    #: most non-exempt jobs one minion of this process had in flight at once
    peak_minion_jobs: int = 0
    state: str = "starting"
    started_at: float = dataclasses.field(default_factory=time.time)
    updated_at: float = 0.0

    @property
    def errors(self) -> int:
        """All failures a user should look at."""
        return sum(getattr(self, name) for name in _ERROR_COUNTERS)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form including the derived ``errors``."""
        data = dataclasses.asdict(self)
        data["errors"] = self.errors
        return data


def current_rss_kb() -> int:
    """Resident set size of this process in KiB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def write_json_atomic(path: str | os.PathLike[str], data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON so readers never see a partial file."""
    tmp = f"{os.fspath(path)}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def process_status_path(run_dir: str | os.PathLike[str], index: int) -> Path:
    """Where worker ``index`` writes its counters."""
    return Path(run_dir) / f"status-{index}.json"


def read_process_stats(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All worker status files in ``run_dir``, by process index."""
    found = (_read_json(p) for p in Path(run_dir).glob(PROCESS_STATUS_GLOB))
    return sorted((d for d in found if d), key=lambda d: int(d.get("index", 0)))


def aggregate(
    per_process: Iterable[Mapping[str, Any]],
    *,
    count: int,
    processes: int,
    started_at: float,
    state: str,
) -> dict[str, Any]:
    """Sum worker counters into the fleet status written to ``status.json``."""
    per_process = list(per_process)
    total: dict[str, Any] = {
        name: sum(int(p.get(name, 0)) for p in per_process) for name in COUNTERS
    }
    now = time.time()
    total.update(
        count=count,
        processes=processes,
        processes_reporting=len(per_process),
        pub_connected=sum(1 for p in per_process if p.get("pub_connected")),
        cpu_seconds=round(
            sum(float(p.get("cpu_seconds", 0.0)) for p in per_process), 2
        ),
        peak_minion_jobs=max(
            (int(p.get("peak_minion_jobs", 0)) for p in per_process), default=0
        ),
        elapsed=round(now - started_at, 2),
        updated_at=now,
        state=state,
        supervisor_pid=os.getpid(),
        per_process=per_process,
    )
    total["ready"] = (
        total["authenticated"] >= count
        and total["connected"] >= count
        and total["pub_connected"] >= processes
    )
    # Per-minion memory is what the minions added on top of each process's
    # baseline (interpreter, Salt, loaders): the number that scales.
    minions = total["minions"]
    total["rss_kb_per_minion"] = (
        round((total["rss_kb"] - total["baseline_rss_kb"]) / minions, 1)
        if minions
        else 0.0
    )
    return total


def read_status(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The fleet status the supervisor wrote last, or ``None``."""
    return _read_json(Path(run_dir) / STATUS_FILE)


def wait_ready(
    run_dir: str | os.PathLike[str],
    *,
    timeout: float = 600.0,
    pid: int | None = None,
    poll: float = 0.5,
) -> dict[str, Any]:
    """
    Block until the fleet in ``run_dir`` reports every minion authenticated and connected.

    Only a status written after this call started counts (a ``status.json``
    left by an earlier run in the same run dir is ignored); with ``pid`` only
    one written by that supervisor process. Raises ``TimeoutError`` (with the
    last status in the message) after ``timeout`` seconds, and
    :class:`FleetStoppedError` if the fleet failed or stopped meanwhile.
    """
    called = time.time()
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        current = read_status(run_dir)
        if (
            current
            and float(current.get("updated_at", 0)) >= called
            and (pid is None or current.get("supervisor_pid") == pid)
        ):
            last = current
            if last.get("ready"):
                return last
            if last.get("state") in ("failed", "stopped"):
                raise FleetStoppedError(
                    f"fleet in {run_dir} is {last['state']}: {format_summary(last)}"
                )
        time.sleep(poll)
    summary = format_summary(last) if last else "no fresh status.json written"
    raise TimeoutError(f"fleet in {run_dir} not ready after {timeout:g}s: {summary}")


def format_progress(status: Mapping[str, Any]) -> str:
    """One line for the terminal while the fleet starts."""
    rate = status["authenticated"] / status["elapsed"] if status.get("elapsed") else 0.0
    return (
        f"authenticating: {status['authenticated']}/{status['count']} authenticated, "
        f"{status['connected']} connected, {status['auth_failures']} auth failures, "
        f"{rate:.1f}/s, {status['elapsed']:.0f}s"
    )


def format_summary(status: Mapping[str, Any]) -> str:
    """The status summary printed at the end and on SIGUSR1."""
    return (
        f"state={status.get('state')} minions={status.get('count')} "
        f"processes={status.get('processes')} "
        f"authenticated={status.get('authenticated')} connected={status.get('connected')} "
        f"publications={status.get('publications')} jobs_seen={status.get('jobs_seen')} "
        f"jobs_running={status.get('jobs_running')} returns_sent={status.get('returns_sent')} "
        f"return_tries={status.get('return_tries')} "
        f"return_retries={status.get('return_retries')} "
        f"return_timeouts={status.get('return_timeouts')} "
        f"returns_given_up={status.get('returns_given_up')} "
        f"events_sent={status.get('events_sent')} pillar_requests={status.get('pillar_requests')} "
        f"errors={status.get('errors')} (auth_failures={status.get('auth_failures')} "
        f"return_errors={status.get('return_errors')} event_errors={status.get('event_errors')} "
        f"pillar_errors={status.get('pillar_errors')}) "
        f"rss_kb={status.get('rss_kb')} baseline_rss_kb={status.get('baseline_rss_kb')} "
        f"rss_kb_per_minion={status.get('rss_kb_per_minion')} "
        f"cpu_seconds={status.get('cpu_seconds')} elapsed={status.get('elapsed')}s"
    )
