"""The report directory: a previous report is replaced, anything else is
refused before the stack starts."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from tour.run import prepare_report_dir


def test_new_directory_is_created(tmp_path) -> None:
    path = prepare_report_dir(tmp_path / "a" / "demo")
    assert path.is_dir() and list(path.iterdir()) == []


def test_previous_report_is_replaced(tmp_path) -> None:
    (tmp_path / "report.md").write_text("# old\n")
    (tmp_path / "ratelimit-ping.png").write_bytes(b"png")
    assert list(prepare_report_dir(tmp_path).iterdir()) == []


@pytest.mark.parametrize("other", ["notes.txt", "plots.png"])
def test_other_files_are_refused_and_kept(tmp_path, other: str) -> None:
    if other == "plots.png":  # PNGs without a report: not ours either
        (tmp_path / other).write_bytes(b"png")
    else:
        (tmp_path / "report.md").write_text("# old\n")
        (tmp_path / other).write_text("mine\n")
    with pytest.raises(HarnessError, match="holds files that are not a demo report"):
        prepare_report_dir(tmp_path)
    assert (tmp_path / other).exists()


def test_a_file_in_the_way_is_refused(tmp_path) -> None:
    (tmp_path / "report").write_text("")
    with pytest.raises(HarnessError, match="exists and is not a directory"):
        prepare_report_dir(tmp_path / "report")


def test_too_small_a_storm_is_refused_before_anything_starts(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tour.cli import main

    report_dir = tmp_path / "report"
    assert main(["--storm-jobs", "4", "--report-dir", str(report_dir)]) == 2
    err = capsys.readouterr().err
    assert "error: --storm-jobs 4 is too few" in err
    assert "Traceback" not in err
    assert not report_dir.exists()
