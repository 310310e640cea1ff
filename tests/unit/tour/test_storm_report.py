"""What the storm section reports: jobs complete when every expected
return (targets minus excluded minions) arrived, ping quantiles, and the
off/on table with the limiter's price."""

from __future__ import annotations

from tour.ratelimit import comparison_table, limiter_cost
from tour.storm import return_jid, storm_progress
from tour.storm_result import Ping, StormResult


def _pings(*seconds: float) -> list[Ping]:
    return [Ping(0, s, 5, 5) for s in seconds]


def _storm(label: str, seconds: float, peak: int, **extra) -> StormResult:
    result = StormResult(
        label,
        jids=["1", "2"],
        targets=10,
        returns={"1": 10, "2": 8},
        return_times=[],
        seconds=seconds,
        peak_minion_jobs=peak,
        pings=_pings(0.5, 1.0, 4.0),
    )
    for key, value in extra.items():
        setattr(result, key, value)
    return result


def test_a_job_completes_when_its_expected_returns_arrived() -> None:
    off = _storm("off", 10, 13)
    assert off.completed == 1 and off.missing_returns == 2
    on = _storm("on", 12, 3, excluded={"2": 2}, outcomes={"1": ["published"]})
    assert on.completed == 2 and on.missing_returns == 0


def test_ping_quantiles() -> None:
    storm = _storm("off", 10, 13)
    assert storm.ping_quantile(0.5) == 1.0
    assert storm.ping_quantile(1.0) == 4.0
    assert _storm("on", 1, 1, pings=[]).ping_quantile(0.95) == 0.0
    assert _storm("on", 1, 1, pings=[Ping(0, 60, 5, 3)]).unanswered_pings == 2


def test_comparison_table() -> None:
    off = _storm("off", 10, 13)
    on = _storm(
        "on",
        12,
        3,
        excluded={"2": 2},
        outcomes={"1": ["published"], "2": ["published_excluding"]},
    )
    table = comparison_table([off, on], slots=2)
    assert table[0] == "| | limiter off | limiter on |"
    assert table[1] == "| --- | --- | --- |"
    assert "| jobs completed (every return in) | 1 of 2 | 2 of 2 |" in table
    assert (
        "| most jobs on one minion at once (it runs 2; pings count) | 13 | 3 |" in table
    )
    assert "| minions left out at capacity | 0 | 2 |" in table
    assert (
        "| rate-limiting outcomes | - | 1 published, 1 published_excluding |" in table
    )


def test_each_latency_cell_says_how_many_pings_it_rests_on() -> None:
    # the limiter-off line rested on 2 samples without saying so
    few = _storm("off", 10, 13, pings=_pings(0.5, 4.0))
    many = _storm("on", 12, 3, pings=_pings(*(0.1 * i for i in range(1, 41))))
    table = comparison_table([few, many], slots=2)
    row = next(line for line in table if line.startswith("| presence ping"))
    assert row == (
        "| presence ping p50 / p95 / max (samples) "
        "| 0.50s / 4.00s / 4.00s (2 pings: p95 = max) "
        "| 2.10s / 3.80s / 4.00s (40 pings) |"
    )


def test_the_price_is_named_only_when_there_is_one() -> None:
    assert limiter_cost(_storm("off", 69, 13), _storm("on", 102, 3)) == (
        "The price: the storm took 102s instead of 69s, the master waiting for "
        "returns before it publishes more."
    )
    assert limiter_cost(_storm("off", 20, 13), _storm("on", 15, 3)) == (
        "The storm took no longer with the limiter."
    )


def test_a_worse_median_ping_with_the_limiter_is_stated() -> None:
    off = _storm("off", 20, 13, pings=_pings(0.2, 0.3, 5.0))
    on = _storm("on", 25, 3, pings=_pings(0.8, 0.9, 1.0))
    assert limiter_cost(off, on) == (
        "The price: the storm took 25s instead of 20s, the master waiting for "
        "returns before it publishes more. The median presence ping is worse "
        "with the limiter: 0.90s instead of 0.30s."
    )


def test_return_jid() -> None:
    assert return_jid("salt/job/2026/ret/evil-0001") == "2026"
    assert return_jid("salt/job/2026/new") is None
    assert return_jid("salt/ratelimit/job/2026/published") is None


def test_a_storm_says_how_far_it_is() -> None:
    # storms ran for minutes with nothing printed
    storm = _storm("on", 0, 0, excluded={"2": 2})
    assert storm_progress(storm, 30.4) == (
        "storm (on): 18 of 18 returns in, 2 of 2 jobs complete, 30s"
    )
    storm = _storm("off", 0, 0)
    assert storm_progress(storm, 10) == (
        "storm (off): 18 of 20 returns in, 1 of 2 jobs complete, 10s"
    )
