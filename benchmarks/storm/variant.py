"""One variant's storm: its threads and what they record, under one lock.

A :class:`StormRun` runs on a started stack: after a warm-up it starts a
sampler and a pinger thread, submits the storm from ``submitters`` client
threads, waits for the end, and counts. Everything those threads write (the
:class:`~benchmarks.storm.accounting.JobBook` and the
:class:`~benchmarks.storm.accounting.VariantResult`) is guarded by the run's
one lock.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Final

import psutil

from benchmarks import proctree, report
from benchmarks.storm.accounting import (
    PING_MAX_OUTSTANDING,
    PING_TIMEOUT,
    JobBook,
    JobTrack,
    Ping,
    Sample,
    VariantResult,
    answers_from_bus,
    first_returns,
    job_cache_returns,
    master_roles,
    ping_order,
    ping_targets,
    storm_jobs,
)
from benchmarks.storm.consumer import ConsumerRun
from benchmarks.storm.options import StormOptions
from harness.consumer import (
    ConsumerSettings,
    read_samples,
    stored_events,
)
from harness.ratelimit import LimiterState, QueueProbe, RateLimiting

if TYPE_CHECKING:
    from harness.stack import Stack

#: ask the queue manager for every minion's points every this many samples
CAPACITY_EVERY: Final = 5
#: after the fleet is idle, how long no new return may arrive before the end
QUIET_S: Final = 60.0
#: how a run that ended after QUIET_S without a return says so
QUIET_END: Final = "fleet idle and no return"
SAMPLE_EVERY_S: Final = 1.0
PING_EVERY_S: Final = 1.0
END_POLL_S: Final = 2.0  # how often the end conditions are checked
PROGRESS_EVERY_S: Final = 30.0
WARM_UP_TIMEOUT: Final = 120
#: what a master without the limiter is sampled as
IDLE: Final = LimiterState(queued=0, points=0, budget=0)
JOIN_TIMEOUT_S: Final = 30.0
#: the longest the storm waits, after the last ping's timeout, for the
#: listener to get what the bus had by then (it trailed the bus by 0.24 s
#: at most, a second's median, in storm-100-bus; by seconds on a busier bus)
LISTENER_LAG_MAX_S: Final = 30.0
LISTENER_POLL_S: Final = 0.5


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per role between two :func:`benchmarks.proctree.cpu_by_role`
    readings; a role that appeared in between spent all it shows."""
    return {name: seconds - before.get(name, 0.0) for name, seconds in after.items()}


def box_cpu_seconds() -> tuple[float, float]:
    """CPU seconds since the box booted, every core summed (``/proc/stat``):
    those it was busy (user, nice, system and interrupts: guest time is
    already in user and nice, and stolen time it never had) and all it
    had (busy, idle, I/O wait)."""
    times = psutil.cpu_times()
    busy = times.user + times.nice + times.system
    busy += getattr(times, "irq", 0.0) + getattr(times, "softirq", 0.0)
    had = busy + times.idle + getattr(times, "iowait", 0.0)
    return float(busy), float(had)


