"""The tour's sizes: storm jobs long enough that the minions, not the
master, are the bottleneck, and a storm timeout that covers the work."""

from __future__ import annotations

import pytest

from tour.options import DemoOptions, storm_limits


@pytest.mark.parametrize("minions,seconds", [(10, 1.0), (200, 2.0), (1000, 10.0)])
def test_job_seconds_grow_with_the_fleet(minions: int, seconds: float) -> None:
    options = DemoOptions(minions=minions)
    assert options.job_seconds() == seconds
    # the fleet returns no faster than one master takes returns in
    assert minions * options.minion_slots / options.job_seconds() <= 200


def test_a_given_job_length_wins() -> None:
    assert DemoOptions(minions=1000, storm_sleep=0.5).job_seconds() == 0.5


def test_storm_timeout_covers_the_work_on_one_minion() -> None:
    options = DemoOptions(minions=1000, storm_jobs=12)
    work = options.storm_jobs * options.job_seconds() / options.minion_slots
    assert options.storm_timeout() > 2 * work


def test_limits_pace_by_the_master_and_cap_each_minion() -> None:
    limits = storm_limits(DemoOptions(minions=200, minion_slots=2))
    assert limits.max_master_jobs == 400
    assert limits.max_minion_jobs == 4
    assert DemoOptions().storm_jobs > limits.max_minion_jobs


def test_command_line_reproduces_the_sizes() -> None:
    from tour.cli import build_parser

    options = DemoOptions(minions=50, storm_jobs=9, pillar_sample=7)
    words = options.command_line().split(" -- ", 1)[1].split()
    args = build_parser().parse_args(words)
    assert (args.minions, args.storm_jobs, args.pillar_sample) == (50, 9, 7)
