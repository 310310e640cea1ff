"""The storm's goals, limiter on against each other variant in the same run.

Each verdict says by how much a goal is missed, a goal the run could not
measure is never "met", and a missed goal brings the run's own data on why:
made-up results here.
"""

from __future__ import annotations

from benchmarks.storm.accounting import PING_TARGETS, Ping, Sample, VariantResult
from benchmarks.storm.consumer import ConsumerRun
from benchmarks.storm.decide import DecideResult
from benchmarks.storm.goals import goal_lines, goals, ratio_text, why_lines
from harness.consumer import ENGINE_NAME, ConsumerSample
from harness.ratelimit import RateLimiting

LIMITS = RateLimiting()
#: how the consumer engine's process is named among the master's roles
CONSUMER_ROLE = f"Engine(salt.loaded.ext.engines.{ENGINE_NAME})"
DECISIONS = [DecideResult("nothing in flight", "publish", [5.0, 6.0])]


def _sample(t: float, rss: float, points: int = 0, rate: float = 100.0) -> Sample:
    return Sample(
        t=t,
        master_pss_mb=rss,
        bus_delay_s=0.1,
        queued=0,
        in_flight=1,
        returns_per_s=rate,
        minion_returns_per_s=rate,
        master_points=points,
        pss_by_role={"MWorker default": rss - 100, "EventPublisher": 100.0},
    )


