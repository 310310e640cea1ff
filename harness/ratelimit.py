"""Rate limiting in the master's publish path, as the harness drives it.

The Salt side is the ``ratelimit`` topic of ``patches/`` (``salt.ratelimit``,
``salt/criteria/``, the ``ratelimit`` runner). This module only helps tests
and benchmarks use it:

- :class:`RateLimiting` renders the ``rate_limiting`` master option, for
  ``MasterSettings.extra``, and optionally a worker pool of its own for the
  exempt functions.
- :class:`QueueProbe` asks the running master's queue manager for its status,
  its queue, the capacity minions hold and a job's outcome, over the queue
  manager's unix socket: no ``salt-run`` process, so it can be polled every
  second during a storm.
- :func:`job_event` reads a ``salt/ratelimit/job/<jid>/<outcome>`` tag;
  :func:`outcomes` folds such events an :class:`~harness.events.EventListener`
  collected into ``{jid: [outcome, ...]}``; :func:`outcome_problems` names the
  jobs that did not end in exactly one outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from harness.events import Event, EventListener

#: The outcomes a rate-limited job can end in (``salt.ratelimit.OUTCOMES``).
OUTCOMES = (
    "published",
    "published_excluding",
    # published without a decision: the criteria module failed on the job
    "published_unchecked",
    "expired",
    "rejected",
    # the master stopped while the job was going out and no minion returned:
    # it may or may not have run, and is not published again (patch G)
    "unknown",
)

#: The outcomes of a job that went out to (some of) its minions.
PUBLISHED_OUTCOMES = ("published", "published_excluding", "published_unchecked")

#: Fired when a job enters the queue; not an outcome.
QUEUED = "queued"

#: ``salt/ratelimit/slice/<jid>/<n>``: slice ``n`` of a job went out.
SLICE_EVENTS = "salt/ratelimit/slice/*"

JOB_EVENTS = "salt/ratelimit/job/*"
RECONCILED_EVENT = "salt/ratelimit/capacity/reconciled"
MANAGER_START_EVENT = "salt/ratelimit/manager/start"

#: ``salt.ratelimit.ipc.SOCKET_NAME`` in the master's ``sock_dir``.
SOCKET_NAME = "ratelimit.ipc"

#: The worker pool :attr:`RateLimiting.exempt_pool_workers` adds.
EXEMPT_POOL = "exempt"


def salt_defaults() -> Mapping[str, Any]:
    """Salt's own ``rate_limiting`` defaults, read from the patched Salt
    (``salt.config.rate_limiting.DEFAULT_RATE_LIMITING``), never restated."""
    import salt.config.rate_limiting as config  # the patched Salt

    defaults: Mapping[str, Any] = config.DEFAULT_RATE_LIMITING
    return defaults


def salt_slice_defaults() -> Mapping[str, Any]:
    """Salt's ``rate_limiting:slices`` defaults (``slices: true``), read from
    the patched Salt."""
    import salt.config.rate_limiting as config  # the patched Salt

    defaults: Mapping[str, Any] = config.DEFAULT_SLICES
    return defaults


def _salt_default(name: str) -> Any:
    """A field whose default is Salt's default of setting ``name``."""
    return field(default_factory=lambda: salt_defaults()[name])


