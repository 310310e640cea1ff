"""What the storm is, and how its jobs, returns and samples are counted.

The storm's workload (:func:`storm_jobs`), the presence pings' targets
(:func:`ping_order`, :func:`ping_targets`), the records the threads of a run
produce (:class:`Sample`, :class:`Ping`), the jobs as the event bus shows them
(:class:`JobBook`, :class:`JobTrack`) and what one variant measured
(:class:`VariantResult`). Nothing here starts anything: it is all tested with
made-up events.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

from benchmarks import report
from benchmarks.storm.consumer import ConsumerRun
from harness.consumer import ENGINE_NAME as CONSUMER_ENGINE
from harness.events import ENGINE_NAME as FORWARDER_ENGINE
from harness.events import Event
from harness.ratelimit import (
    PUBLISHED_OUTCOMES,
    QUEUED,
    RateLimiting,
    job_event,
    slice_event,
)

PING_TARGETS: Final = 10
PING_TIMEOUT: Final = 10  # seconds a presence ping waits for its returns
PING_MAX_OUTSTANDING: Final = 10  # pings in flight at once; a tick beyond is skipped
SLEEP_LENGTHS: Final = (1, 2, 3, 5)
#: the functions of the storm's jobs (:func:`storm_jobs`); pings are test.ping
STORM_FUNCTIONS: Final = frozenset({"test.sleep", "state.apply"})
STATE_DURATION: Final = (1.0, 5.0)
#: before any function runs: a real minion forks a process per job
START_JITTER: Final = (0.05, 0.5)


def beside_master(role: str) -> bool:
    """Whether a process role (:func:`benchmarks.proctree.role`) runs on the
    master without being its own work: the event consumer engine, which
    stands for a system beside the master (SUSE Manager), and the storm's
    event forwarder (``saltfleet_events``), the benchmark's instrument, which
    no production master runs."""
    return CONSUMER_ENGINE in role or FORWARDER_ENGINE in role


def master_roles(roles: dict[str, float]) -> dict[str, float]:
    """PSS or CPU per role without the processes :func:`beside_master`."""
    return {name: value for name, value in roles.items() if not beside_master(name)}


#: the outcomes after which a job's returns are expected
PUBLISHED: Final = PUBLISHED_OUTCOMES
#: the outcomes after which a job never gets returns
DROPPED: Final = ("expired", "rejected")


@dataclass
class Sample:
    """What the sampler saw at ``t`` seconds into a run: master PSS, bus delay,
    jobs queued and in flight, return rates."""

    t: float
    master_pss_mb: float
    bus_delay_s: float | None
    queued: int
    in_flight: int
    returns_per_s: float
    minion_returns_per_s: float
    #: the queue manager's ledger (limiter on): points held in total, and
    #: the most one minion holds (sampled every CAPACITY_EVERY seconds)
    master_points: int = 0
    max_minion_points: int = 0
    #: the points the limiter lets be in flight now (its budget, which
    #: ``rate_limiting:slices:target_delay`` sizes from the wait of returns)
    budget: int = 0
    #: what the budget's last decision saw (limiter on, a delay-sized
    #: budget): the wait of the fastest tenth of the last seconds' returns
    #: past their command's run time, and that run time, seconds; the cuts
    #: so far
    limiter_delay_s: float | None = None
    limiter_run_time_s: float | None = None
    cuts: int = 0
    #: master PSS (MiB) per process role (proctree.role)
    pss_by_role: dict[str, float] = field(default_factory=dict)
    #: returns of jobs whose submission failed, per second (the bus's; not
    #: in returns_per_s)
    unbooked_per_s: float = 0.0


@dataclass
class Ping:
    """One presence ping, sent ``t`` seconds into a run, and how it went:
    its returns as the master's bus showed them (:func:`answers_from_bus`),
    not as a client read them."""

    t: float
    #: until every target's return was on the bus, or the timeout
    seconds: float
    #: the targets whose return reached the bus within PING_TIMEOUT
    returned: int
    #: until the master answered the publish with the jid, and until the
    #: first return reached the bus; None when that never happened
    publish_s: float | None = None
    first_s: float | None = None
    #: the minions pinged (fewer than PING_TARGETS in a smaller fleet)
    targets: int = PING_TARGETS
    #: the ping's jid ("" until the master answered the publish) and when
    #: it was sent, on the wall clock
    jid: str = ""
    began_at: float = 0.0
    #: until the last target's return reached the bus, however late; None
    #: if not every target's had when the answers were read (after the
    #: last ping's timeout)
    bus_s: float | None = None

    @property
    def answered(self) -> bool:
        """Whether every target's return reached the master's bus within
        PING_TIMEOUT: what a presence check needs, and what the master and
        the minions did with the ping."""
        return self.returned >= self.targets and self.seconds <= PING_TIMEOUT


@dataclass
class JobTrack:
    """One storm job as the bus shows it: accepted, published, its outcome and
    the minions that returned.

    A job the limiter publishes in slices (``rate_limiting:slices``) goes
    out to part of its targets at a time, and its outcome comes with its
    last slice: until then it owes the returns of the slices that went out
    (``sliced``), and their minions return meanwhile."""

    jid: str
    fun: str
    targets: int
    accepted: float
    published: float | None = None
    excluded: int = 0
    outcome: str | None = None
    returned: set[str] = field(default_factory=set)
    completed: float | None = None
    #: returns of a minion after its first: a retry of a try that timed out
    #: but reached the master (it fires every copy on the bus)
    duplicates: int = 0
    #: the minions the job's slices went out to so far (each slice's
    #: ``minions``, its excluded left out)
    sliced: set[str] = field(default_factory=set)

    @property
    def fully_published(self) -> bool:
        """Whether the job went out to every target it will ever go to: all
        at once, or its last slice (its outcome came)."""
        if self.sliced and self.outcome is None:
            return False
        return self.published is not None

    @property
    def expected(self) -> int:
        """Returns to expect: the targets not excluded once fully published,
        the minions of the slices out so far before that, none before any."""
        if self.fully_published:
            return self.targets - self.excluded
        return len(self.sliced)


@dataclass
class VariantResult:
    """What one variant of the storm measured: submissions, outcomes, returns,
    master CPU, samples and pings."""

    name: str
    limiter: RateLimiting | None
    #: which run of the storm this is, from 1 (every variant runs once per run)
    run: int = 1
    submitted: int = 0
    accepted: int = 0
    rejected: int = 0
    submit_errors: list[str] = field(default_factory=list)
    submit_s: float = 0.0
    #: from the first submission until the run ended: with its last expected
    #: return, at the cut, or, for a run that ended when no return had come
    #: for a while, at its last return (that wait not counted)
    storm_s: float = 0.0
    ended_by: str = ""
    outcomes: Counter[str] = field(default_factory=Counter)
    expected_returns: int = 0
    received_bus: int = 0
    received_cache: int = 0
    #: targets of jobs still going out in slices at the end that no slice
    #: reached yet: owing no return, and not counted as expected
    targets_unpublished: int = 0
    completed_jobs: int = 0
    #: jobs whose returns in the job cache fall short of those expected:
    #: ``{jid: [in the job cache, expected, seen on the bus]}``, so a loss
    #: names its jobs
    short_in_cache: dict[str, list[int]] = field(default_factory=dict)
    #: jobs published though their submission failed (JobBook.unbooked), and
    #: their returns seen on the bus: run, and told to nobody
    unbooked_jobs: int = 0
    unbooked_returns: int = 0
    peak_minion_jobs: int = 0
    #: duplicate returns on the master's bus (see JobTrack.duplicates)
    duplicate_returns: int = 0
    #: the fleet's own counts (evil_minions.returns): tries after the first,
    #: jobs that gave up waiting, returns whose every try failed
    minion_return_retries: int = 0
    minion_returns_given_up: int = 0
    minion_return_errors: int = 0
    #: the master's CPU seconds over the storm, the processes
    #: :func:`beside_master` (the event consumer, the event forwarder) apart
    master_cpu_s: float = 0.0
    #: CPU seconds over the storm per process role of the master's tree
    #: (benchmarks.proctree.role), those beside the master among them
    master_cpu_by_role: dict[str, float] = field(default_factory=dict)
    #: the storm's own process over the storm (pinger, submitters, accounting)
    driver_cpu_s: float = 0.0
    #: the simulated fleet's processes over the same window as the master's
    #: CPU (the storm and its quiet end): on this box they share the
    #: master's cores, in a real fleet each minion has its own; 0: not
    #: taken (a result written before it was)
    fleet_cpu_s: float = 0.0
    #: CPU seconds the whole box was busy over that window (every process,
    #: the master's, PostgreSQL's and the kernel's included), and those it
    #: had (busy, idle and I/O wait, every core): how near it was its limit
    box_busy_s: float = 0.0
    box_capacity_s: float = 0.0
    #: :func:`benchmarks.hostspeed.cpu_probe_ms` on the idle box before the
    #: variant's stack started and after it stopped; 0: not taken (a result
    #: file written before the probe, read again by hand)
    cpu_probe_before_ms: float = 0.0
    cpu_probe_after_ms: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    pings: list[Ping] = field(default_factory=list)
    pings_skipped: int = 0
    #: the event consumer on this variant's master; None: it had none
    consumer: ConsumerRun | None = None
    #: when the storm started, UTC (``2026-11-27 21:14``): the runs of a
    #: resumed storm come from more than one sitting
    started: str = ""

    @property
    def label(self) -> str:
        """The variant and its run, as a report's row names them."""
        return f"{self.name} #{self.run}"

    @property
    def cut(self) -> bool:
        """Whether the variant was cut short by ``--max-wait``."""
        return self.ended_by.startswith("max wait")

    @property
    def took_fewer_jobs(self) -> bool:
        """Whether the master took fewer jobs than were submitted: a smaller
        storm than the other variants' (refused, or the submission failed)."""
        return self.accepted < self.submitted

    @property
    def returns_handled(self) -> int:
        """The storm's returns the master handled: those in the job cache,
        and those of jobs run though their submission failed (work the
        master did that no submitter knew of), each minion's once."""
        return self.received_cache + self.unbooked_returns

    @property
    def missing_returns(self) -> int:
        """Expected returns the job cache does not have: lost if the storm
        ran to its end, possibly still on their way if it was cut."""
        return max(0, self.expected_returns - self.received_cache)

    @property
    def max_minion_points(self) -> int:
        """The most points one minion held in any sample."""
        return max((s.max_minion_points for s in self.samples), default=0)

    @property
    def ping_ticks(self) -> int:
        """Presence ping ticks: pings sent and ticks skipped (a skipped tick
        is a ping that could not even be sent, so a failure)."""
        return len(self.pings) + self.pings_skipped

    @property
    def answered_pings(self) -> list[Ping]:
        """The presence pings every target answered within PING_TIMEOUT."""
        return [p for p in self.pings if p.answered]

    @property
    def ping_answered_share(self) -> float | None:
        """Answered pings per tick; None without a tick."""
        if not self.ping_ticks:
            return None
        return len(self.answered_pings) / self.ping_ticks

    def answered_ping_percentile(self, q: float) -> float | None:
        """The ``q`` percentile of the answered pings' times (a ping that
        timed out has no time of its own, only the timeout); None without one."""
        seconds = [p.seconds for p in self.answered_pings]
        return report.percentile(seconds, q) if seconds else None

    @property
    def pings_incomplete(self) -> int:
        """Presence pings that did not get every target's return in time."""
        return sum(1 for p in self.pings if p.returned < p.targets)

    @property
    def peak_pss_mb(self) -> float:
        """The highest master PSS sampled, MiB."""
        return max((s.master_pss_mb for s in self.samples), default=0.0)

    def tally(self, jobs: Iterable[JobTrack], cache: Mapping[str, int]) -> None:
        """Add the end counts of ``jobs`` and the returns the job cache holds
        (``{jid: returns}``, see :func:`job_cache_returns`)."""
        for track in jobs:
            if track.outcome:
                self.outcomes[track.outcome] += 1
            self.expected_returns += track.expected
            if track.sliced and not track.fully_published:
                self.targets_unpublished += track.targets - track.expected
            self.received_bus += len(track.returned)
            self.duplicate_returns += track.duplicates
            self.completed_jobs += track.completed is not None
            held = cache.get(track.jid, 0)
            if held < track.expected:
                self.short_in_cache[track.jid] = [
                    held,
                    track.expected,
                    len(track.returned),
                ]
        self.received_cache = sum(cache.values())


