"""What the storm report says: the goals' verdicts, lost returns, the files.

The report is the benchmark's only output, so its sentences and the names
of the files it writes are tested with made-up results here.
"""

from __future__ import annotations

import json

import pytest

from benchmarks import report
from benchmarks.storm.accounting import PING_TARGETS, Ping, Sample, VariantResult
from benchmarks.storm.consumer import ConsumerRun
from benchmarks.storm.decide import DecideResult
from benchmarks.storm.options import StormOptions
from benchmarks.storm.report import _lost_cell, report_lines, write_report
from harness.consumer import ENGINE_NAME, ConsumerSample
from harness.ratelimit import RateLimiting


def test_missing_returns_are_called_lost_only_when_the_storm_ran_to_its_end():
    done = VariantResult("on", None, expected_returns=10, received_cache=8)
    done.ended_by = "all expected returns arrived"
    assert not done.cut and done.missing_returns == 2
    cut = VariantResult("on", None, expected_returns=10, received_cache=8)
    cut.ended_by = "max wait of 600s reached"
    assert cut.cut and cut.missing_returns == 2

    assert _lost_cell(done) == "2"
    assert _lost_cell(cut) == "n/a: cut, 2 missing"


def _sample(t: float, rss: dict[str, float]) -> Sample:
    return Sample(
        t=t,
        master_pss_mb=sum(rss.values()),
        bus_delay_s=0.1,
        queued=0,
        in_flight=1,
        returns_per_s=100.0,
        minion_returns_per_s=100.0,
        pss_by_role=rss,
    )


def _limiter_on() -> VariantResult:
    on = VariantResult(
        "on", RateLimiting(exempt_pool_workers=1), submitted=2, accepted=2
    )
    on.ended_by = "all expected returns arrived"
    on.expected_returns = on.received_cache = 20
    on.peak_minion_jobs = 2
    on.samples = [
        _sample(1, {"MWorker default": 400.0, "RateLimitQueueManager": 90.0}),
        _sample(2, {"MWorker default": 450.0, "RateLimitQueueManager": 91.0}),
    ]
    on.pings = [Ping(1, 12.0, PING_TARGETS, 0.1, 1.0), Ping(2, 3.0, 3, 0.2, None)]
    return on


def _text(
    results: list[VariantResult],
    decisions: list[DecideResult] | None = None,
    options: StormOptions | None = None,
) -> str:
    """The report's Markdown for ``results``."""
    options = options or StormOptions(minions=10)
    return "\n".join(map(str, report_lines(results, decisions or [], options)))


