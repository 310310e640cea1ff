"""The heartbeat line: what a user sees while a long test runs."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest

from series.pytest_plugins.saltfleet_progress import Heartbeat
from tests.conftest import FakeClock

PLUGIN = "series.pytest_plugins.saltfleet_progress"


def test_a_line_names_each_running_test_and_how_long_it_has_run() -> None:
    clock = FakeClock()
    beat = Heartbeat(io.StringIO(), 10, clock)
    beat.started("tests/a.py::slow")
    clock.now += 5
    assert beat.due() is None
    beat.started("tests/b.py::slower")  # prints nothing: the silence goes on
    clock.now += 5
    assert (
        beat.due()
        == "... still running: tests/a.py::slow (10 s), tests/b.py::slower (5 s)"
    )
    clock.now += 65
    assert beat.due() == (
        "... still running: tests/a.py::slow (1 min 15 s), "
        "tests/b.py::slower (1 min 10 s)"
    )
    assert beat.due() is None  # the next one 10 s after this one
    clock.now += 10
    beat.finished("tests/a.py::slow")
    clock.now += 10
    assert beat.due() == "... still running: tests/b.py::slower (1 min 30 s)"


def test_no_line_while_nothing_runs() -> None:
    clock = FakeClock()
    beat = Heartbeat(io.StringIO(), 10, clock)
    beat.started("tests/a.py::quick")
    beat.finished("tests/a.py::quick")
    clock.now += 60
    assert beat.due() is None


def _pytest(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_slow.py").write_text(
        textwrap.dedent(
            """
            import time

            def test_sleeps():
                print("the test's own output")
                time.sleep(2)
            """
        )
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "base"),
            *args,
            str(tmp_path / "test_slow.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_a_real_pytest_run_names_the_test_past_output_capture(
    tmp_path, workers
) -> None:
    result = _pytest(tmp_path, "--saltfleet-heartbeat", "0.5", *workers)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\n... still running: test_slow.py::test_sleeps (" in result.stdout
    assert "the test's own output" not in result.stdout  # capture still works


def test_a_heartbeat_of_zero_seconds_is_a_usage_error(tmp_path) -> None:
    result = _pytest(tmp_path, "--saltfleet-heartbeat", "0")
    assert result.returncode == 4
    assert "--saltfleet-heartbeat must be more than 0 seconds" in result.stderr
    assert "Traceback" not in result.stderr
