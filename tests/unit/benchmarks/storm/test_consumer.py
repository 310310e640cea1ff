"""The event consumer's run in the storm: its samples on the storm's clock
and the verdict "bounded", from made-up samples.

"Bounded" is the consumer goal's verdict: it must say no to a backlog that
floods the consumer and to one still growing when the storm ends.
"""

from __future__ import annotations

import pytest

from benchmarks.storm.consumer import BOUND_S, ConsumerRun, slope
from harness.consumer import ConsumerSample

START = 5000.0  # the storm's start, epoch seconds


def _run(backlogs: list[int], rate: float = 100.0, storm_s: float | None = None):
    samples = [
        ConsumerSample(START + t, 10 * t + b, 10 * t, b, 1024 * (100 + b // 100), 0)
        for t, b in enumerate(backlogs)
    ]
    return ConsumerRun.from_samples(
        rate, samples, START, storm_s if storm_s is not None else len(backlogs) - 1
    )


def test_only_samples_of_the_storm_are_kept_and_rss_is_in_mib() -> None:
    samples = [
        ConsumerSample(START - 1, 5, 5, 0, 2048, 0),
        ConsumerSample(START + 2, 9, 7, 2, 3072, 1),
        ConsumerSample(START + 10.5, 12, 9, 3, 3072, 1),  # the storm's end
        ConsumerSample(START + 12, 20, 11, 9, 3072, 1),  # while counting
    ]
    run = ConsumerRun.from_samples(100.0, samples, START, 10.0, rows_stored=9)
    assert [(p.t, p.backlog, p.rss_mb, p.write_errors) for p in run.points] == [
        (2.0, 2, 3.0, 1),
        (10.5, 3, 3.0, 1),
    ]
    assert run.unaccounted == 0 and run.missing_rows == 0


def test_a_backlog_that_rises_and_falls_back_under_the_bound_is_bounded() -> None:
    run = _run([0, 200, 800, 1500, 900, 400, 350, 420, 380, 390, 380])
    assert run.peak is not None and run.peak.backlog == 1500
    assert run.peak.t == 3.0
    assert run.final is not None and run.final.backlog == 380
    assert run.bounded() is True


def test_a_backlog_beyond_its_seconds_of_work_is_not_bounded() -> None:
    rate = 100.0
    run = _run([0, int(rate * BOUND_S) + 1, 0, 0, 0], rate=rate)
    assert run.bound == rate * BOUND_S
    assert run.bounded() is False


def test_a_backlog_still_growing_in_the_second_half_is_not_bounded() -> None:
    run = _run([10 * t for t in range(20)])  # 10 events/s more, well under the bound
    assert run.peak is not None and run.peak.backlog < run.bound
    assert run.trend() == pytest.approx(10.0)
    assert run.bounded() is False


def test_how_long_a_storm_must_last_for_the_consumer_to_keep_up() -> None:
    run = _run([0, 0, 0, 0, 0], rate=2.0)  # received 40 over the storm
    assert run.bound == 60
    assert run.storm_needed_s() == 0.0
    flooded = _run([0, 100, 200], rate=1.0)  # received 220, bound 30
    assert flooded.storm_needed_s() == pytest.approx(190.0)


def test_no_sample_is_no_verdict() -> None:
    assert ConsumerRun(100.0).storm_needed_s() is None
    assert ConsumerRun(100.0).bounded() is None
    assert ConsumerRun(100.0).event_rate() is None


def test_the_event_rate_is_taken_over_the_storm() -> None:
    run = _run([0, 0, 0, 0, 0])  # received grows 10 per second
    assert run.event_rate() == pytest.approx(10.0)


def test_events_neither_stored_nor_waiting_nor_in_the_table_are_counted() -> None:
    samples = [ConsumerSample(START + 1, 100, 60, 30, 1024, 0)]
    run = ConsumerRun.from_samples(100.0, samples, START, 1.0, rows_stored=55)
    assert run.unaccounted == 10
    assert run.missing_rows == 5


def test_slope_is_least_squares() -> None:
    assert slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert slope([(0, 1)]) is None
    assert slope([(1, 1), (1, 5)]) is None