@dataclass(frozen=True)
class RateLimiting:
    """The ``rate_limiting`` master option; defaults are Salt's."""

    max_master_jobs: int = _salt_default("max_master_jobs")
    max_minion_jobs: int = _salt_default("max_minion_jobs")
    max_queue: int = _salt_default("max_queue")
    criteria: str = _salt_default("criteria")
    exempt: tuple[str, ...] | None = None
    #: jobs to at most this many minions bypass the queue
    #: (``exempt_max_targets``); 0: none
    exempt_max_targets: int = _salt_default("exempt_max_targets")
    maintenance_interval: float = _salt_default("maintenance_interval")
    long_running: float = _salt_default("long_running")
    #: MWorkers of a worker pool of their own for the exempt functions'
    #: publications and returns (``worker_pools:<pool>:functions``); 0: none
    exempt_pool_workers: int = 0
    #: publications naming at most this many minions by id also go to the
    #: exempt pool (``worker_pools:<pool>:max_targets``); 0: none
    exempt_pool_max_targets: int = 0
    #: publish big jobs in slices under one jid (``rate_limiting:slices``)
    slices: bool = False
    #: smallest slice (``slices:min_targets``); None: Salt's default
    slice_min_targets: int | None = None
    #: seconds of returns in flight the budget is sized for
    #: (``slices:backlog``); None: the budget is ``max_master_jobs``
    slice_backlog: float | None = None
    #: seconds a return may wait, which sizes the budget
    #: (``slices:target_delay``); None: Salt's default; 0: ``null``, a fixed
    #: budget of ``max_master_jobs``
    slice_target_delay: float | None = None
    #: minions a second slices go out to at most (``slices:max_rate``);
    #: None: no such bound
    slice_max_rate: float | None = None

    def __post_init__(self) -> None:
        if self.exempt_pool_max_targets and not self.exempt_pool_workers:
            raise ValueError("exempt_pool_max_targets needs an exempt pool")
        if not self.slices and (
            self.slice_min_targets is not None
            or self.slice_backlog is not None
            or self.slice_target_delay is not None
            or self.slice_max_rate is not None
        ):
            raise ValueError(
                "slice_min_targets, slice_backlog, slice_target_delay and "
                "slice_max_rate need slices=True"
            )

    def with_slices(
        self,
        min_targets: int,
        target_delay: float | None = None,
        max_rate: float | None = None,
    ) -> RateLimiting:
        """This limiter publishing big jobs in slices of at least
        ``min_targets`` minions; 0: every job to all its minions at once
        (what the benchmarks' ``--slice-min-targets`` means). The budget
        follows a wait of ``target_delay`` seconds (None: Salt's default; 0:
        a fixed budget, ``max_master_jobs``); slices go out to at most
        ``max_rate`` minions a second (None or 0: no such bound)."""
        if not min_targets:
            return replace(
                self,
                slices=False,
                slice_min_targets=None,
                slice_target_delay=None,
                slice_max_rate=None,
            )
        return replace(
            self,
            slices=True,
            slice_min_targets=min_targets,
            slice_target_delay=target_delay,
            slice_max_rate=max_rate or None,
        )

    def master_options(self, worker_threads: int = 4) -> dict[str, Any]:
        """``{"rate_limiting": {...}}``, to merge into the master config; with
        ``exempt_pool_workers``, also ``worker_pools``: ``worker_threads``
        workers for everything else and the exempt pool beside them."""
        settings: dict[str, Any] = {
            "criteria": self.criteria,
            "max_master_jobs": self.max_master_jobs,
            "max_minion_jobs": self.max_minion_jobs,
            "max_queue": self.max_queue,
            "maintenance_interval": self.maintenance_interval,
            "long_running": self.long_running,
        }
        if self.exempt is not None:
            settings["exempt"] = list(self.exempt)
        if self.exempt_max_targets:
            settings["exempt_max_targets"] = self.exempt_max_targets
        if self.slices:
            settings["slices"] = self.slices_option()
        options: dict[str, Any] = {"rate_limiting": settings}
        if self.exempt_pool_workers:
            exempt_pool: dict[str, Any] = {
                "worker_count": self.exempt_pool_workers,
                "functions": self.exempt_functions(),
            }
            if self.exempt_pool_max_targets:
                exempt_pool["max_targets"] = self.exempt_pool_max_targets
            options["worker_pools"] = {
                EXEMPT_POOL: exempt_pool,
                "default": {"worker_count": worker_threads, "commands": ["*"]},
            }
        return options

    def slices_option(self) -> dict[str, Any]:
        """``rate_limiting:slices`` (a mapping: Salt fills in the defaults)."""
        option: dict[str, Any] = {}
        if self.slice_min_targets is not None:
            option["min_targets"] = self.slice_min_targets
        if self.slice_backlog is not None:
            option["backlog"] = self.slice_backlog
        if self.slice_target_delay is not None:
            option["target_delay"] = self.slice_target_delay or None
        if self.slice_max_rate is not None:
            option["max_rate"] = self.slice_max_rate
        return option

    def describe_budget(self) -> str:
        """How the budget is sized, in a few words for a report."""
        if self.slice_backlog is not None:  # set only with slices
            return f"a budget of {self.slice_backlog:g} s of returns"
        delay: float | None = None
        default = salt_slice_defaults()["target_delay"]
        if self.slices:
            delay = (
                self.slice_target_delay
                if self.slice_target_delay is not None
                else default
            )
        rate = (
            f", slices to at most {self.slice_max_rate:g} minions a second (max_rate)"
            if self.slice_max_rate is not None
            else ""
        )
        if not delay:  # no slices, or slices with target_delay 0
            return f"a fixed budget of max_master_jobs ({self.max_master_jobs})" + rate
        return (
            f"a budget sized for returns waiting {delay:g} s (target_delay, "
            + ("Salt's default" if delay == default else f"Salt's is {default:g} s")
            + f"), max_master_jobs ({self.max_master_jobs}) its ceiling"
            + rate
        )

    def exempt_functions(self) -> list[str]:
        """The functions that bypass the queue, as the master resolves them."""
        import salt.config.rate_limiting as config  # the patched Salt

        listed = salt_defaults()["exempt"] if self.exempt is None else self.exempt
        return sorted(set(listed) | set(config.ALWAYS_EXEMPT))


@dataclass(frozen=True)
class LimiterState:
    """What a benchmark samples of the limiter once a second; -1 where the
    queue manager did not answer."""

    #: jobs waiting in the queue
    queued: int
    #: points in flight (``master_jobs``)
    points: int
    #: the points the limiter lets be in flight now: ``slices:budget``, or
    #: ``max_master_jobs`` without slices
    budget: int
    #: times a delay-sized budget was cut so far (0 without one)
    cuts: int = 0
    #: the wait the last budget decision saw, seconds (None: none yet)
    delay: float | None = None
    #: the run time (its command's fastest tenth) the last budget decision
    #: took away from each return's latency, seconds (None: none yet)
    run_time: float | None = None