def driver_cpu_seconds() -> float:
    """User + system CPU of the storm's own process: the driver (pinger,
    submitters, sampler, the bus listener's accounting), apart from the
    master and the fleet, which are processes of their own."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _max_minion_points(probe: QueueProbe, previous: int) -> int:
    """The most points one minion holds now; ``previous`` when the queue
    manager did not answer."""
    try:
        held = probe.capacity()
    except (OSError, RuntimeError):
        return previous
    return max(held.values(), default=0)


def storm_seconds(
    elapsed: float, last_return: float | None, started_at: float, *, quiet: bool
) -> float:
    """A run's duration: until its last return (``last_return`` and
    ``started_at`` on the wall clock) if it ended ``quiet``, when no return
    had come for QUIET_S, without that wait; ``elapsed`` else (a run that
    ended with its last expected return, or cut short)."""
    if not quiet or last_return is None:
        return elapsed
    return min(elapsed, max(0.0, last_return - started_at))


class StormRun:
    """One variant's storm on a started stack: the sampler, the pinger, the
    submitters and what they record, under one lock."""

    def __init__(
        self,
        name: str,
        limiter: RateLimiting | None,
        options: StormOptions,
        stack: Stack,
        consumer: ConsumerSettings | None = None,
        run: int = 1,
    ) -> None:
        if stack.master is None or stack.listener is None or stack.fleet is None:
            raise RuntimeError("the storm needs a started stack with a fleet")
        self.stack = stack
        self.master = stack.master
        self.listener = stack.listener
        self.limiter = limiter
        self.options = options
        self.consumer = consumer
        self.lock = threading.RLock()
        self.result = VariantResult(name, limiter, run)
        self.book = JobBook(self.lock)
        self.book.limited = limiter is not None
        self.probe = QueueProbe(stack.master.settings.sock_dir)
        self.order = ping_order(list(stack.fleet.ids))
        self._stop = threading.Event()
        # the pinger threads' LocalClients, each kept for the run (see
        # _ping_client); closed when run() is done with the pinger
        self._ping_local = threading.local()
        self._ping_clients = contextlib.ExitStack()
        self._started = 0.0
        self._started_at = 0.0  # the same moment on the wall clock
        #: seconds from the first submission until the run ended, its quiet
        #: wait included (the consumer is read over them)
        self._elapsed = 0.0

    def run(self) -> VariantResult:
        """Warm up, storm, wait for the end, count; return the result."""
        master_pid = self.master.process.pid
        assert self.stack.fleet is not None, "a storm stack has a fleet"
        fleet_pid = self.stack.fleet.process.pid
        # warm up the master's workers and caches, not counted
        self.stack.cmd("*", "test.ping", timeout=WARM_UP_TIMEOUT)
        storm = storm_jobs(self.options.jobs)
        with self.lock:
            self.result.submitted = len(storm)
        # the clients close after the pool's threads ended
        with self._ping_clients, ThreadPoolExecutor(PING_MAX_OUTSTANDING) as ping_pool:
            self.warm_ping_clients(ping_pool)
            cpu_before = proctree.cpu_by_role(master_pid)
            driver_before = driver_cpu_seconds()
            fleet_before = proctree.cpu_seconds(fleet_pid)
            box_before = box_cpu_seconds()
            self._started = time.monotonic()
            self._started_at = time.time()
            with self.lock:
                self.result.started = report.utc_minute()
            position = self.listener.mark()
            threads = [
                threading.Thread(
                    target=self._sampler,
                    args=(position,),
                    name="storm-sampler",
                    daemon=True,
                ),
                threading.Thread(
                    target=self._pinger,
                    args=(ping_pool,),
                    name="storm-pinger",
                    daemon=True,
                ),
            ]
            for thread in threads:
                thread.start()
            try:
                self._submit_storm(storm)
                ended_by = self._wait_for_the_end()
                self._elapsed = time.monotonic() - self._started
                with self.lock:
                    self.result.ended_by = ended_by
                    self.result.storm_s = storm_seconds(
                        self._elapsed,
                        self.book.last_return,
                        self._started_at,
                        quiet=ended_by.startswith(QUIET_END),
                    )
            finally:
                # also on Ctrl-C or SIGTERM: the pinger must stop submitting
                # before the pool shuts down under it
                self._stop.set()
                for thread in threads:
                    thread.join(timeout=JOIN_TIMEOUT_S)
        master_cpu = cpu_spent(cpu_before, proctree.cpu_by_role(master_pid))
        driver_cpu = driver_cpu_seconds() - driver_before
        with self.lock:
            self.result.fleet_cpu_s = proctree.cpu_seconds(fleet_pid) - fleet_before
            busy, had = box_cpu_seconds()
            self.result.box_busy_s = busy - box_before[0]
            self.result.box_capacity_s = had - box_before[1]
        self._wait_for_the_last_pings(position)
        with self.lock:
            answers_from_bus(self.result.pings, self.listener.since(position)[0])
        self._count(master_cpu, driver_cpu)
        return self.result

    def _wait_for_the_last_pings(self, position: int) -> None:
        """Give the pings still inside their timeout when the storm ended
        the rest of it before their answers are read off the bus, and the
        listener time to get what the bus had by then (the forwarder trails
        a busy bus): until every target of those pings has returned, or the
        listener has an event fired after the last timeout (it gets the
        bus's events in order), at most LISTENER_LAG_MAX_S after that
        timeout. Not counted in the storm's time or CPU."""
        ended = time.time()
        with self.lock:
            late = {
                p.jid: p
                for p in self.result.pings
                if p.jid and p.began_at > ended - PING_TIMEOUT
            }
        if not late:
            return
        deadline = max(p.began_at for p in late.values()) + PING_TIMEOUT
        time.sleep(max(0.0, deadline - time.time()))
        give_up = time.monotonic() + LISTENER_LAG_MAX_S
        returned: dict[str, dict[str, float]] = {}
        while True:
            events, position = self.listener.since(position)
            first_returns(events, late, into=returned)
            if any(e.fired_at is not None and e.fired_at > deadline for e in events):
                return
            if all(len(returned.get(jid, ())) >= p.targets for jid, p in late.items()):
                return
            if time.monotonic() >= give_up:
                return
            time.sleep(LISTENER_POLL_S)

    def _fleet_status(self) -> dict[str, Any]:
        fleet = self.stack.fleet
        assert fleet is not None, "a storm stack has a fleet"
        return dict(fleet.status() or {})

    def _sampler(self, position: int) -> None:
        """Once a second: the bus, the master's PSS, the queue manager."""
        last = time.monotonic()
        last_sent = int(self._fleet_status().get("returns_sent") or 0)
        max_points = 0
        taken = 0
        last_unbooked = 0
        while not self._stop.wait(SAMPLE_EVERY_S):
            events, position = self.listener.since(position)
            returns, ages = self.book.feed(events)
            unbooked = self.book.unbooked_seen
            now = time.monotonic()
            sent = int(self._fleet_status().get("returns_sent") or 0)
            state = self.probe.state() if self.limiter is not None else IDLE
            if self.limiter is not None and taken % CAPACITY_EVERY == 0:
                max_points = _max_minion_points(self.probe, max_points)
            roles = master_roles(proctree.pss_by_role(self.master.process.pid))
            sample = Sample(
                t=now - self._started,
                master_pss_mb=sum(roles.values()),
                pss_by_role=roles,
                bus_delay_s=report.median(ages) if ages else None,
                queued=state.queued,
                in_flight=self.book.in_flight(),
                returns_per_s=returns / (now - last),
                minion_returns_per_s=(sent - last_sent) / (now - last),
                master_points=state.points,
                max_minion_points=max_points,
                budget=state.budget,
                limiter_delay_s=state.delay,
                limiter_run_time_s=state.run_time,
                cuts=max(0, state.cuts),
                unbooked_per_s=(unbooked - last_unbooked) / (now - last),
            )
            with self.lock:
                self.result.samples.append(sample)
            taken += 1
            last, last_sent, last_unbooked = now, sent, unbooked

    def _pinger(self, pool: ThreadPoolExecutor) -> None:
        """Once a second a presence ping to the next minions, unless
        PING_MAX_OUTSTANDING are still waiting for the master to take their
        publication (a skipped tick: the master did not take a ping for
        PING_MAX_OUTSTANDING seconds)."""
        outstanding: list[Future[None]] = []
        tick = 0
        while not self._stop.wait(PING_EVERY_S):
            outstanding = [f for f in outstanding if not f.done()]
            if len(outstanding) >= PING_MAX_OUTSTANDING:
                with self.lock:
                    self.result.pings_skipped += 1
                continue
            targets = ping_targets(self.order, tick)
            tick += 1
            at = time.monotonic() - self._started
            outstanding.append(pool.submit(self._one_ping, at, targets))

    def _ping_client(self) -> Any:
        """This pinger thread's LocalClient, made on its first ping and kept
        for the run: a client per ping parsed the master's config every
        second. One per thread, not one for all: a LocalClient keeps state
        between calls and is not made to be shared between threads."""
        client = getattr(self._ping_local, "client", None)
        if client is None:
            with self.lock:
                client = self._ping_clients.enter_context(self.stack.client())
            self._ping_local.client = client
        return client

    def warm_ping_clients(self, pool: ThreadPoolExecutor) -> None:
        """Make every thread of the pinger's ``pool`` its LocalClient before
        the storm's clock starts: made at a thread's first ping instead, the
        first PING_MAX_OUTSTANDING pings timed the client's making (a config
        parse), longer than their timeout on a slow
        machine. Each task waits at a barrier until all have made theirs,
        so each runs on a thread of its own. A client that cannot be made
        now is made at its thread's first ping, as before."""
        barrier = threading.Barrier(PING_MAX_OUTSTANDING)

        def make() -> None:
            try:
                self._ping_client()
            except Exception:  # pylint: disable=broad-except
                pass  # that thread's first ping tries again and counts it
            finally:
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait(timeout=WARM_UP_TIMEOUT)

        for future in [pool.submit(make) for _ in range(PING_MAX_OUTSTANDING)]:
            future.result()

    def _one_ping(self, at: float, targets: list[str]) -> None:
        """Publish one presence ping and keep its jid; its answers are read
        off the master's bus after the run (:func:`answers_from_bus`). A
        client waiting for the returns would decode every event of the bus
        for as long as it waits: ten of them took about half a core beside
        a master whose pings went unanswered, and a fifth of that beside
        one that answered, so the storm's own process took more of the
        box from the master that did worse."""
        began = time.monotonic()
        ping = Ping(at, PING_TIMEOUT, 0, targets=len(targets), began_at=time.time())
        try:
            pub = self._ping_client().run_job(
                targets,
                "test.ping",
                tgt_type="list",
                timeout=PING_TIMEOUT,
                listen=False,
            )
            if pub and "jid" in pub:
                ping.publish_s = time.monotonic() - began
                ping.jid = str(pub["jid"])
        except Exception:  # pylint: disable=broad-except
            pass  # a ping that was not published has no answer
        with self.lock:
            self.result.pings.append(ping)

    def _submit_storm(self, storm: list[tuple[str, list[Any]]]) -> None:
        """Submit ``storm`` from ``submitters`` client threads, as fast as
        they can; return when every job was submitted."""
        print(f"  {self.result.name}: submitting {len(storm)} jobs to '*'", flush=True)
        count = self.options.submitters
        chunks = [storm[i::count] for i in range(count)]
        with ThreadPoolExecutor(count) as pool:
            pending = {pool.submit(self._submit, chunk) for chunk in chunks}
            while pending:
                done, pending = wait(pending, timeout=PROGRESS_EVERY_S)
                for future in done:
                    future.result()
                if pending:
                    self._submit_progress(len(storm))
        with self.lock:
            self.result.submit_s = time.monotonic() - self._started
            self.result.accepted = len(self.book.jobs)

    def _submit_progress(self, total: int) -> None:
        """A progress line while submitting: an overloaded master answers a
        submission only when its request times out."""
        with self.lock:
            accepted = len(self.book.jobs)
            refused = self.result.rejected
            failed = len(self.result.submit_errors)
        self._progress(
            f"{accepted + refused + failed}/{total} submissions answered "
            f"({accepted} accepted, {refused} refused, {failed} failed), "
            f"{self.book.received_total()} returns"
        )

    def _progress(self, what: str) -> None:
        """``  on: 120s, <what>``: a progress line of this variant."""
        elapsed = time.monotonic() - self._started
        print(f"  {self.result.name}: {elapsed:.0f}s, {what}", flush=True)

    def _submit(self, chunk: list[tuple[str, list[Any]]]) -> None:
        from salt.exceptions import SaltMasterOverloadedError

        with self.stack.client() as client:
            for fun, arg in chunk:
                accepted = time.time()  # the clock of Event.received
                try:
                    pub = client.run_job("*", fun, arg)
                except SaltMasterOverloadedError:
                    with self.lock:
                        self.result.rejected += 1
                    continue
                except Exception as exc:  # pylint: disable=broad-except
                    self._submit_error(f"{fun}: {exc}")
                    continue
                if not pub or not pub.get("jid"):
                    self._submit_error(f"{fun}: no jid ({pub!r})")
                    continue
                targets = len(pub.get("minions") or [])
                self.book.add(JobTrack(str(pub["jid"]), fun, targets, accepted))

    def _submit_error(self, error: str) -> None:
        with self.lock:
            self.result.submit_errors.append(error)

    def _wait_for_the_end(self) -> str:
        """Wait until every expected return arrived, or the fleet and the
        master are idle and nothing came for QUIET_S, or ``max_wait``; say
        which."""
        deadline = self._started + self.options.max_wait
        last_count, last_change = -1, time.monotonic()
        next_report = time.monotonic() + PROGRESS_EVERY_S
        while time.monotonic() < deadline:
            time.sleep(END_POLL_S)
            received = self.book.received_total()
            if received != last_count:
                last_count, last_change = received, time.monotonic()
            queued = self.probe.state().queued if self.limiter is not None else 0
            all_published = queued == 0 and self.book.all_settled()
            if all_published and received >= self.book.expected_total():
                return "all expected returns arrived"
            status = self._fleet_status()
            idle = not status.get("jobs_running") and not status.get("jobs_waiting")
            if all_published and idle and time.monotonic() - last_change > QUIET_S:
                return f"{QUIET_END} for {QUIET_S:.0f}s"
            if time.monotonic() >= next_report:
                next_report += PROGRESS_EVERY_S
                self._progress(
                    f"{received}/{self.book.expected_total()} returns, "
                    f"{self.book.in_flight()} jobs in flight, {queued} queued"
                )
        return f"max wait of {self.options.max_wait:.0f}s reached"

    def _count(self, master_cpu: dict[str, float], driver_cpu_s: float) -> None:
        """The end counts: the fleet's own, the bus's and the job cache's;
        ``master_cpu`` is the CPU seconds the master's processes spent over
        the storm, per role."""
        status = self._fleet_status()
        with self.lock:
            jids = set(self.book.jobs)
        cache = job_cache_returns(
            self.master.settings.cachedir, jids, self._master_hash_type()
        )
        unbooked = self.book.unbooked()
        consumer = self._consumer_run()
        with self.lock:
            self.result.consumer = consumer
            self.result.master_cpu_by_role = master_cpu
            self.result.master_cpu_s = sum(master_roles(master_cpu).values())
            self.result.driver_cpu_s = driver_cpu_s
            self.result.peak_minion_jobs = int(status.get("peak_minion_jobs") or 0)
            self.result.minion_return_retries = int(status.get("return_retries") or 0)
            self.result.minion_returns_given_up = int(
                status.get("returns_given_up") or 0
            )
            self.result.minion_return_errors = int(status.get("return_errors") or 0)
            self.result.tally(self.book.jobs.values(), cache)
            self.result.unbooked_jobs = len(unbooked)
            self.result.unbooked_returns = sum(map(len, unbooked.values()))

    def _master_hash_type(self) -> str:
        """The ``hash_type`` the master files its jobs under."""
        return str(self.master.effective_opts()["hash_type"])

    def _consumer_run(self) -> ConsumerRun | None:
        """What the consumer sampled since the storm began, and the events in
        its table now."""
        if self.consumer is None or self.stack.pg is None:
            return None
        # the consumer is read over all the storm waited, the quiet end too
        storm_s = self._elapsed
        samples = read_samples(self.stack.pg, self.consumer.name)
        # counted after the samples were read: at least the last one's stored
        rows = stored_events(self.stack.pg, self.consumer.name)
        return ConsumerRun.from_samples(
            self.consumer.rate, samples, self._started_at, storm_s, rows
        )