def whole(results: Iterable[VariantResult], variant: str) -> list[VariantResult]:
    """The runs of ``variant`` that ran to their end: a run cut short by
    ``--max-wait`` measured the cap, not what the storm needed, so no
    headline counts it."""
    return [r for r in results if r.name == variant and not r.cut]


def whole_runs(
    results: Iterable[VariantResult],
    variant: str,
    value: Callable[[VariantResult], float | None],
) -> list[tuple[int, float]]:
    """``(run, value)`` of each of :func:`whole` that measured the value."""
    return [
        (r.run, v) for r in whole(results, variant) for v in [value(r)] if v is not None
    ]


class _JobEvent(NamedTuple):
    """A bus event about one job: a return (``minion``), a rate-limit
    outcome (``outcome``, ``queued`` included) or a slice that went out
    (``outcome`` :data:`SLICE`)."""

    jid: str
    minion: str | None
    outcome: str | None
    event: Any  # harness.events.Event


#: the ``outcome`` of a :class:`_JobEvent` for ``salt/ratelimit/slice/<jid>/<n>``
SLICE: Final = "slice"


def job_return(tag: str) -> tuple[str, str] | None:
    """``(jid, minion)`` of a return's tag, ``salt/job/<jid>/ret/<minion>``;
    None for any other tag."""
    parts = tag.split("/", 4)
    if len(parts) == 5 and parts[:2] == ["salt", "job"] and parts[3] == "ret":
        return parts[2], parts[4]
    return None