#: :meth:`QueueProbe.state` when the queue manager did not answer
NO_ANSWER: Final = LimiterState(-1, -1, -1, -1)


class QueueProbe:
    """Questions to one master's queue manager (rate limiting must be on)."""

    def __init__(self, sock_dir: Path, timeout: float = 10.0) -> None:
        self.path = Path(sock_dir) / SOCKET_NAME
        self.timeout = timeout

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        import salt.ratelimit.ipc  # the patched Salt the harness installs

        reply: dict[str, Any] = salt.ratelimit.ipc.request_sync(
            str(self.path), message, self.timeout
        )
        if "error" in reply:
            raise RuntimeError(f"queue manager at {self.path}: {reply['error']}")
        return reply

    def status(self) -> dict[str, Any]:
        """What ``salt-run ratelimit.status`` shows: ``queued``,
        ``master_jobs``, ``minions_busy``, ``submitted``, ``outcomes``, ..."""
        return self._ask({"cmd": "status"})

    def state(self) -> LimiterState:
        """The queue, the points in flight and the budget now; :data:`NO_ANSWER`
        when the queue manager did not answer (a busy master is sampled, not
        waited for)."""
        try:
            status = self.status()
        except (OSError, RuntimeError):
            return NO_ANSWER
        slices = status.get("slices") or {}
        budget = slices.get("budget", status.get("max_master_jobs", 0))
        delay = slices.get("delay")
        run_time = slices.get("run_time")
        return LimiterState(
            queued=int(status.get("queued", 0)),
            points=int(status.get("master_jobs", 0)),
            budget=int(budget or 0),
            cuts=int(slices.get("cuts", 0) or 0),
            delay=None if delay is None else float(delay),
            run_time=None if run_time is None else float(run_time),
        )

    def queue(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The queued jobs, oldest first."""
        jobs: list[dict[str, Any]] = self._ask({"cmd": "queue", "limit": limit})["jobs"]
        return jobs

    def capacity(self, minions: list[str] | None = None) -> dict[str, int]:
        """``{minion: jobs it holds capacity for}``; every minion holding
        capacity unless ``minions`` names some."""
        message: dict[str, Any] = {"cmd": "capacity"}
        if minions is not None:
            message["minions"] = list(minions)
        held = self._ask(message)["minions"]
        return {minion: int(entry["jobs"]) for minion, entry in held.items()}

    def job(self, jid: str) -> dict[str, Any] | None:
        """The job's outcome record, or its place in the queue, or None."""
        found: dict[str, Any] | None = self._ask({"cmd": "job", "jid": str(jid)})["job"]
        return found


def job_event(tag: str) -> tuple[str, str] | None:
    """``(jid, outcome)`` of a ``salt/ratelimit/job/<jid>/<outcome>`` tag, with
    :data:`QUEUED` as an outcome too; None for any other tag.

    .. code-block:: python

        job_event("salt/ratelimit/job/20261122/published")  # ('20261122', 'published')
    """
    parts = tag.split("/")
    if len(parts) == 5 and parts[:3] == ["salt", "ratelimit", "job"]:
        return parts[3], parts[4]
    return None


def outcomes(events: list[Event]) -> dict[str, list[str]]:
    """``{jid: [outcome, ...]}`` from ``salt/ratelimit/job/<jid>/<outcome>``
    events, in the order they were fired (``queued`` left out)."""
    found: dict[str, list[str]] = {}
    for event in events:
        fired = job_event(event.tag)
        if fired is not None and fired[1] != QUEUED:
            found.setdefault(fired[0], []).append(fired[1])
    return found


def slice_event(tag: str) -> tuple[str, int] | None:
    """``(jid, slice number)`` of a ``salt/ratelimit/slice/<jid>/<n>`` tag; None
    for any other tag.

    .. code-block:: python

        slice_event("salt/ratelimit/slice/20261122/2")  # ('20261122', 2)
    """
    parts = tag.split("/")
    if len(parts) == 5 and parts[:3] == ["salt", "ratelimit", "slice"]:
        return parts[3], int(parts[4])
    return None


def listener_outcomes(listener: EventListener, since: int = 0) -> dict[str, list[str]]:
    """:func:`outcomes` of what ``listener`` collected after ``since``."""
    return outcomes(listener.matching(JOB_EVENTS, since=since))


def outcome_problems(
    found: dict[str, list[str]], jids: list[str] | set[str]
) -> dict[str, list[str]]:
    """The jobs among ``jids`` that did not end in exactly one outcome
    (``[]`` for none yet); empty when every job is accounted for."""
    return {
        jid: found.get(jid, [])
        for jid in jids
        if len(found.get(jid, [])) != 1 or found[jid][0] not in OUTCOMES
    }
