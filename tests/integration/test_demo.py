"""``python -m tour`` at tiny scale, as a user runs it: exit 0, the
report's sections and plots, nothing left running."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

SECTIONS = [
    "## Fleet",
    "## Pillars from PostgreSQL",
    "## Rate limiting",
    "## query API",
    "## load through salt-api",
    "## Module interfaces",
    "## package states",
    "## Not in this build",
]


@pytest.mark.timeout(420)
def test_tour_at_tiny_scale(tmp_path) -> None:
    report_dir = tmp_path / "report"
    result = run_cli(
        "--minions",
        "10",
        "--storm-jobs",
        "8",
        "--pillar-sample",
        "5",
        "--report-dir",
        str(report_dir),
        timeout=400,
        package="tour",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "15 of 15 scenarios passed" in result.stdout
    assert f"report: {report_dir / 'report.md'}" in result.stdout
    report = (report_dir / "report.md").read_text()
    assert [line for line in report.splitlines() if line.startswith("## ")] == SECTIONS
    assert "FAILED" not in report
    for plot in ("ratelimit-ping.png", "ratelimit-returns.png"):
        assert f"]({plot})" in report
        assert (report_dir / plot).stat().st_size > 0
    assert "Salt master overloaded, retry later" in report
    assert "decided_by" in report and "orphan-kept" in report
    assert "inconsistent" in report and "pkgstate.rollback" in report
    assert "stopped everything the demo started" in result.stdout


def test_report_dir_of_other_files_is_refused(tmp_path) -> None:
    taken = tmp_path / "mine"
    taken.mkdir()
    (taken / "notes.txt").write_text("keep me\n")
    result = run_cli("--report-dir", str(taken), timeout=60, package="tour")
    assert result.returncode == 2
    assert "holds files that are not a demo report" in result.stderr
    assert (taken / "notes.txt").read_text() == "keep me\n"
