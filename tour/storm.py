"""A small storm: jobs to every simulated minion at once, with presence
pings beside it, measured from the master's event bus.

Built from the harness's own pieces (the stack's LocalClient, its event
listener, :mod:`harness.ratelimit`); the full storm benchmark with its
timelines lives in ``benchmarks/storm``.
"""

from __future__ import annotations

import threading
import time
from itertools import cycle

from harness import progress
from harness.events import Event
from harness.ratelimit import OUTCOMES, job_event
from tour.context import TourContext
from tour.errors import ScenarioFailed
from tour.storm_result import Ping, StormResult

#: what every storm job runs (for ``DemoOptions.job_seconds()``): the simulated
#: minions run it in a job slot like any job; a state run would conflict
#: with the state runs already going
STORM_FUNCTION = "test.sleep"
PING_TIMEOUT = 60


class PresenceProbe:
    """Pings a few minions every interval, in a thread, from its own client."""

    def __init__(self, ctx: TourContext, started: float) -> None:
        self.ctx = ctx
        self.started = started
        self.pings: list[Ping] = []
        self._stop = threading.Event()
        # a daemon: Ctrl-C must not wait for a ping in flight
        self._thread = threading.Thread(
            target=self._run, name="presence-probe", daemon=True
        )
        self._error: BaseException | None = None

    def __enter__(self) -> PresenceProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if exc[0] is not None:
            return  # the stack is stopped next; a ping in flight just ends
        self._thread.join()
        if self._error is not None:
            raise ScenarioFailed(f"presence pings failed: {self._error!r}")

    def _run(self) -> None:
        options = self.ctx.options
        minions = cycle(self.ctx.fleet_ids)
        try:
            with self.ctx.stack.client() as client:
                while not self._stop.is_set():
                    asked = [next(minions) for _ in range(options.ping_minions)]
                    began = time.monotonic()
                    answered = client.cmd(
                        ",".join(asked),
                        "test.ping",
                        tgt_type="list",
                        timeout=PING_TIMEOUT,
                    )
                    took = time.monotonic() - began
                    self.pings.append(
                        Ping(began - self.started, took, len(asked), len(answered))
                    )
                    self._stop.wait(max(0.0, options.ping_interval - took))
        except Exception as exc:  # reported by __exit__, in the main thread
            self._error = exc


def return_jid(tag: str) -> str | None:
    """The jid of a ``salt/job/<jid>/ret/<minion>`` tag, else None."""
    parts = tag.split("/")
    if len(parts) == 5 and parts[:2] == ["salt", "job"] and parts[3] == "ret":
        return parts[2]
    return None


#: seconds between the lines that say how far a storm is
PROGRESS_EVERY = progress.INTERVAL


def storm_progress(result: StormResult, seconds: float) -> str:
    """One line on how far a storm is: returns in, jobs complete."""
    expected = sum(result.expected(jid) for jid in result.jids)
    returned = sum(result.returns.values())
    return (
        f"storm ({result.label}): {returned} of {expected} returns in, "
        f"{result.completed} of {len(result.jids)} jobs complete, {seconds:.0f}s"
    )


def fleet_target(ctx: TourContext) -> str:
    """A glob that matches every simulated minion and not the real one."""
    assert ctx.stack.fleet is not None
    return f"{ctx.stack.fleet.config.prefix}-*"


class _BusTally:
    """Returns and rate-limiting outcomes of a storm's jobs, read off the bus."""

    def __init__(self, result: StormResult, started_wall: float, limited: bool) -> None:
        self.result = result
        self.started_wall = started_wall
        self.limited = limited
        self.wanted: set[str] = set()

    def add(self, event: Event) -> None:
        jid = return_jid(event.tag)
        if jid in self.wanted:
            self.result.returns[jid] = self.result.returns.get(jid, 0) + 1
            self.result.return_times.append(event.received - self.started_wall)
            return
        fired = job_event(event.tag)
        if fired is None or fired[0] not in self.wanted or fired[1] not in OUTCOMES:
            return
        self.result.outcomes.setdefault(fired[0], []).append(fired[1])
        self.result.excluded[fired[0]] = len(event.data.get("excluded") or [])

    def done(self) -> bool:
        """Every job has its outcome (limiter on) and every expected return."""
        return all(
            (not self.limited or jid in self.result.outcomes)
            and self.result.returns.get(jid, 0) >= self.result.expected(jid)
            for jid in self.result.jids
        )


def run_storm(ctx: TourContext, label: str, *, limited: bool) -> StormResult:
    """Submit ``storm_jobs`` jobs to the whole fleet at once; wait for every
    expected return (or the storm timeout) while pinging a few minions."""
    stack, options = ctx.stack, ctx.options
    listener = stack.listener
    assert listener is not None and stack.fleet is not None
    result = StormResult(label, [], len(ctx.fleet_ids), {}, [], 0.0, 0)
    position = listener.mark()
    started, started_wall = time.monotonic(), time.time()
    tally = _BusTally(result, started_wall, limited)
    with PresenceProbe(ctx, started) as probe:
        with stack.client() as client:
            result.jids = [
                str(
                    client.cmd_async(
                        fleet_target(ctx), STORM_FUNCTION, [options.job_seconds()]
                    )
                )
                for _ in range(options.storm_jobs)
            ]
        if not all(jid and jid != "0" for jid in result.jids):
            raise ScenarioFailed(
                f"storm ({label}): the master refused a job: {result.jids}"
            )
        tally.wanted = set(result.jids)
        deadline = started + options.storm_timeout()
        told = started
        while time.monotonic() < deadline:
            events, position = listener.since(position)
            for event in events:
                tally.add(event)
            if tally.done():
                break
            if time.monotonic() - told >= PROGRESS_EVERY:
                told = time.monotonic()
                print(f"    {storm_progress(result, told - started)}", flush=True)
            time.sleep(0.25)
        result.seconds = time.monotonic() - started
    result.pings = probe.pings
    status = stack.fleet.status() or {}
    peak = status.get("peak_minion_jobs", 0)
    result.peak_minion_jobs = peak if isinstance(peak, int) else 0
    return result
