"""The box probe: a fixed piece of work timed in CPU milliseconds."""

from __future__ import annotations

from benchmarks.hostspeed import cpu_probe_ms


def test_the_probe_times_its_work_and_more_work_takes_longer() -> None:
    small = cpu_probe_ms(rounds=3, steps=20_000)
    large = cpu_probe_ms(rounds=3, steps=400_000)
    assert small > 0
    # twenty times the work: more CPU time whatever else the box runs
    assert large > small
