"""The box probe: a fixed piece of work timed in CPU milliseconds."""

from __future__ import annotations

from benchmarks.hostspeed import cpu_probe_ms


def test_the_probe_times_its_work_and_more_work_takes_longer() -> None:
    small = cpu_probe_ms(rounds=3, steps=20_000)
    large = cpu_probe_ms(rounds=3, steps=400_000)
    assert small > 0
    # twenty times the work: more CPU time whatever else the box runs
    assert large > small


def test_a_probed_run_has_both_probes_and_says_them(capsys) -> None:
    from benchmarks.hostspeed import probed

    with probed("[on]") as probe:
        assert probe.before_ms > 0 and probe.after_ms == 0
    assert probe.after_ms > 0
    said = capsys.readouterr().out
    assert said.startswith("[on] box probe ") and "ms before the run" in said