def _cells(text: str, header_has: str, row_starts: str) -> dict[str, str]:
    """A table row of ``text`` by its column names: the first table whose
    header has ``header_has``, its row that starts with ``row_starts``."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if header_has in line)
    header = lines[at]
    row = next(line for line in lines[at:] if line.startswith(row_starts))
    return dict(zip(header.split("|"), row.split("|"), strict=True))


def test_the_report_gives_each_goal_its_verdict_and_names_what_grew() -> None:
    on = _limiter_on()
    decisions = [DecideResult("nothing in flight", "publish", [5.0, 6.0])]
    text = _text([on], decisions, StormOptions(minions=10, jobs=2, submitters=3))
    assert "at most 2 jobs in flight on one minion, goal <= 10: met" in text
    assert "lost returns with the limiter on: 0, goal 0: met" in text
    # one variant: the goals relative to limiter off are not measured
    # the ping that took 12 s was not answered within its 10 s timeout
    assert "on 0.0 % (0 of 2 ticks, 0 skipped), goal >= 99 %: missed" in text
    assert "worst p99 6.0 us <= 50 us: met" in text
    assert "backlog bounded with the limiter on: not measured" in text
    # the ping that never got a first return is counted, not dropped
    assert "(1 never)" in text
    # the process that grew most comes first
    assert text.index("| on #1 | MWorker default | 400 | 450 | +50 |") < text.index(
        "| on #1 | RateLimitQueueManager | 90 | 91 | +1 |"
    )
    assert "worker pool of their own with 1 MWorker(s)" in text
    assert "by 3 client threads" in text


def test_the_end_counts_show_retries_duplicates_give_ups_and_losses() -> None:
    """Per variant: the fleet's retries, give-ups and errors beside the
    duplicates the bus showed and the returns the job cache never got."""
    off = VariantResult("off", None, expected_returns=20, received_cache=17)
    off.ended_by = "fleet idle and no return for 30s"
    off.duplicate_returns = 4
    off.minion_return_retries = 9
    off.minion_returns_given_up = 6
    off.minion_return_errors = 3
    decisions = [DecideResult("nothing in flight", "publish", [5.0])]
    text = _text([_limiter_on(), off], decisions)
    table = text[text.index("## End counts") :]
    cells = _cells(table, "| variant", "| off #1 |")
    assert cells[" lost "] == " 3 "
    assert cells[" duplicate returns (bus) "] == " 4 "
    assert cells[" minion return retries "] == " 9 "
    assert cells[" minion jobs given up "] == " 6 "
    assert cells[" minion return errors "] == " 3 "
    assert "`return_retry_tries` tries" in table


def test_the_end_counts_name_the_jobs_the_job_cache_is_short_of() -> None:
    """A loss names its jobs, to be looked up in the master's log by jid;
    a variant that lost nothing gets no line."""
    off = VariantResult("off", None, expected_returns=2000, received_cache=1000)
    off.ended_by = "all expected returns arrived"
    off.short_in_cache = {"20261125065000123456": [0, 1000, 1000]}
    text = _text([_limiter_on(), off])
    assert (
        "- off #1: 1 job(s) short in the job cache: 20261125065000123456: "
        "0 of 1000 in the job cache, 1000 on the bus"
    ) in text
    assert "- on #1:" not in text


def test_the_end_counts_say_which_master_did_not_take_every_job() -> None:
    off = VariantResult("off", None, submitted=100, accepted=39)
    off.ended_by = "all expected returns arrived"
    off.submit_errors = ["test.sleep: Salt request timed out. The master is busy."]
    off.unbooked_jobs, off.unbooked_returns = 3, 2500
    text = _text([_limiter_on(), off])
    assert (
        "- off #1: off took 39 of 100 jobs (1 submissions failed: "
        "test.sleep: Salt request timed out.); 3 of the jobs whose submission "
        "failed ran anyway (2500 returns on the bus under jids no submitter "
        "was given)"
    ) in text
    assert "| 3 (2500 returns) |" in text


def test_the_report_says_how_to_run_it_again_under_its_own_name() -> None:
    options = StormOptions(jobs=400, variants=("on",), output_name="storm-long-400")
    decisions = [DecideResult("nothing in flight", "publish", [5.0])]
    text = _text([_limiter_on()], decisions, options)
    assert (
        "Reproduce: `nox -s bench -- storm --variants on --jobs 400 "
        "--output-name storm-long-400`." in text
    )


def test_the_report_says_what_the_prio_variants_change() -> None:
    decisions = [DecideResult("nothing in flight", "publish", [5.0])]
    text = _text([_limiter_on()], decisions, StormOptions(variants=("on", "prio")))
    assert (
        "The minion-side alternative: minions that send the returns of "
        "`test.ping` and `saltutil.find_job` before the returns waiting on "
        "their request channel (`return_priority_functions`, the series' "
        "minion option), prio on limiter off's master. " in text
    )
    assert "--variants on,prio" in text
    assert "Pools (" not in text
    both = _text(
        [_limiter_on()], decisions, StormOptions(variants=("prio", "pools-prio"))
    )
    assert "prio on limiter off's master and pools-prio on pools' master" in both
    # pools-prio's master is pools': the report says what that master is
    assert "Pools' master (pools-prio's): the series without the limiter" in both
    assert "Limiter off's master (prio's): one pool." in both
    assert "minion-side" not in _text([_limiter_on()], decisions, StormOptions())


def test_output_name_names_the_report_its_plot_and_its_data(
    tmp_path, monkeypatch
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    decisions = [DecideResult("nothing in flight", "publish", [5.0, 6.0])]
    options = StormOptions(variants=("on",), output_name="storm-long-400")

    on = _limiter_on()
    on.consumer = ConsumerRun.from_samples(
        150.0,
        [
            ConsumerSample(100.0, 10, 5, 5, 4096, 0),
            ConsumerSample(101.0, 30, 20, 10, 8192, 0),
        ],
        99.0,
        2.0,
        rows_stored=20,
    )
    path = write_report([on], decisions, options)

    assert path == tmp_path / "storm-long-400.md"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "storm-long-400-consumer.png",
        "storm-long-400-timeline.png",
        "storm-long-400.json",
        "storm-long-400.md",
    ]
    assert "![storm over time, run 1](storm-long-400-timeline.png)" in path.read_text()
    assert "![event consumer over time, run 1](storm-long-400-consumer.png)" in (
        path.read_text()
    )
    data = json.loads((tmp_path / "storm-long-400.json").read_text())
    assert [v["name"] for v in data["variants"]] == ["on"]
    assert data["decisions"][0]["p99_us"] == 6.0
    assert data["variants"][0]["consumer"]["points"][1]["backlog"] == 10


def test_a_report_of_several_runs_plots_every_run_beside_the_first_run_s_timeline(
    tmp_path, monkeypatch
) -> None:
    """The headline gives medians and ranges; the runs plot shows each run's
    value, so a run far from the others is seen, not averaged away."""
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    options = StormOptions(variants=("on",), runs=3, output_name="storm-runs")
    runs = []
    for run in (1, 2, 3):
        on = _limiter_on()
        on.run = run
        on.storm_s = 100.0 * run
        runs.append(on)

    path = write_report(runs, [], options)

    assert (tmp_path / "storm-runs-runs.png").stat().st_size > 0
    assert "![headline measures, every run](storm-runs-runs.png)" in path.read_text()
    assert "![storm over time, run 1](storm-runs-timeline.png)" in path.read_text()


def test_the_report_shows_the_consumer_and_the_options_that_shape_the_run() -> None:
    on = _limiter_on()
    on.consumer = ConsumerRun.from_samples(
        150.0,
        [
            ConsumerSample(10.0 + t, 200 * t, 150 * t, 50 * t, 1024 * 60, 0)
            for t in range(4)
        ],
        10.0,
        3.0,
        rows_stored=450,
    )
    options = StormOptions(consumer_rate=150, slice_min_targets=50)
    on.limiter = options.rate_limiting()  # the limiter the run had
    decisions = [DecideResult("nothing in flight", "publish", [5.0])]
    text = _text([on], decisions, options)
    assert "stores at most 150 events/s in PostgreSQL" in text
    assert "published in slices of at least 50 minions" in text
    assert "## Event consumer" in text
    # limiter, events/s in, rate, peak (at s), final, trend, RSS peak / final,
    # received, stored, rows, failed writes
    assert (
        "| on #1 | 200 | 150 | 150 (3) | 150 | +50.0 | 60 | 60 | 600 | 450 | 450 | 0 |"
        in text
    )
    assert "--slice-min-targets 50" in text
    no_consumer = StormOptions(consumer_rate=0)
    assert "No event consumer." in _text([_limiter_on()], decisions, no_consumer)


def test_the_driver_cpu_is_reported_apart_from_the_masters() -> None:
    on = _limiter_on()
    on.master_cpu_s, on.driver_cpu_s = 100.0, 37.0
    text = _text([on], options=StormOptions(minions=10, jobs=2))
    cells = _cells(text, "master CPU s", "| on #1 | 0 (")
    assert (cells[" master CPU s "], cells[" driver CPU s "]) == (" 100 ", " 37 ")
    # the limiter-on master's exempt MWorker is one of the same four
    assert "beside the 3 of the default pool" in text
    assert "Every variant's master has 4 MWorkers in all" in text


def test_the_limiter_s_budget_over_the_storm_is_shown_for_the_limiter_only() -> None:
    on = _limiter_on()
    for sample, budget in zip(on.samples, (100, 700), strict=True):
        sample.budget = budget
    on.samples.append(_sample(3, {"MWorker default": 450.0}))
    on.samples[-1].budget = 400
    off = VariantResult("off", None, submitted=2)
    off.samples = [_sample(1, {"MWorker default": 400.0})]
    text = _text([on, off], options=StormOptions(minions=10, jobs=2))
    cells = {
        name: _cells(text, "budget min", f"| {name} #1 | 0 (") for name in ("on", "off")
    }
    assert cells["on"][" budget min / median / max "] == " 100 / 400 / 700 "
    assert cells["off"][" budget min / median / max "] == " - "


def test_the_wait_the_limiter_s_budget_saw_and_its_cuts_are_shown() -> None:
    on = _limiter_on()
    for sample, wait, cuts in zip(on.samples, (0.4, 2.6), (0, 1), strict=True):
        sample.limiter_delay_s, sample.cuts = wait, cuts
    on.samples.append(_sample(3, {"MWorker default": 450.0}))
    on.samples[-1].limiter_delay_s, on.samples[-1].cuts = 1.2, 1
    # data sampled before the storm recorded the limiter's wait
    before = _limiter_on()
    before.run = 2
    off = VariantResult("off", None, submitted=2)
    off.samples = [_sample(1, {"MWorker default": 400.0})]
    text = _text([on, before, off], options=StormOptions(minions=10, jobs=2))
    column = " limiter wait p50 / max s (cuts) "
    assert _cells(text, "limiter wait", "| on #1 | 0 (")[column] == " 1.20 / 2.6 (1) "
    assert _cells(text, "limiter wait", "| on #2 | 0 (")[column] == " - "
    assert _cells(text, "limiter wait", "| off #1 | 0 (")[column] == " - "


def test_the_headline_is_the_median_of_the_runs_with_their_range() -> None:
    from benchmarks.storm.report import _headline

    runs = []
    for run, storm_s in enumerate((100.0, 300.0, 200.0), start=1):
        result = VariantResult("off", None, run, expected_returns=10, received_cache=10)
        result.ended_by = "all expected returns arrived"
        result.storm_s = storm_s
        runs.append(result)
    cut = VariantResult("off", None, 4, expected_returns=10, received_cache=2)
    cut.ended_by = "max wait 1800s"
    cut.storm_s = 1800.0
    text = "\n".join(map(str, _headline([*runs, cut])))
    row = next(line for line in text.splitlines() if line.startswith("| off |"))
    # the cut run is counted, and left out of the medians: 1800 s is the cap
    assert row.startswith("| off | 4 (1 cut) | - | - | - | 200.0 (100.0-300.0) |")


def test_cpu_per_return_counts_the_returns_of_jobs_nobody_was_told_ran() -> None:
    """A master that ran jobs whose submission had timed out spent its CPU
    on their returns too: they are in the divisor, or its CPU per return
    looks three times what it was."""
    from benchmarks.storm.report import _headline

    off = VariantResult("off", None, expected_returns=27, received_cache=27)
    off.ended_by = "all expected returns arrived"
    off.master_cpu_s = 2.0
    off.unbooked_jobs, off.unbooked_returns = 1, 53
    text = "\n".join(map(str, _headline([off])))
    row = next(line for line in text.splitlines() if line.startswith("| off |"))
    # 2 s over 27 + 53 returns
    assert "| 25.0 |" in row


def test_the_master_s_cpu_per_return_is_shown_by_process_beside_the_consumer_s():
    """Where one variant spends more CPU than another: every role's
    milliseconds per return, the median over the runs; the consumer's
    engine is shown and marked as not the master's."""
    consumer = f"Engine(salt.loaded.ext.engines.{ENGINE_NAME})"
    results = []
    for run, queue_s in enumerate((2.0, 4.0, 3.0), start=1):
        on = _limiter_on()
        on.run = run
        on.master_cpu_by_role = {
            "MWorker default": 10.0,
            "RateLimitQueueManager": queue_s,
            consumer: 6.0,
        }
        off = VariantResult("off", None, run, expected_returns=20, received_cache=20)
        off.ended_by = "all expected returns arrived"
        off.master_cpu_by_role = {"MWorker default": 12.0, consumer: 6.0}
        results += [on, off]
    text = _text(results, options=StormOptions(minions=10, jobs=2))
    section = text[text.index("## Master CPU by process") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:4]
    # 20 returns each: on's queue manager 100-200 ms per return, 150 the median
    assert rows == [
        "| MWorker default | 500.00 (500.00-500.00) | 600.00 (600.00-600.00) |",
        "| RateLimitQueueManager | 150.00 (100.00-200.00) | - |",
        f"| {consumer} (not in master CPU) | 300.00 (300.00-300.00) "
        "| 300.00 (300.00-300.00) |",
    ]


