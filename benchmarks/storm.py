"""Storm benchmark: a burst of jobs to every minion, rate limiting off vs on.

One run, two masters started the same way, one after the other: ``off``
(no ``rate_limiting``) and ``on`` (``rate_limiting`` with Salt's defaults:
capacity criteria, 2000 master points, 10 jobs per minion). Each gets the
same fleet of simulated minions, which run at most ``max_minion_jobs`` jobs
at once (more wait on the minion) and count, from their own side, the most
jobs each ever had in flight.

During the storm, once a second:

- master RSS, summed over every process of the master;
- event-bus delay: how old the job returns are when a bus subscriber (the
  harness's forwarding engine) gets them; a bus with a backlog delivers old
  events;
- jobs queued (the queue manager's own count) and in flight (published,
  returns still missing), returns per second seen on the bus;
- capacity held, from the queue manager's ledger: points in total (returns
  the master waits for) and the most points one minion holds;
- presence pings: ``test.ping`` to 10 minions every second, each from its
  own client, timed until all 10 returned. Every tick pings 10 other
  minions, in a fixed shuffled order through the whole fleet: a minion sends
  its requests to the master one at a time over its one request channel, so
  pinging the same 10 minions every second would queue their own job
  returns behind their ping returns and measure that queue, not the master.

At the end: jobs accepted / rejected / expired / published, returns
expected (targets minus excluded minions) against received (the master's
job cache, the ground truth), the highest number of jobs one minion had in
flight.

Plus a micro-benchmark of one decision of the shipped criteria module,
loaded through Salt's loader.
"""

from __future__ import annotations

import copy
import datetime
import inspect
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import proctree, report
from harness.ratelimit import PUBLISHED_OUTCOMES, QueueProbe, RateLimiting

#: goals with the limiter on
GOAL_PING_P99_S = 2.0
GOAL_DECIDE_US = 50.0

#: MWorkers of the master's default pool (the exempt pool, if any, adds its own)
WORKER_THREADS = 4

PING_TARGETS = 10
RSS_ROLES_SHOWN = 6  # master processes per variant in the memory table
PING_TIMEOUT = 10  # seconds a presence ping waits for its returns
PING_MAX_OUTSTANDING = 10  # pings in flight at once; a tick beyond is skipped
#: ask the queue manager for every minion's points every this many samples
CAPACITY_EVERY = 5
#: after the fleet is idle, how long no new return may arrive before the end
QUIET_S = 60.0
SLEEP_LENGTHS = (1, 2, 3, 5)
STATE_DURATION = (1.0, 5.0)
#: before any function runs: a real minion forks a process per job
START_JITTER = (0.05, 0.5)


@dataclass
class Sample:
    t: float
    master_rss_mb: float
    bus_delay_s: float | None
    queued: int
    in_flight: int
    returns_per_s: float
    minion_returns_per_s: float
    #: the queue manager's ledger (limiter on): points held in total, and
    #: the most one minion holds (sampled every CAPACITY_EVERY seconds)
    master_points: int = 0
    max_minion_points: int = 0
    #: master RSS (MiB) per process role (proctree.role)
    rss_by_role: dict[str, float] = field(default_factory=dict)


@dataclass
class Ping:
    t: float
    seconds: float  # until every target returned (or the timeout)
    returned: int
    #: until the master answered the publish with the jid, and until the
    #: first return arrived; None when that never happened
    publish_s: float | None = None
    first_s: float | None = None


@dataclass
class JobTrack:
    jid: str
    fun: str
    targets: int
    accepted: float
    published: float | None = None
    excluded: int = 0
    outcome: str | None = None
    returned: set[str] = field(default_factory=set)
    completed: float | None = None

    @property
    def expected(self) -> int:
        return self.targets - self.excluded if self.published is not None else 0