def _consumer(backlogs: list[int], rate: float = 100.0) -> ConsumerRun:
    start = 1000.0
    samples = [
        ConsumerSample(start + t, 150 * t + b, 150 * t, b, 1024 * (50 + b // 100), 0)
        for t, b in enumerate(backlogs)
    ]
    return ConsumerRun.from_samples(
        rate, samples, start, len(backlogs) - 1, rows_stored=150 * (len(backlogs) - 1)
    )


def _variant(
    name: str,
    *,
    storm_s: float,
    ping_s: float,
    rss: float,
    backlogs: list[int],
    lost: int = 0,
    peak_jobs: int = 3,
    cpu: dict[str, float] | None = None,
) -> VariantResult:
    result = VariantResult(name, LIMITS if name == "on" else None, submitted=10)
    result.accepted = 10
    result.ended_by = "all expected returns arrived"
    result.storm_s = storm_s
    result.submit_s = storm_s / 10
    result.expected_returns = 1000
    result.received_cache = result.received_bus = 1000 - lost
    result.peak_minion_jobs = peak_jobs
    result.samples = [_sample(1, rss - 50, 2000), _sample(2, rss, 2000)]
    result.pings = [Ping(float(t), ping_s, PING_TARGETS, 0.1, 1.0) for t in range(5)]
    result.consumer = _consumer(backlogs)
    # CPU seconds per role; the consumer engine's is not the master's
    result.master_cpu_by_role = cpu or {"MWorker default": 9.0, "main": 1.0}
    result.master_cpu_s = sum(
        seconds
        for name, seconds in result.master_cpu_by_role.items()
        if ENGINE_NAME not in name
    )
    return result


def _text(results: list[VariantResult]) -> str:
    found = goals(results, LIMITS, DECISIONS)
    return "\n".join(goal_lines(found) + why_lines(found))


def test_a_ratio_says_by_how_much_it_misses_its_goal() -> None:
    assert ratio_text(13.4, 10.0, 1.1) == (
        "1.34x, goal <= 1.1x: missed by 0.24x",
        False,
    )
    assert ratio_text(2.0, 10.0, 0.2) == ("0.20x, goal <= 0.2x: met", True)
    # compared as printed: 1.1000000000000001 is 1.10x
    assert ratio_text(1100.0, 1000.0, 1.1)[1] is True
    assert ratio_text(1.0, 0.0, 1.1)[1] is None


def test_every_goal_met_leaves_no_why_section() -> None:
    on = _variant("on", storm_s=1000, ping_s=1.0, rss=1000, backlogs=[0, 50, 20])
    off = _variant(
        "off", storm_s=1000, ping_s=10.0, rss=1000, backlogs=[0, 9000, 20000]
    )
    found = goals([on, off], LIMITS, DECISIONS)
    assert [g.met for g in found] == [True] * len(found)
    text = _text([on, off])
    assert (
        "presence pings answered within their 10 s timeout: on 100.0 % "
        "(5 of 5 ticks, 0 skipped), goal >= 99 %: met" in text
    )
    assert "storm duration on 1000 s vs off 1000 s: 1.00x, goal <= 1.1x: met" in text
    assert "master CPU per return on 10.0 ms vs off 10.0 ms: 1.00x" in text
    assert "lost returns with the limiter on: 0, goal 0: met (off: 0 lost)" in text
    # the consumer: bounded on, how far it grew off
    assert "peak 50 events (0 s of work) at 1 s, final 20 at 2 s" in text
    assert "limiter off: peak 20000 events (200 s of work) at 2 s, final 20000" in (
        text
    )
    assert "received 320 = stored 300 + waiting 20" in text
    assert "Why goals were missed" not in text


def test_missed_goals_say_by_how_much_and_bring_the_runs_data_on_why() -> None:
    on = _variant(
        "on",
        storm_s=1340,
        ping_s=8.0,
        rss=1200,
        backlogs=[0, 4000, 8000],
        lost=3,
        peak_jobs=12,
    )
    on.pings_skipped = 1
    off = _variant("off", storm_s=1000, ping_s=10.0, rss=1000, backlogs=[0, 1, 2])
    text = _text([on, off])

    assert "on 83.3 % (5 of 6 ticks, 1 skipped), goal >= 99 %: missed by 15.7" in text
    assert "1.34x, goal <= 1.1x: missed by 0.24x" in text
    assert "1.20x, goal <= 1.05x: missed by 0.15x" in text
    assert "lost returns with the limiter on: 3, goal 0: missed by 3" in text
    assert "at most 12 jobs in flight on one minion, goal <= 10: missed by 2" in text
    assert "backlog bounded with the limiter on" in text and ": NOT met" in text

    why = text[text.index("## Why goals were missed") :]
    assert "- presence pings answered:" in why
    assert "a return waited about 20 s behind those in flight" in why
    assert "- master PSS peak:" in why and "MWorkers (every pool) +200 MiB" in why
    assert "997 in the job cache" in why
    assert "events reached the consumer at 4150/s on average" in why
    assert "`<report>-analysis.md`" in why  # room for the analysis by hand


def test_memory_is_compared_with_the_mworkers_of_every_pool_as_one() -> None:
    """Both masters have four MWorkers: the limiter's split into two pools,
    off's in one. The why names what really costs more (the queue manager),
    not the exempt pool, whose memory the smaller default pool saves."""
    on = _variant("on", storm_s=1000, ping_s=1.0, rss=528, backlogs=[0, 1])
    off = _variant("off", storm_s=1000, ping_s=1.0, rss=472, backlogs=[0, 1])
    on.samples[-1].pss_by_role = {
        "MWorker default": 106.0,
        "MWorker exempt": 96.0,
        "MWorkerQueue": 101.0,
        "RateLimitQueueManager": 66.0,
        "main": 159.0,
    }
    off.samples[-1].pss_by_role = {
        "MWorker default": 218.0,
        "MWorkerQueue": 97.0,
        "main": 157.0,
    }
    found = {g.name: g for g in goals([on, off], LIMITS, DECISIONS)}

    pss = found["master PSS peak"]
    assert pss.met is False
    assert pss.why == [
        "at each variant's PSS peak, the processes with the most more memory "
        "on than off: RateLimitQueueManager +66 MiB, MWorkerQueue +4 MiB, "
        "main +2 MiB"
    ]


def test_without_the_limiter_off_variant_relative_goals_are_not_measured() -> None:
    on = _variant("on", storm_s=100, ping_s=1.0, rss=1000, backlogs=[0, 1, 2])
    found = goals([on], LIMITS, DECISIONS)
    relative = [g for g in found if "vs off -" in g.line]
    assert [g.name for g in relative] == [
        "storm duration",
        "master CPU per return",
        "master PSS peak",
    ]
    assert all(g.met is None and "not measured" in g.line for g in relative)
    assert "Why goals were missed" not in _text([on])


def test_a_run_without_a_consumer_does_not_pass_the_consumer_goal() -> None:
    on = _variant("on", storm_s=100, ping_s=1.0, rss=1000, backlogs=[])
    on.consumer = None
    consumer = [g for g in goals([on], LIMITS, DECISIONS) if "consumer" in g.name]
    assert [g.met for g in consumer] == [None]
    assert "(--consumer-rate 0)" in consumer[0].line


def test_the_lost_goal_says_what_the_minions_retries_did_in_each_variant() -> None:
    """Off lost returns after its minions' tries timed out: the goal line
    counts its retries, give-ups, errors and duplicates beside the loss."""
    on = _variant("on", storm_s=1000, ping_s=1.0, rss=1000, backlogs=[0, 5], lost=2)
    off = _variant("off", storm_s=1000, ping_s=9.0, rss=1000, backlogs=[0, 5], lost=7)
    off.minion_return_retries, off.minion_returns_given_up = 30, 12
    off.minion_return_errors, off.duplicate_returns = 7, 11
    on.minion_return_retries = 4
    text = _text([on, off])
    assert (
        "lost returns with the limiter on: 2, goal 0: missed by 2 (off: 7 lost; "
        "the minions retried 30 returns, gave up 12 jobs and reported 7 return "
        "errors; 11 duplicate returns on the bus)" in text
    )
    why = text[text.index("## Why goals were missed") :]
    assert "the minions retried 4 returns, gave up 0 jobs" in why


def test_a_consumer_that_lost_events_fails_its_goal() -> None:
    on = _variant("on", storm_s=100, ping_s=1.0, rss=1000, backlogs=[0, 1, 2])
    assert on.consumer is not None
    on.consumer.rows_stored = 100  # fewer rows than the 300 it counted stored
    lost = next(g for g in goals([on], LIMITS, DECISIONS) if "events" in g.name)
    assert lost.met is False
    assert "(200 missing)" in lost.line


def test_a_flooded_consumer_is_told_how_long_the_storm_would_have_to_last() -> None:
    on = _variant("on", storm_s=2, ping_s=1.0, rss=1000, backlogs=[0, 4000, 8000])
    backlog = next(g for g in goals([on], LIMITS, DECISIONS) if "backlog" in g.name)
    assert backlog.met is False
    # received 8300 in the storm, at 100/s, at most 3000 waiting at the end
    assert "would have had to last at least 53 s, not 2 s" in " ".join(backlog.why)


def test_the_headline_counts_pings_answered_in_time_and_divides_by_no_timeout() -> None:
    on = _variant("on", storm_s=1000, ping_s=2.0, rss=1000, backlogs=[0, 5])
    on.pings[0] = Ping(0.0, 3.0, PING_TARGETS - 1, 0.1, 1.0)  # one target missing
    # every target, the last after the timeout
    on.pings[1] = Ping(1.0, 10.0, PING_TARGETS - 1, 0.1, 1.0, bus_s=14.0)
    on.pings_skipped = 2  # two ticks that could not even send their ping
    off = _variant("off", storm_s=1000, ping_s=37.3, rss=1000, backlogs=[0, 5])
    for ping in off.pings:
        ping.returned = 2  # the off pings all timed out
    (ping_goal,) = [g for g in goals([on, off], LIMITS, DECISIONS) if "ping" in g.name]
    assert ping_goal.met is False
    assert "on 42.9 % (3 of 7 ticks, 2 skipped)" in ping_goal.line
    assert "(off: 0.0 % (0 of 5 ticks, 0 skipped))" in ping_goal.line
    # completed pings only: the 14 s ping and the off timeouts have no time
    assert "completed pings p50 / p99: on 2.00 / 2.00 s; off - (none" in (
        ping_goal.line
    )
    assert "37.3" not in ping_goal.line and "x, goal" not in ping_goal.line


def test_a_storm_cut_by_max_wait_is_never_the_divisor_of_its_duration() -> None:
    on = _variant("on", storm_s=900, ping_s=1.0, rss=1000, backlogs=[0, 5])
    off = _variant("off", storm_s=1800, ping_s=1.0, rss=1000, backlogs=[0, 5])
    off.ended_by = "max wait of 1800s reached"
    (duration,) = [g for g in goals([on, off], LIMITS, DECISIONS) if "dur" in g.name]
    assert duration.met is None and "x, goal" not in duration.line
    assert "off at least 1800 s: not measured, limiter off was cut short" in (
        duration.line
    )
    # on cut within the goal: a lower bound, not a pass
    on.ended_by, off.ended_by = "max wait of 1800s reached", "all returns"
    (duration,) = [g for g in goals([on, off], LIMITS, DECISIONS) if "dur" in g.name]
    assert duration.met is None and duration.line.endswith("not measured")
    assert "storm duration on at least 900 s vs off 1800 s" in duration.line


def _runs(on_seconds: tuple[float, ...]) -> list[VariantResult]:
    """A run per value: the limiter-on storm that long, off's 1000 s."""
    results = []
    for run, on_s in enumerate(on_seconds, start=1):
        for name, seconds in (("on", on_s), ("off", 1000.0)):
            result = _variant(
                name, storm_s=seconds, ping_s=1.0, rss=1000, backlogs=[0, 5]
            )
            result.run = run
            results.append(result)
    return results


def test_over_runs_a_goal_is_met_when_the_median_run_meets_it() -> None:
    from benchmarks.storm.goals import goals_over_runs

    # the storm with the limiter on takes 1.0x, 1.3x and 1.05x of off's
    results = _runs((1000, 1300, 1050))
    found = {g.name: g for g in goals_over_runs(results, LIMITS, DECISIONS)}
    duration = found["storm duration"]
    assert duration.met is True
    assert duration.line.startswith("- storm duration: met in 2 of 3 runs: met")
    assert "  - run 2: storm duration on 1300 s vs off 1000 s: 1.30x" in duration.line
    assert all(fact.startswith("run 2: ") for fact in duration.why)


def test_over_runs_a_goal_missed_in_most_runs_is_not_met() -> None:
    from benchmarks.storm.goals import goals_over_runs

    results = _runs((1300, 1300, 1000))
    found = {g.name: g for g in goals_over_runs(results, LIMITS, DECISIONS)}
    assert found["storm duration"].met is False
    assert "met in 1 of 3 runs: NOT met" in found["storm duration"].line
    # timed once for the storm: one line, not the same line once per run
    decision = found["one decision"]
    assert decision.line.startswith("- one decision of the criteria module")
    assert "run 1" not in decision.line
    # one run: its own goals, unchanged
    single = goals_over_runs(results[:2], LIMITS, DECISIONS)
    assert [g.line for g in single] == [
        g.line for g in goals(results[:2], LIMITS, DECISIONS)
    ]


def test_a_master_that_took_fewer_jobs_ran_a_storm_that_is_not_compared() -> None:
    """Off timed out on most submissions and ran a smaller storm, sooner:
    its duration is no yardstick, and the goal says why instead of "met"."""
    on = _variant("on", storm_s=1400, ping_s=1.0, rss=1000, backlogs=[0, 50, 20])
    off = _variant("off", storm_s=1600, ping_s=10.0, rss=1000, backlogs=[0, 90, 20])
    off.accepted = 4
    off.submit_errors = [
        "state.apply: Salt request timed out. The master is not responding.",
    ] * 6
    found = {g.name: g for g in goals([on, off], LIMITS, DECISIONS)}
    duration = found["storm duration"]
    assert duration.met is None
    assert duration.line == (
        "- storm duration on 1400 s vs off 1600 s: not measured, not the same "
        "storm: off took 4 of 10 jobs (6 submissions failed: "
        "state.apply: Salt request timed out.) (goal <= 1.1x of off)"
    )


def test_the_limiter_is_held_to_every_variant_a_user_could_run_instead() -> None:
    """On is as fast as off but slower and costlier than tuned: the goals
    name both ratios and are missed, each why naming the variant it beats."""
    on = _variant(
        "on",
        storm_s=1000,
        ping_s=1.0,
        rss=1000,
        backlogs=[0, 5],
        cpu={
            "MWorker default": 9.0,
            "queue manager": 3.0,
            CONSUMER_ROLE: 5.0,
        },
    )
    off = _variant("off", storm_s=1000, ping_s=1.0, rss=1000, backlogs=[0, 5])
    tuned = _variant("tuned", storm_s=800, ping_s=1.0, rss=1000, backlogs=[0, 5])
    found = {g.name: g for g in goals([on, off, tuned], LIMITS, DECISIONS)}

    duration = found["storm duration"]
    assert duration.met is False
    assert duration.line == (
        "- storm duration on 1000 s vs off 1000 s: 1.00x, goal <= 1.1x: met; "
        "vs tuned 800 s: 1.25x, goal <= 1.1x: missed by 0.15x"
    )
    assert [fact.split(";")[0] for fact in duration.why] == [
        "submitting the storm took 100 s on vs 80 s tuned"
    ]
    # the consumer's 5 s are its own, not the master's: 12 ms, not 17 ms
    cpu = found["master CPU per return"]
    assert cpu.met is False
    assert "master CPU per return on 12.0 ms vs off 10.0 ms: 1.20x" in cpu.line
    assert "vs tuned 10.0 ms: 1.20x" in cpu.line
    assert cpu.why[0].endswith("than off: queue manager +3.00 ms")
    # every other variant's pings and consumer are shown beside on's
    pings = found["presence pings answered"].line
    assert "(off: 100.0 % (5 of 5 ticks, 0 skipped); tuned: 100.0 %" in pings
    assert "limiter off: peak 5 events" in found["event consumer backlog"].line
    assert "; tuned: peak 5 events" in found["event consumer backlog"].line
    assert "(off: 0 lost) (tuned: 0 lost)" in found["lost returns"].line


def test_a_ratio_goal_met_against_one_variant_and_unmeasured_against_another_is_not_met() -> (
    None
):
    on = _variant("on", storm_s=1000, ping_s=1.0, rss=1000, backlogs=[0, 5])
    off = _variant("off", storm_s=1800, ping_s=1.0, rss=1000, backlogs=[0, 5])
    off.ended_by = "max wait of 1800s reached"
    tuned = _variant("tuned", storm_s=1000, ping_s=1.0, rss=1000, backlogs=[0, 5])
    found = {g.name: g for g in goals([on, off, tuned], LIMITS, DECISIONS)}
    duration = found["storm duration"]
    assert duration.met is None
    assert "vs off at least 1800 s: not measured, limiter off was cut short" in (
        duration.line
    )
    assert "vs tuned 1000 s: 1.00x, goal <= 1.1x: met" in duration.line