def test_the_fleet_s_and_the_box_s_cpu_are_shown_apart_from_the_master_s() -> None:
    """A job published in slices is that many publications every simulated
    minion receives on the master's own cores: the fleet's CPU and how busy
    the box was are shown beside the master's, not counted in it."""
    on = _limiter_on()
    on.master_cpu_s, on.master_cpu_by_role = 10.0, {"MWorker default": 10.0}
    on.fleet_cpu_s, on.driver_cpu_s = 4.0, 1.0
    on.box_busy_s, on.box_capacity_s = 18.0, 20.0
    off = VariantResult("off", None, expected_returns=20, received_cache=20)
    off.ended_by = "all expected returns arrived"
    off.master_cpu_s, off.master_cpu_by_role = 8.0, {"MWorker default": 8.0}
    text = _text([on, off], options=StormOptions(minions=10, jobs=2))
    cells = _cells(text, "fleet CPU s", "| on #1 | 0 (")
    assert (cells[" fleet CPU s "], cells[" box busy "]) == (" 4 ", " 90% ")
    # a result written before they were taken shows none
    cells = _cells(text, "fleet CPU s", "| off #1 | 0 (")
    assert (cells[" fleet CPU s "], cells[" box busy "]) == (" - ", " - ")
    section = text[text.index("## Master CPU by process") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:5]
    # 20 returns: the fleet's 4 s are 200 ms a return, the box's 18 s 900
    assert rows == [
        "| MWorker default | 500.00 | 400.00 |",
        "| simulated fleet (not in master CPU) | 200.00 | - |",
        "| storm driver (not in master CPU) | 50.00 | - |",
        "| whole box, master included | 900.00 | - |",
    ]
    assert "master CPU per return" in text