def _job_event(event: Any) -> _JobEvent | None:
    returned = job_return(event.tag)
    if returned is not None:
        return _JobEvent(returned[0], returned[1], None, event)
    fired = job_event(event.tag)
    if fired is not None:
        return _JobEvent(fired[0], None, fired[1], event)
    part = slice_event(event.tag)
    if part is not None:
        return _JobEvent(part[0], None, SLICE, event)
    return None


def _storm_return(item: _JobEvent) -> bool:
    """Whether ``item`` is a return of one of the storm's functions."""
    data = item.event.data
    return (
        item.minion is not None
        and isinstance(data, dict)
        and data.get("fun") in STORM_FUNCTIONS
    )


def _stamp_age(event: Event) -> float | None:
    fired = event.fired_at
    return None if fired is None else max(0.0, event.received - fired)


class JobBook:
    """The storm's jobs as the bus shows them: outcomes and returns.

    ``lock`` guards the book; a run shares it with everything else its
    threads write, so one lock guards all of a run's state."""

    def __init__(self, lock: threading.RLock | None = None) -> None:
        self.lock = lock or threading.RLock()
        self.jobs: dict[str, JobTrack] = {}
        self.limited = False
        self._pending: dict[str, list[_JobEvent]] = {}  # seen before the job
        #: storm-function return events (every copy) that came under a jid
        #: not booked when they came: of jobs run though their submission
        #: failed (see unbooked); the sampler's unbooked_per_s
        self.unbooked_seen = 0
        #: when the last new return of a booked job came (Event.received's
        #: clock); None before the first
        self.last_return: float | None = None

    def add(self, track: JobTrack) -> None:
        """Book an accepted job (published at once without a limiter) and apply
        the events that came before it."""
        with self.lock:
            if not self.limited:
                track.published = track.accepted
            self.jobs[track.jid] = track
            for item in self._pending.pop(track.jid, []):
                self._apply(item)

    def feed(self, events: list[Any]) -> tuple[int, list[float]]:
        """Account ``events``; return how many storm returns and their ages."""
        returns = 0
        ages: list[float] = []
        with self.lock:
            for event in events:
                item = _job_event(event)
                if item is None:
                    continue
                if item.minion is None:
                    self._apply(item)
                    continue
                age = _stamp_age(event)
                if age is not None:
                    ages.append(age)
                # a return before its job is booked waits in _pending
                returns += self._apply(item)
        return returns, ages

    def _apply(self, item: _JobEvent) -> int:
        track = self.jobs.get(item.jid)
        if track is None:
            if item.outcome is not None or item.jid.isdigit():
                self._pending.setdefault(item.jid, []).append(item)
                self.unbooked_seen += _storm_return(item)
            return 0
        received = item.event.received
        if item.minion is not None:
            if item.minion in track.returned:
                track.duplicates += 1
                return 0
            track.returned.add(item.minion)
            self.last_return = max(received, self.last_return or received)
            if track.fully_published and len(track.returned) >= track.expected:
                track.completed = received
            return 1
        if item.outcome == QUEUED:
            return 0
        if item.outcome == SLICE:
            track.sliced.update(item.event.data.get("minions") or [])
            if track.published is None:
                track.published = received
            return 0
        track.outcome = item.outcome
        if item.outcome in PUBLISHED:
            if track.published is None:
                track.published = received
            # a sliced job's excluded include the targets still queued
            # when its caller stopped waiting (its ``expired``)
            track.excluded = len(item.event.data.get("excluded") or [])
            if len(track.returned) >= track.expected:
                track.completed = received
        return 0

    def unbooked(self) -> dict[str, set[str]]:
        """Returns of storm functions under jids no submitter was given:
        ``{jid: minions}``. A submission that timed out can still be
        published, when the master gets to the request after its client
        gave up; its job runs, and nobody waits for it."""
        found: dict[str, set[str]] = {}
        with self.lock:
            for jid, items in self._pending.items():
                for item in items:
                    if item.minion is not None and _storm_return(item):
                        found.setdefault(jid, set()).add(item.minion)
        return found

    def in_flight(self) -> int:
        """Jobs published and not yet completed."""
        with self.lock:
            return sum(
                1
                for t in self.jobs.values()
                if t.published is not None and t.completed is None
            )

    def all_settled(self) -> bool:
        """Whether every job was published (its last slice too), expired or
        rejected."""
        with self.lock:
            return all(
                t.fully_published or t.outcome in DROPPED for t in self.jobs.values()
            )

    def expected_total(self) -> int:
        """Returns expected over all jobs booked."""
        with self.lock:
            return sum(t.expected for t in self.jobs.values())

    def received_total(self) -> int:
        """Returns received over all jobs booked, one per minion and job."""
        with self.lock:
            return sum(len(t.returned) for t in self.jobs.values())