@dataclass
class VariantResult:
    name: str
    limiter: RateLimiting | None
    submitted: int = 0
    accepted: int = 0
    rejected: int = 0
    submit_errors: list[str] = field(default_factory=list)
    submit_s: float = 0.0
    storm_s: float = 0.0
    ended_by: str = ""
    outcomes: Counter[str] = field(default_factory=Counter)
    expected_returns: int = 0
    received_bus: int = 0
    received_cache: int = 0
    completed_jobs: int = 0
    peak_minion_jobs: int = 0
    minion_return_errors: int = 0
    master_cpu_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    pings: list[Ping] = field(default_factory=list)
    pings_skipped: int = 0

    @property
    def cut(self) -> bool:
        """Whether the variant was cut short by ``--max-wait``."""
        return self.ended_by.startswith("max wait")

    @property
    def missing_returns(self) -> int:
        """Expected returns the job cache does not have: lost if the storm
        ran to its end, possibly still on their way if it was cut."""
        return max(0, self.expected_returns - self.received_cache)

    @property
    def max_minion_points(self) -> int:
        return max((s.max_minion_points for s in self.samples), default=0)

    @property
    def ping_p99(self) -> float:
        return report.percentile([p.seconds for p in self.pings], 99)

    @property
    def pings_incomplete(self) -> int:
        return sum(1 for p in self.pings if p.returned < PING_TARGETS)

    @property
    def peak_rss_mb(self) -> float:
        return max((s.master_rss_mb for s in self.samples), default=0.0)


def _stamp_age(event: Any) -> float | None:
    stamp = event.data.get("_stamp")
    if not isinstance(stamp, str):
        return None
    try:
        fired = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if fired.tzinfo is None:
        fired = fired.replace(tzinfo=datetime.UTC)
    return max(0.0, float(event.received) - fired.timestamp())


class JobBook:
    """The storm's jobs as the bus shows them: outcomes and returns."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[str, JobTrack] = {}
        self.limited = False
        self._pending: dict[str, list[Any]] = {}  # events seen before the job

    def add(self, track: JobTrack) -> None:
        with self.lock:
            if not self.limited:
                track.published = track.accepted
            self.jobs[track.jid] = track
            for event in self._pending.pop(track.jid, []):
                self._apply(event)

    def feed(self, events: list[Any]) -> tuple[int, list[float]]:
        """Account ``events``; return how many storm returns and their ages."""
        returns = 0
        ages: list[float] = []
        with self.lock:
            for event in events:
                parts = event.tag.split("/")
                if (
                    len(parts) == 5
                    and parts[:2] == ["salt", "job"]
                    and parts[3] == "ret"
                ):
                    age = _stamp_age(event)
                    if age is not None:
                        ages.append(age)
                    if parts[2] in self.jobs or parts[2] in self._pending:
                        returns += self._apply(event)
                    continue
                if len(parts) == 5 and parts[:3] == ["salt", "ratelimit", "job"]:
                    self._apply(event)
        return returns, ages

    def _apply(self, event: Any) -> int:
        parts = event.tag.split("/")
        jid = parts[2] if parts[1] == "job" else parts[3]
        track = self.jobs.get(jid)
        if track is None:
            if parts[1] == "ratelimit" or jid.isdigit():
                self._pending.setdefault(jid, []).append(event)
            return 0
        if parts[1] == "job":
            minion = parts[4]
            if minion in track.returned:
                return 0
            track.returned.add(minion)
            if track.published is not None and len(track.returned) >= track.expected:
                track.completed = event.received
            return 1
        outcome = parts[4]
        if outcome == "queued":
            return 0
        track.outcome = outcome
        if outcome in PUBLISHED_OUTCOMES:
            track.published = event.received
            track.excluded = len(event.data.get("excluded") or [])
            if len(track.returned) >= track.expected:
                track.completed = event.received
        return 0

    def in_flight(self) -> int:
        with self.lock:
            return sum(
                1
                for t in self.jobs.values()
                if t.published is not None and t.completed is None
            )

    def all_settled(self) -> bool:
        """Whether every job was published, expired or rejected."""
        with self.lock:
            return all(
                t.published is not None or t.outcome in ("expired", "rejected")
                for t in self.jobs.values()
            )

    def expected_total(self) -> int:
        with self.lock:
            return sum(t.expected for t in self.jobs.values())

    def received_total(self) -> int:
        with self.lock:
            return sum(len(t.returned) for t in self.jobs.values())


def job_cache_returns(cachedir: Path, jids: set[str]) -> dict[str, int]:
    """Returns per jid in the master's ``local_cache`` job cache."""
    found: dict[str, int] = {}
    for jid_file in (cachedir / "jobs").glob("*/*/jid"):
        try:
            jid = jid_file.read_text().strip()
        except OSError:
            continue
        if jid in jids:
            found[jid] = sum(1 for _ in jid_file.parent.glob("*/return.p"))
    return found


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


