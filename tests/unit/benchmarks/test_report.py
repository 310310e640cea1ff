"""What every benchmark's report file is made of (benchmarks.report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import report


def test_a_regenerated_report_keeps_and_links_its_analysis_written_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    assert "analysis" not in report.write("storm", "# Storm\n").read_text()
    analysis = tmp_path / "storm-analysis.md"
    analysis.write_text("What the run shows.\n")
    text = report.write("storm", "# Storm, again\n").read_text()
    assert text.startswith("# Storm, again\n")
    assert text.rstrip().endswith("[storm-analysis.md](storm-analysis.md)")
    assert analysis.read_text() == "What the run shows.\n"


def test_runs_written_to_json_read_back_as_runs_with_their_median() -> None:
    """A report's data file reads back as it was written: a measurement's
    runs keep the median and spread a report shows of them."""
    import json
    from dataclasses import dataclass, field

    @dataclass
    class Cell:
        lag_s: report.Runs = field(default_factory=report.Runs)

    written = report.data_json({"cell": Cell(report.Runs([0.5, 2, 1.0]))})
    cell = report.from_plain(Cell, json.loads(written)["cell"])
    assert isinstance(cell.lag_s, report.Runs)
    assert (cell.lag_s.median, cell.lag_s.spread) == (1.0, "0.5-2.0")
    assert all(isinstance(value, float) for value in cell.lag_s)