def job_cache_returns(
    cachedir: Path, jids: set[str], hash_type: str = "sha256"
) -> dict[str, int]:
    """Returns per jid in the master's ``local_cache`` job cache, found where
    ``local_cache.get_jid`` looks (the directory the jid hashes to), as
    ``salt-run jobs.lookup_jid`` would show them.

    Not by reading each directory's ``jid`` file: the master rewrites that
    file (truncating it first) for every return it stores, duplicates
    included, so a job still getting returns could read as empty and be
    counted as lost with all its returns in place."""
    from salt.utils.jid import jid_dir

    found: dict[str, int] = {}
    for jid in jids:
        job = Path(jid_dir(jid, str(cachedir / "jobs"), hash_type))
        if job.is_dir():
            found[jid] = sum(1 for _ in job.glob("*/return.p"))
    return found


def first_returns(
    events: Iterable[Event],
    jids: Container[str],
    into: dict[str, dict[str, float]] | None = None,
) -> dict[str, dict[str, float]]:
    """When each minion's first return of each of ``jids`` reached the
    master's bus (:attr:`Event.fired_at_or_received`, the earliest of a
    minion's returns: a retry it sent later is not its answer), by jid and
    minion; added to ``into`` when given, so events read in batches add up."""
    arrived: dict[str, dict[str, float]] = {} if into is None else into
    for event in events:
        returned = job_return(event.tag)
        if returned is not None and returned[0] in jids:
            jid, minion = returned
            at = event.fired_at_or_received
            mine = arrived.setdefault(jid, {})
            mine[minion] = min(at, mine.get(minion, at))
    return arrived