def run_variant(
    name: str,
    limiter: RateLimiting | None,
    *,
    minions: int,
    jobs: int,
    processes: int,
    submitters: int,
    max_wait: float,
    workdir: Path,
    keys_dir: Path,
) -> VariantResult:
    import salt.exceptions

    from evil_minions.config import (
        DEFAULT_EXEMPT_FUNCTIONS,
        LatencySpec,
        TimingModel,
    )
    from harness.stack import Stack, StackSettings

    capacity = (limiter or RateLimiting()).max_minion_jobs
    result = VariantResult(name, limiter)
    settings = StackSettings(
        root=workdir / f"stack-{name}",
        real_minion=False,
        simulated_minions=minions,
        simulated_keys_dir=keys_dir,
        simulated_config={
            "processes": processes,
            "startup_pillar": False,
            "timing": TimingModel(
                default_latency=LatencySpec(*START_JITTER),
                state_duration=LatencySpec(*STATE_DURATION),
                max_concurrent_jobs=capacity,
                # pings never wait on the minion: they measure the master
                exempt_functions=DEFAULT_EXEMPT_FUNCTIONS | {"test.ping"},
            ),
        },
        master_opts=limiter.master_options(WORKER_THREADS) if limiter else {},
        worker_threads=WORKER_THREADS,
    )
    book = JobBook()
    book.limited = limiter is not None
    with Stack(settings) as stack:
        assert stack.master is not None and stack.listener is not None
        assert stack.fleet is not None
        master_pid = stack.master.process.pid
        listener = stack.listener
        probe = QueueProbe(stack.master.settings.root / "run" / "master")
        ids = list(stack.fleet.ids)
        order = ping_order(ids)
        # warm up the master's workers and caches, not counted
        stack.cmd("*", "test.ping", timeout=120)
        cpu_before = proctree.cpu_seconds(master_pid)
        stop = threading.Event()
        started = time.monotonic()
        position = listener.mark()

        def fleet_status() -> dict[str, Any]:
            return stack.fleet.status() or {}

        def sampler() -> None:
            nonlocal position
            last = time.monotonic()
            last_sent = int(fleet_status().get("returns_sent") or 0)
            max_points = 0
            while not stop.wait(1.0):
                events, position = listener.since(position)
                returns, ages = book.feed(events)
                now = time.monotonic()
                sent = int(fleet_status().get("returns_sent") or 0)
                queued, points = _limiter_state(probe) if limiter else (0, 0)
                if limiter is not None and len(result.samples) % CAPACITY_EVERY == 0:
                    max_points = _max_minion_points(probe, max_points)
                roles = proctree.rss_by_role(master_pid)
                result.samples.append(
                    Sample(
                        t=now - started,
                        master_rss_mb=sum(roles.values()),
                        rss_by_role=roles,
                        bus_delay_s=report.median(ages) if ages else None,
                        queued=queued,
                        in_flight=book.in_flight(),
                        returns_per_s=returns / (now - last),
                        minion_returns_per_s=(sent - last_sent) / (now - last),
                        master_points=points,
                        max_minion_points=max_points,
                    )
                )
                last, last_sent = now, sent

        def one_ping(at: float, targets: list[str]) -> None:
            began = time.monotonic()
            ping = Ping(at, 0.0, 0)
            try:
                with stack.client() as client:
                    for item in client.cmd_iter(
                        targets,
                        "test.ping",
                        tgt_type="list",
                        timeout=PING_TIMEOUT,
                        yield_pub_data=True,
                    ):
                        if item and "jid" in item and "minions" in item:
                            ping.publish_s = time.monotonic() - began
                            continue
                        if ping.first_s is None:
                            ping.first_s = time.monotonic() - began
                        ping.returned += len(item or {})
            except Exception:  # pylint: disable=broad-except
                pass
            ping.seconds = time.monotonic() - began
            result.pings.append(ping)

        def pinger(pool: ThreadPoolExecutor) -> None:
            outstanding: list[Any] = []
            tick = 0
            while not stop.wait(1.0):
                outstanding = [f for f in outstanding if not f.done()]
                if len(outstanding) >= PING_MAX_OUTSTANDING:
                    result.pings_skipped += 1
                    continue
                targets = ping_targets(order, tick)
                tick += 1
                outstanding.append(
                    pool.submit(one_ping, time.monotonic() - started, targets)
                )

        def submit(chunk: list[tuple[str, list[Any]]]) -> None:
            with stack.client() as client:
                for fun, arg in chunk:
                    accepted = time.time()  # the clock of Event.received
                    try:
                        pub = client.run_job("*", fun, arg)
                    except salt.exceptions.SaltMasterOverloadedError:
                        with book.lock:
                            result.rejected += 1
                        continue
                    except Exception as exc:  # pylint: disable=broad-except
                        result.submit_errors.append(f"{fun}: {exc}")
                        continue
                    if not pub or not pub.get("jid"):
                        result.submit_errors.append(f"{fun}: no jid ({pub!r})")
                        continue
                    book.add(
                        JobTrack(
                            str(pub["jid"]),
                            fun,
                            len(pub.get("minions") or []),
                            accepted,
                        )
                    )

        storm = storm_jobs(jobs)
        result.submitted = len(storm)
        with ThreadPoolExecutor(PING_MAX_OUTSTANDING) as ping_pool:
            threads = [
                threading.Thread(target=sampler, name="storm-sampler", daemon=True),
                threading.Thread(
                    target=pinger, args=(ping_pool,), name="storm-pinger", daemon=True
                ),
            ]
            for thread in threads:
                thread.start()
            print(f"  {name}: submitting {len(storm)} jobs to '*'", flush=True)
            chunks = [storm[i::submitters] for i in range(submitters)]
            with ThreadPoolExecutor(submitters) as pool:
                list(pool.map(submit, chunks))
            result.submit_s = time.monotonic() - started
            result.accepted = len(book.jobs)
            result.ended_by = _wait_for_the_end(
                book, stack, limiter, probe, max_wait, result, started
            )
            result.storm_s = time.monotonic() - started
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
        result.master_cpu_s = proctree.cpu_seconds(master_pid) - cpu_before
        status = stack.fleet.status() or {}
        result.peak_minion_jobs = int(status.get("peak_minion_jobs") or 0)
        result.minion_return_errors = int(status.get("return_errors") or 0)
        jids = set(book.jobs)
        cache = job_cache_returns(
            Path(stack.master.settings.root) / "cache" / "master", jids
        )
        with book.lock:
            for track in book.jobs.values():
                if track.outcome:
                    result.outcomes[track.outcome] += 1
                result.expected_returns += track.expected
                result.received_bus += len(track.returned)
                result.completed_jobs += track.completed is not None
            result.received_cache = sum(cache.values())
    return result


