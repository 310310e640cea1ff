"""The tour's report: the verdict line, a section per scenario group, the
failure reason in place of the finding, and the capabilities not in this
build; the terminal summary names the report's path."""

from __future__ import annotations

from pathlib import Path

from tour.registry import Capability, Finding, ScenarioOutcome, Verdict
from tour.report import (
    TourRecord,
    render_markdown,
    render_summary,
    write_report,
)

FACTS = {"Salt": "3008.3 with patches/series applied", "minions": "20 | simulated"}
QUERY = Capability("query API", "salt.runners.query", "salt-run query.query")


def _outcome(section: str, name: str, verdict: Verdict, summary: str, body=None):
    return ScenarioOutcome(section, name, verdict, 1.25, Finding(summary, body or []))


def _record(*outcomes: ScenarioOutcome, pending=(QUERY,)) -> TourRecord:
    return TourRecord(FACTS, list(outcomes), list(pending), [], 42.0)


def test_all_passed() -> None:
    record = _record(
        _outcome("Fleet", "answers", Verdict.PASSED, "21 of 21", ["All **21**."]),
        _outcome("Pillars", "merge", Verdict.PASSED, "20 equal", ["![plot](p.png)"]),
    )
    text = render_markdown(record)
    assert record.ok
    assert text.startswith("# saltfleet demo\n\n**2 of 2 scenarios passed** in 42s.")
    assert "| minions | 20 \\| simulated |" in text  # a cell's pipe is escaped
    assert "| Fleet | answers | passed | 1.2s | 21 of 21 |" in text
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections == ["## Fleet", "## Pillars", "## Not in this build"]
    assert "All **21**." in text and "![plot](p.png)" in text
    assert "| query API | salt-run query.query | `salt.runners.query` |" in text


def test_a_failure_shows_its_reason_not_a_body() -> None:
    record = _record(
        _outcome("Rate limiting", "storm", Verdict.FAILED, "3 of 8 jobs completed"),
        _outcome("Pillars", "down", Verdict.SKIPPED, "external PostgreSQL"),
    )
    assert not record.ok
    assert record.verdict_line() == "0 of 2 scenarios passed, 1 skipped, 1 FAILED"
    text = render_markdown(record)
    assert "### storm — FAILED\n\nFAILED: 3 of 8 jobs completed" in text
    assert "### down — skipped\n\nskipped: external PostgreSQL" in text


def test_skipped_alone_does_not_fail_the_tour() -> None:
    record = _record(_outcome("P", "down", Verdict.SKIPPED, "external PostgreSQL"))
    assert record.ok


def test_everything_in_build() -> None:
    text = render_markdown(_record(pending=()))
    assert "Every capability of the series is in this build." in text


def test_present_capability_without_scenario() -> None:
    record = _record(pending=())
    record.without_scenario = [QUERY]
    text = render_markdown(record)
    assert "In this build but not yet shown by a scenario:\n\n- query API" in text
    summary = render_summary(record, Path("r.md"))
    assert "  in this build, no scenario yet: query API" in summary.splitlines()


def test_summary_lines(tmp_path: Path) -> None:
    record = _record(
        _outcome("Fleet", "answers", Verdict.PASSED, "21 of 21"),
        _outcome("Rate limiting", "storm", Verdict.FAILED, "3 of 8 jobs"),
    )
    path = write_report(record, tmp_path)
    assert path == tmp_path / "report.md"
    assert path.read_text() == render_markdown(record)
    summary = render_summary(record, path).splitlines()
    assert summary[0] == "saltfleet demo: 1 of 2 scenarios passed, 1 FAILED in 42s"
    assert summary[1] == "  ok answers  21 of 21"
    assert summary[2] == "  !! storm    3 of 8 jobs"
    assert summary[3] == "  not in this build: query API"
    assert summary[-1] == f"report: {path}"