def answers_from_bus(pings: Iterable[Ping], events: Iterable[Event]) -> None:
    """Set each published ping's answers from ``events``: when the master
    fired the first return of each target (``salt/job/<jid>/ret/<id>``)
    onto its bus (:func:`first_returns`). A ping's :attr:`Ping.returned`
    counts the targets in time, :attr:`Ping.seconds` is until the last of
    them or PING_TIMEOUT, :attr:`Ping.bus_s` until the last target's return
    however late."""
    by_jid = {ping.jid: ping for ping in pings if ping.jid}
    arrived = first_returns(events, by_jid)
    for jid, ping in by_jid.items():
        seconds = sorted(at - ping.began_at for at in arrived.get(jid, {}).values())
        in_time = [s for s in seconds if s <= PING_TIMEOUT]
        ping.returned = len(in_time)
        ping.first_s = seconds[0] if seconds else None
        ping.seconds = in_time[-1] if len(in_time) >= ping.targets else PING_TIMEOUT
        ping.bus_s = seconds[-1] if len(seconds) >= ping.targets else None


def ping_order(ids: Sequence[str], seed: int = 11) -> list[str]:
    """The fleet in the fixed shuffled order the presence pings go through."""
    order = list(ids)
    random.Random(seed).shuffle(order)
    return order


def ping_targets(order: Sequence[str], tick: int) -> list[str]:
    """The minions presence ping number ``tick`` goes to: the next
    PING_TARGETS of ``order``, wrapping around, so consecutive pings go to
    different minions and every minion is pinged as often as any other."""
    if not order:
        return []
    count = min(PING_TARGETS, len(order))
    start = tick * count
    return [order[(start + i) % len(order)] for i in range(count)]


def storm_jobs(count: int, seed: int = 7) -> list[tuple[str, list[Any]]]:
    """The storm: ``test.sleep`` of a few seconds and ``state.apply``, mixed."""
    rng = random.Random(seed)
    jobs: list[tuple[str, list[Any]]] = []
    for i in range(count):
        if i % 2:
            jobs.append(("state.apply", []))
        else:
            jobs.append(("test.sleep", [rng.choice(SLEEP_LENGTHS)]))
    return jobs