def _limiter_state(probe: QueueProbe) -> tuple[int, int]:
    """``(jobs queued, points held)`` from the queue manager; -1s when it
    did not answer."""
    try:
        status = probe.status()
    except (OSError, RuntimeError):
        return -1, -1
    return int(status.get("queued", 0)), int(status.get("master_jobs", 0))


def _max_minion_points(probe: QueueProbe, previous: int) -> int:
    """The most points one minion holds now; ``previous`` when the queue
    manager did not answer."""
    try:
        held = probe.capacity()
    except (OSError, RuntimeError):
        return previous
    return max(held.values(), default=0)


def _wait_for_the_end(
    book: JobBook,
    stack: Any,
    limiter: RateLimiting | None,
    probe: QueueProbe,
    max_wait: float,
    result: VariantResult,
    started: float,
) -> str:
    """Wait until every expected return arrived, or the fleet and the master
    are idle and nothing came for QUIET_S, or ``max_wait``; say which."""
    deadline = started + max_wait
    last_count, last_change = -1, time.monotonic()
    next_report = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(2)
        received = book.received_total()
        if received != last_count:
            last_count, last_change = received, time.monotonic()
        queued = _limiter_state(probe)[0] if limiter is not None else 0
        all_published = queued == 0 and book.all_settled()
        if all_published and received >= book.expected_total():
            return "all expected returns arrived"
        status = stack.fleet.status() or {}
        idle = not status.get("jobs_running") and not status.get("jobs_waiting")
        if all_published and idle and time.monotonic() - last_change > QUIET_S:
            return f"fleet idle and no return for {QUIET_S:.0f}s"
        if time.monotonic() >= next_report:
            next_report += 30
            print(
                f"  {result.name}: {time.monotonic() - started:.0f}s, "
                f"{received}/{book.expected_total()} returns, "
                f"{book.in_flight()} jobs in flight, {queued} queued",
                flush=True,
            )
    return f"max wait of {max_wait:.0f}s reached"


@dataclass
class DecideResult:
    case: str
    decision: str
    samples_us: list[float]


