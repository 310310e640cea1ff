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
