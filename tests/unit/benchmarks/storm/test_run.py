"""Running the storm in more than one sitting: the finished runs are kept,
``--resume`` goes on from them, and refuses runs that would not compare."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report
from benchmarks.storm.accounting import Ping, Sample, VariantResult
from benchmarks.storm.consumer import ConsumerPoint, ConsumerRun
from benchmarks.storm.options import StormOptions
from benchmarks.storm.report import report_lines
from harness.errors import HarnessError
from harness.ratelimit import RateLimiting

# the module: benchmarks.storm exports its ``run`` function under that name
storm_run = importlib.import_module("benchmarks.storm.run")


def _result(name: str, run: int) -> VariantResult:
    result = VariantResult(
        name,
        RateLimiting(exempt_pool_workers=2, exempt=("test.ping",))
        if name == "on"
        else None,
        run,
        submitted=200,
        accepted=200,
        storm_s=1973.5,
        ended_by="all expected returns arrived",
        outcomes=Counter({"published": 150, "queued": 50}),
        short_in_cache={"20261127211400000000": [9, 10, 10]},
        master_cpu_by_role={"MWorker default": 5.5},
        started=f"2026-11-27 2{run}:14",
    )
    result.samples = [
        Sample(1.0, 500.0, None, 3, 4, 100.0, 99.0, pss_by_role={"main": 50.0})
    ]
    result.pings = [Ping(1.0, 0.8, 10, 0.1, 0.2), Ping(2.0, 10.0, 3)]
    result.consumer = ConsumerRun(150.0, [ConsumerPoint(1.0, 10, 5, 5, 80.5, 0)], 7)
    return result


def test_a_result_reads_back_as_it_was_written() -> None:
    result = _result("on", 2)
    again = report.from_plain(
        VariantResult, json.loads(report.data_json({"r": result}))["r"]
    )
    assert again == result
    assert isinstance(again.outcomes, Counter)
    assert isinstance(again.samples[0], Sample) and again.consumer is not None
    assert again.limiter is not None and again.limiter.exempt == ("test.ping",)


class _Storm:
    """``run`` with its stacks replaced: each variant returns a made-up
    result; ``stop_at`` (run, variant) is stopped like Ctrl-C."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        self.ran: list[tuple[str, int]] = []
        self.reported: list[VariantResult] = []
        self.stop_at: tuple[int, str] | None = None
        monkeypatch.setattr(storm_run, "LOGS_ROOT", tmp_path / "logs")
        monkeypatch.setattr(storm_run, "decide_benchmark", lambda *a: [])
        monkeypatch.setattr("harness.fleet.cache_keys", lambda count: None)
        monkeypatch.setattr(storm_run, "run_variant", self._variant)
        monkeypatch.setattr(storm_run, "write_report", self._report)

    def _variant(self, name: str, options: Any, *args: Any) -> VariantResult:
        run_no = args[2]
        if self.stop_at == (run_no, name):
            raise KeyboardInterrupt
        self.ran.append((name, run_no))
        return _result(name, run_no)

    def _report(self, results: list[VariantResult], *args: Any) -> Path:
        self.reported = results
        return Path("storm.md")


def test_an_interrupted_storm_goes_on_from_its_last_finished_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    storm.stop_at = (2, "on")  # run 2 runs off first (a rotated order)
    with pytest.raises(KeyboardInterrupt):
        storm_run.run(StormOptions(runs=3))
    assert storm.ran == [("on", 1), ("off", 1), ("off", 2)]

    # run 2's off had finished, but half a run is not kept: its ratios
    # would compare variants measured in different sittings

    storm.ran, storm.stop_at = [], None
    storm_run.run(StormOptions(runs=3, resume=True))
    assert storm.ran == [("off", 2), ("on", 2), ("on", 3), ("off", 3)]
    assert [(r.name, r.run) for r in storm.reported] == [
        ("on", 1),
        ("off", 1),
        *storm.ran,
    ]
    assert storm.reported[0] == _result("on", 1)


def test_a_finished_storm_can_be_given_more_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    storm_run.run(StormOptions(runs=1, variants=("on",)))
    storm_run.run(StormOptions(runs=2, variants=("on",), resume=True))
    assert storm.ran == [("on", 1), ("on", 2)]
    assert [r.run for r in storm.reported] == [1, 2]
    # fewer runs than kept: the report has those --runs names
    storm_run.run(StormOptions(runs=1, variants=("on",), resume=True))
    assert storm.ran == [("on", 1), ("on", 2)]
    assert [r.run for r in storm.reported] == [1]