def decide_benchmark(minions: int, calls: int) -> list[DecideResult]:
    """Time one decision of the ``capacity`` criteria module (loaded through
    Salt's loader, as the queue manager loads it) for a job to ``minions``."""
    import salt.config
    import salt.ratelimit.criteria as criteria
    from salt.ratelimit.job import QueuedJob
    from salt.ratelimit.ledger import CapacityLedger

    limits = RateLimiting()
    with tempfile.TemporaryDirectory(prefix="saltfleet-decide-") as tmp:
        opts = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
        opts["extension_modules"] = str(Path(tmp) / "ext")
        opts["cachedir"] = str(Path(tmp) / "cache")
        decide = criteria.load_decide(opts, limits.criteria)
    ids = [f"evil-{i:05d}" for i in range(minions)]
    job = QueuedJob("20261122000000000000", {"fun": "state.apply"}, ids, time.time())

    def ledger(in_flight: int, saturated: int) -> CapacityLedger:
        state = CapacityLedger(limits.max_master_jobs, limits.max_minion_jobs)
        for n in range(in_flight):
            state.acquire(f"flight-{n}", ids, 0.0)
        for n in range(limits.max_minion_jobs):
            state.acquire(f"busy-{n}", ids[:saturated], 0.0)
        return state

    cases = [
        ("nothing in flight", ledger(0, 0)),
        ("one job to all in flight", ledger(1, 0)),
        ("master full", ledger(max(1, limits.max_master_jobs // minions), 0)),
        (f"{minions // 10} minions saturated", ledger(0, minions // 10)),
    ]
    results = []
    for case, state in cases:
        decision = criteria.check_decision(decide(job, state))
        samples = []
        for _ in range(calls):
            began = time.perf_counter_ns()
            criteria.check_decision(decide(job, state))
            samples.append((time.perf_counter_ns() - began) / 1000)
        label = decision.action + (
            f" (excluding {len(decision.exclude)})" if decision.exclude else ""
        )
        results.append(DecideResult(case, label, samples))
    return results


def run(
    *,
    minions: int = 1000,
    jobs: int = 200,
    processes: int = 2,
    submitters: int = 4,
    max_wait: float = 1800,
    decide_calls: int = 20000,
    variants: tuple[str, ...] = ("on", "off"),
    max_master_jobs: int = RateLimiting.max_master_jobs,
    exempt_pool: int = 1,
) -> Path:
    """Run the storm with the limiter off and on; return the report's path.

    ``exempt_pool``: MWorkers of the limiter-on master's worker pool for the
    exempt functions (0: no such pool)."""
    reproduce = reproduce_command(
        minions=minions,
        jobs=jobs,
        processes=processes,
        submitters=submitters,
        max_wait=max_wait,
        decide_calls=decide_calls,
        variants=variants,
        max_master_jobs=max_master_jobs,
        exempt_pool=exempt_pool,
    )
    from evil_minions import ensure_keys, minion_ids
    from harness.fleet import DEFAULT_KEYS_DIR

    print(f"decide(): {decide_calls} calls per case", flush=True)
    decisions = decide_benchmark(minions, decide_calls)
    print(f"caching {minions} minion keys (only missing ones are made)", flush=True)
    ensure_keys(DEFAULT_KEYS_DIR, minion_ids("evil", minions))
    limiters = {
        "off": None,
        "on": RateLimiting(
            max_master_jobs=max_master_jobs, exempt_pool_workers=exempt_pool
        ),
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="saltfleet-storm-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        for name in variants:
            print(f"limiter {name}: {minions} minions, {jobs} jobs", flush=True)
            results.append(
                run_variant(
                    name,
                    limiters[name],
                    minions=minions,
                    jobs=jobs,
                    processes=processes,
                    submitters=submitters,
                    max_wait=max_wait,
                    workdir=work,
                    keys_dir=DEFAULT_KEYS_DIR,
                )
            )
    return write_report(
        results, decisions, StormSetup(minions, jobs, submitters, reproduce)
    )


def reproduce_command(**options: Any) -> str:
    """The ``nox`` command line that runs the storm with ``options`` (the
    arguments of :func:`run`), naming only those that differ from the
    defaults."""
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(run).parameters.items()
    }
    words = ["nox -s bench -- storm"]
    for name, value in options.items():
        if value == defaults[name]:
            continue
        if name == "variants":
            value = "both" if set(value) == {"on", "off"} else ",".join(value)
        flag = "--" + name.replace("_", "-")
        words.append(
            f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"
        )
    return " ".join(words)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


@dataclass(frozen=True)
class StormSetup:
    """What the report says about how the storm was run."""

    minions: int
    jobs: int
    submitters: int
    reproduce: str  # the command line that runs it again


def write_report(
    results: list[VariantResult], decisions: list[DecideResult], setup: StormSetup
) -> Path:
    lines = report_lines(results, decisions, setup)
    plot = timeline_plot(results)
    lines += ["", f"![storm over time]({plot.name})"]
    report.write_data(
        "storm",
        {
            "variants": results,
            "decisions": [
                {
                    "case": d.case,
                    "decision": d.decision,
                    "calls": len(d.samples_us),
                    **{
                        f"p{pct}_us": report.percentile(d.samples_us, pct)
                        for pct in (50, 90, 99, 100)
                    },
                }
                for d in decisions
            ],
        },
    )
    return report.write("storm", "\n".join(lines))


def report_lines(
    results: list[VariantResult], decisions: list[DecideResult], setup: StormSetup
) -> list[Any]:
    """The report's Markdown, section by section (no plot)."""
    limits = next((r.limiter for r in results if r.limiter), None) or RateLimiting()
    return [
        *_intro(limits, setup),
        *_end_counts(results),
        *_over_time(results),
        *_ping_section(results),
        *_memory_section(results),
        *_decision_section(decisions, setup.minions),
        *_goals(results, limits, decisions),
    ]


def _intro(limits: RateLimiting, setup: StormSetup) -> list[Any]:
    defaults = RateLimiting()
    changed = [
        f"{name} {getattr(limits, name)}"
        for name in ("max_master_jobs", "max_minion_jobs", "max_queue")
        if getattr(limits, name) != getattr(defaults, name)
    ]
    pool = (
        f"The exempt functions ({', '.join(limits.exempt_functions())}) have a "
        f"worker pool of their own with {limits.exempt_pool_workers} MWorker(s), "
        f"beside the {WORKER_THREADS} of the default pool "
        "(`worker_pools:exempt:functions`). "
        if limits.exempt_pool_workers
        else "No worker pool of its own for the exempt functions. "
    )
    return [
        "# Storm benchmark: rate limiting off vs on",
        "",
        report.environment(),
        f"{setup.minions} simulated minions (each runs at most "
        f"{limits.max_minion_jobs} jobs at once), a storm of {setup.jobs} jobs "
        "to `*`: `test.sleep` of "
        f"{'/'.join(map(str, SLEEP_LENGTHS))} s and `state.apply` of "
        f"{STATE_DURATION[0]:g}-{STATE_DURATION[1]:g} s, alternating, each after a "
        f"start-up delay of {START_JITTER[0]:g}-{START_JITTER[1]:g} s per minion "
        "(a real minion forks a process per job), submitted "
        f"with `LocalClient.run_job` by {setup.submitters} client threads as fast as "
        "they can. "
        "Limiter on: `rate_limiting` "
        + (f"defaults except {', '.join(changed)} " if changed else "defaults ")
        + f"(criteria `{limits.criteria}`, "
        f"max_master_jobs {limits.max_master_jobs}, max_minion_jobs "
        f"{limits.max_minion_jobs}, max_queue {limits.max_queue}). "
        + pool
        + f"Limiter off: {WORKER_THREADS} MWorkers in one pool. "
        f"Presence ping: `test.ping` to {PING_TARGETS} minions every second "
        f"({PING_TIMEOUT} s timeout), {PING_TARGETS} other minions each time "
        "(a fixed shuffled order through the fleet). "
        f"Reproduce: `{setup.reproduce}`.",
        "",
    ]


def _end_counts(results: list[VariantResult]) -> list[Any]:
    """Jobs and returns at the end, per variant."""
    return [
        "## End counts",
        "",
        report.table(
            [
                "limiter",
                "jobs submitted",
                "accepted",
                "rejected",
                "published",
                "published excluding",
                "expired",
                "jobs with every return",
                "returns expected",
                "received (job cache)",
                "received (bus)",
                "lost",
                "minion return errors",
                "max jobs on one minion (minion's count)",
                "max points on one minion (ledger)",
            ],
            [
                (
                    r.name,
                    r.submitted,
                    r.accepted,
                    r.rejected,
                    r.outcomes["published"] if r.limiter else r.accepted,
                    r.outcomes["published_excluding"],
                    r.outcomes["expired"],
                    r.completed_jobs,
                    r.expected_returns,
                    r.received_cache,
                    r.received_bus,
                    _lost_cell(r),
                    r.minion_return_errors,
                    r.peak_minion_jobs,
                    r.max_minion_points if r.limiter else "-",
                )
                for r in results
            ],
        ),
        "",
        "Lost returns are returns expected from published jobs (targets "
        "minus the minions a job was published without) that never reached "
        "the master's job cache; when a variant was cut short by "
        "`--max-wait`, missing returns may still have been on their way and "
        "are not called lost. Points are the queue manager's ledger: one per "
        "published job and minion until the minion's return arrives.",
        "",
    ]


def _over_time(results: list[VariantResult]) -> list[Any]:
    """What the sampler saw over the storm, per variant."""
    return [
        "## Over time",
        "",
        report.table(
            [
                "limiter",
                "storm s (ended by)",
                "submit s",
                "master RSS peak MiB",
                "RSS at end MiB",
                "bus delay p50 / max s",
                "max queued",
                "max in flight",
                "max points held",
                "returns/s peak",
                "master CPU s",
            ],
            [
                (
                    r.name,
                    f"{r.storm_s:.0f} ({r.ended_by})",
                    f"{r.submit_s:.1f}",
                    f"{r.peak_rss_mb:.0f}",
                    f"{r.samples[-1].master_rss_mb:.0f}" if r.samples else "-",
                    _delay_summary(r),
                    max((s.queued for s in r.samples), default=0),
                    max((s.in_flight for s in r.samples), default=0),
                    (
                        max((s.master_points for s in r.samples), default=0)
                        if r.limiter
                        else "-"
                    ),
                    f"{max((s.returns_per_s for s in r.samples), default=0):.0f}",
                    f"{r.master_cpu_s:.0f}",
                )
                for r in results
            ],
        ),
        "",
    ]


def _ping_section(results: list[VariantResult]) -> list[Any]:
    """The presence pings, split into publish, first and last return."""
    return [
        "## Presence pings",
        "",
        "Seconds from the start of `LocalClient.cmd_iter` until the master "
        "answered the publish with the jid, until the first of the "
        f"{PING_TARGETS} returns, and until the last (the ping's time).",
        "",
        report.table(
            [
                "limiter",
                "pings",
                "publish p50 / p99",
                "first return p50 / p99",
                "all returned p50 / p99",
                "incomplete",
                "skipped",
            ],
            [
                (
                    r.name,
                    len(r.pings),
                    _ping_cell([p.publish_s for p in r.pings]),
                    _ping_cell([p.first_s for p in r.pings]),
                    _ping_cell([p.seconds for p in r.pings]),
                    r.pings_incomplete,
                    r.pings_skipped,
                )
                for r in results
            ],
        ),
        "",
        "A presence ping is incomplete when fewer "
        f"than {PING_TARGETS} minions answered within its timeout (then its "
        "time includes Salt's `saltutil.find_job` round); a ping tick is "
        f"skipped when {PING_MAX_OUTSTANDING} pings are already outstanding.",
        "",
    ]


def _memory_section(results: list[VariantResult]) -> list[Any]:
    """Master RSS per process role: which grew."""
    return [
        "## Master memory by process",
        "",
        "RSS of the master's processes in MiB, summed per role (the MWorkers "
        "of one pool are one role), at the first sample and at the end, the "
        f"{RSS_ROLES_SHOWN} that grew most per variant.",
        "",
        report.table(
            ["limiter", "process", "first MiB", "end MiB", "growth MiB"],
            [row for r in results for row in _rss_growth_rows(r)],
        ),
        "",
    ]


def _decision_section(decisions: list[DecideResult], minions: int) -> list[Any]:
    """The criteria module micro-benchmark."""
    return [
        "## One decision of the criteria module",
        "",
        f"`capacity.decide(job, ledger)` for a job to {minions} minions, loaded "
        "through Salt's loader, with `check_decision` as the queue manager "
        "calls it.",
        "",
        report.table(
            ["ledger", "decision", "p50 us", "p99 us", "calls"],
            [
                (
                    d.case,
                    d.decision,
                    f"{report.percentile(d.samples_us, 50):.1f}",
                    f"{report.percentile(d.samples_us, 99):.1f}",
                    len(d.samples_us),
                )
                for d in decisions
            ],
        ),
        "",
    ]


def _goals(
    results: list[VariantResult],
    limits: RateLimiting,
    decisions: list[DecideResult],
) -> list[Any]:
    """The issue's goals for the limiter-on variant, each with its verdict."""
    lines: list[Any] = [
        "## Goals (limiter on)",
        "",
    ]
    on = next((r for r in results if r.name == "on"), None)
    if on is not None:
        lost = on.missing_returns
        rss = [s.master_rss_mb for s in on.samples]
        lines += [
            f"- no minion over its capacity: at most {on.peak_minion_jobs} jobs "
            f"on one minion <= {limits.max_minion_jobs} (the queue manager's "
            f"ledger: at most {on.max_minion_points} points on one minion): "
            + _verdict(on.peak_minion_jobs <= limits.max_minion_jobs),
            f"- bounded master RSS: peak {on.peak_rss_mb:.0f} MiB, at end "
            f"{rss[-1] if rss else 0:.0f} MiB (see the plot)",
            (
                f"- returns lost for published jobs: not known, the run was cut "
                f"with {lost} returns missing"
                if on.cut
                else f"- returns lost for published jobs: {lost}: "
                + _verdict(lost == 0)
            ),
            (
                f"- presence ping p99 {on.ping_p99:.2f} s <= {GOAL_PING_P99_S:g} s: "
                + _verdict(on.ping_p99 <= GOAL_PING_P99_S)
                if on.pings
                else "- presence ping: none was sent, the storm ended too soon"
            ),
        ]
    worst = max(report.percentile(d.samples_us, 99) for d in decisions)
    lines.append(
        f"- one decision: worst p99 {worst:.1f} us <= {GOAL_DECIDE_US:g} us: "
        + _verdict(worst <= GOAL_DECIDE_US)
    )
    return lines


def _rss_growth_rows(result: VariantResult) -> list[tuple[Any, ...]]:
    if not result.samples:
        return []
    first, last = result.samples[0].rss_by_role, result.samples[-1].rss_by_role
    growth = sorted(
        ((name, first.get(name, 0.0), mib) for name, mib in last.items()),
        key=lambda row: row[1] - row[2],
    )
    return [
        (result.name, name, f"{start:.0f}", f"{end:.0f}", f"{end - start:+.0f}")
        for name, start, end in growth[:RSS_ROLES_SHOWN]
    ]


def _ping_cell(seconds: list[float | None]) -> str:
    known = [value for value in seconds if value is not None]
    if not known:
        return "-"
    return (
        f"{report.percentile(known, 50):.2f} / {report.percentile(known, 99):.2f}"
        + (f" ({len(seconds) - len(known)} never)" if len(known) < len(seconds) else "")
    )


def _lost_cell(result: VariantResult) -> str:
    if result.cut:
        return f"n/a: cut, {result.missing_returns} missing"
    return str(result.missing_returns)


def _delay_summary(result: VariantResult) -> str:
    delays = [s.bus_delay_s for s in result.samples if s.bus_delay_s is not None]
    if not delays:
        return "-"
    return f"{report.median(delays):.2f} / {max(delays):.1f}"


def timeline_plot(results: list[VariantResult]) -> Path:
    """Five panels over time, one line per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("master RSS (MiB)", lambda s: s.master_rss_mb),
        ("jobs in flight", lambda s: s.in_flight),
        ("jobs queued", lambda s: max(0, s.queued)),
        ("points held (ledger)", lambda s: s.master_points),
        ("returns / s (bus)", lambda s: s.returns_per_s),
        ("bus delay of returns (s)", lambda s: s.bus_delay_s),
    ]
    fig, axes = plt.subplots(len(panels) + 1, 1, figsize=(9, 16), dpi=100, sharex=True)
    for ax, (title, value) in zip(axes[:-1], panels, strict=True):
        for r in results:
            points = [(s.t, value(s)) for s in r.samples if value(s) is not None]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, label=f"limiter {r.name}", linewidth=1)
        ax.set_ylabel(title, fontsize=8)
        ax.grid(alpha=0.3)
    ax = axes[-1]
    for r in results:
        if r.pings:
            ax.scatter(
                [p.t for p in r.pings],
                [p.seconds for p in r.pings],
                s=4,
                label=f"limiter {r.name}",
            )
    ax.axhline(GOAL_PING_P99_S, color="grey", linestyle="--", linewidth=0.8)
    ax.set_ylabel("presence ping (s)", fontsize=8)
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_xlabel("seconds since the storm began")
    axes[0].legend()
    axes[0].set_title(
        "Storm of jobs to every minion: rate limiting "
        + " vs ".join(r.name for r in results)
    )
    fig.tight_layout()
    report.RESULTS.mkdir(parents=True, exist_ok=True)
    path = report.RESULTS / "storm-timeline.png"
    fig.savefig(path)
    plt.close(fig)
    return path