def _finished(name: str, run: int) -> VariantResult:
    result = VariantResult(name, None, submitted=2, accepted=2, run=run)
    result.ended_by = "all expected returns arrived"
    result.expected_returns = result.received_cache = 20
    return result


def test_a_storm_without_limiter_on_says_so_once_and_not_what_on_would_run() -> None:
    results = [_finished(name, run) for run in (1, 2, 3) for name in ("off", "prio")]
    text = _text(results, options=StormOptions(variants=("off", "prio")))
    assert text.startswith("# Storm benchmark: limiter off vs prio\n")
    assert "Limiter on:" not in text
    assert "Limiter off: one pool." in text
    assert text.count("limiter on was not run") == 1
    assert "\n## Goals\n" in text and "limiter on vs each other" not in text
    assert "run 2: limiter on" not in text


def test_pools_without_limiter_on_says_what_its_exempt_pool_is() -> None:
    options = StormOptions(variants=("off", "pools-prio"), exempt_pool=2)
    text = _text([_finished("off", 1), _finished("pools-prio", 1)], options=options)
    assert "Pools' master (pools-prio's): the series without the limiter" in text
    assert "worker pool of their own with 2 MWorker(s), beside the 2 of" in text
    assert "Limiter on:" not in text


def test_the_report_says_the_target_delay_the_limiter_ran_with() -> None:
    from harness.ratelimit import salt_slice_defaults

    default = salt_slice_defaults()["target_delay"]

    def intro(options: StormOptions) -> str:
        on = _finished("on", 1)
        on.limiter = options.rate_limiting()
        return _text([on], options=options).split("\n## ")[0]

    at_default = intro(StormOptions(variants=("on",)))
    assert f"waiting {default:g} s (target_delay, Salt's default)" in at_default
    other = intro(StormOptions(variants=("on",), slice_target_delay=default + 2))
    assert f"waiting {default + 2:g} s (target_delay, Salt's is {default:g} s)" in other
    fixed = intro(StormOptions(variants=("on",), slice_target_delay=0))
    assert "a fixed budget of max_master_jobs" in fixed
    unsliced = intro(StormOptions(variants=("on",), slice_min_targets=0))
    assert "published in slices" not in unsliced


def test_the_report_shows_the_box_probe_of_each_run() -> None:
    probed = _finished("off", 1)
    probed.cpu_probe_before_ms, probed.cpu_probe_after_ms = 31.24, 35.06
    old = _finished("prio", 1)  # kept by a saltfleet without the probe
    text = _text([probed, old], options=StormOptions(variants=("off", "prio")))
    column = " box probe ms before / after "
    assert _cells(text, "box probe", "| off")[column] == " 31.2 / 35.1 "
    assert _cells(text, "box probe", "| prio")[column] == " - "
    assert "when it grows with run order, the box slowed down" in text