def test_resume_refuses_what_would_not_compare(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    with pytest.raises(HarnessError, match="nothing to resume"):
        storm_run.run(StormOptions(resume=True))

    storm_run.run(StormOptions(runs=1))
    with pytest.raises(HarnessError, match="only --runs may change") as refused:
        storm_run.run(StormOptions(runs=3, jobs=100, resume=True))
    assert "--jobs 200 (now 100)" in str(refused.value)
    with pytest.raises(HarnessError, match=r"--variants on,off \(now on\)"):
        storm_run.run(StormOptions(runs=3, variants=("on",), resume=True))

    kept = tmp_path / "logs" / "storm" / storm_run.RUNS_FILE
    older = json.loads(kept.read_text())
    del older["measured"]
    kept.write_text(json.dumps(older))
    with pytest.raises(HarnessError, match="kept by an older saltfleet"):
        storm_run.run(StormOptions(runs=3, resume=True))
    storm_run.run(StormOptions(runs=1))

    monkeypatch.setattr(storm_run, "code_fingerprint", lambda: "changed")
    with pytest.raises(HarnessError, match="benchmark changed"):
        storm_run.run(StormOptions(runs=3, resume=True))
    # the kept run is still there for a resume once the code is back
    assert (tmp_path / "logs" / "storm" / storm_run.RUNS_FILE).exists()
    # run 1 once, and once more after the older file was refused
    assert storm.ran == [("on", 1), ("off", 1)] * 2


def test_a_storm_without_resume_starts_again_and_sets_the_kept_runs_aside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    kept = tmp_path / "logs" / "storm" / storm_run.RUNS_FILE
    storm_run.run(StormOptions(runs=2, variants=("on",)))
    first = kept.read_text()
    storm.stop_at = (1, "on")
    with pytest.raises(KeyboardInterrupt):
        storm_run.run(StormOptions(runs=2, variants=("on",)))
    # started again: nothing kept of its own yet, the earlier runs set aside
    assert not kept.exists()
    aside = tmp_path / "logs" / f"storm.previous-{storm_run.RUNS_FILE}"
    assert aside.read_text() == first
    # the printed way back works: its command, then --resume
    hint = capsys.readouterr().out
    subprocess.run(["bash", "-c", hint.split("`")[1]], check=True)
    storm.ran, storm.stop_at = [], None
    storm_run.run(StormOptions(runs=2, variants=("on",), resume=True))
    assert storm.ran == [] and [r.run for r in storm.reported] == [1, 2]


def test_runs_are_kept_under_the_code_they_ran_even_if_it_changes_meanwhile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    readings = iter(["before", "edited"])
    monkeypatch.setattr(storm_run, "code_fingerprint", lambda: next(readings))
    storm_run.run(StormOptions(runs=1, variants=("on",)))
    # the tree was edited while it ran: a resume on the edited tree is refused
    with pytest.raises(HarnessError, match="benchmark changed"):
        storm_run.run(StormOptions(runs=2, variants=("on",), resume=True))
    assert storm.ran == [("on", 1)]


def test_the_code_fingerprint_follows_the_measured_code_not_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for top in storm_run.MEASURED_CODE:
        (tmp_path / top).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "salt" / "UPSTREAM").write_text("3008.3\n")
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "stack.py").write_text("A = 1\n")
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    monkeypatch.setattr(storm_run, "RESULTS", results)
    before = storm_run.code_fingerprint(tmp_path)
    (results / "storm.md").write_text("# a report\n")
    (tmp_path / "harness" / ".stack.py.swp").write_text("an editor's\n")
    assert storm_run.code_fingerprint(tmp_path) == before
    (tmp_path / "harness" / "stack.py").write_text("A = 2\n")
    assert storm_run.code_fingerprint(tmp_path) != before
    changed = storm_run.code_fingerprint(tmp_path)
    (tmp_path / "salt" / "UPSTREAM").write_text("3008.4\n")
    assert storm_run.code_fingerprint(tmp_path) != changed


def test_resume_compares_every_option_but_the_runs_even_those_not_reproduced() -> None:
    measured = storm_run._what_is_measured(StormOptions(runs=3, resume=True))
    every = {spec.name for spec in dataclasses.fields(StormOptions)}
    assert set(measured) == every - {"runs", "resume"}
    assert measured["variants"] == ["on", "off"]


def test_a_resume_with_every_run_kept_only_reports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = _Storm(monkeypatch, tmp_path)
    extracted: list[Path] = []

    def extract(work: Path) -> Path:
        extracted.append(work)
        return work / "salt"

    monkeypatch.setattr(storm_run, "extract_pristine", extract)
    storm_run.run(StormOptions(runs=1, variants=("on", "tuned")))
    assert len(extracted) == 1
    storm_run.run(StormOptions(runs=1, variants=("on", "tuned"), resume=True))
    # nothing left to run: no pristine tree extracted for it
    assert len(extracted) == 1
    assert storm.ran == [("on", 1), ("tuned", 1)]
    assert [(r.name, r.run) for r in storm.reported] == storm.ran


def test_resume_is_not_part_of_the_reproduce_line() -> None:
    assert "--resume" not in StormOptions(resume=True, jobs=100).reproduce_command()


def test_the_report_says_when_each_run_started() -> None:
    results = [_result("on", 1), _result("off", 1), _result("on", 2)]
    text = "\n".join(str(line) for line in report_lines(results, [], StormOptions()))
    assert "Runs started (UTC): run 1 2026-11-27 21:14, run 2 2026-11-27 22:14." in text
