"""Reruns of tests that failed only upstream's slow-callback check, with real pytest runs."""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import psutil
import pytest

from series import timing_reruns
from tests.conftest import wait_for

# the shape of the failure Salt 3008's tests/pytests/unit/conftest.py raises
# at teardown when an asyncio callback held the loop for over 50 ms
CONFTEST = textwrap.dedent(
    """
    import pathlib
    import pytest

    @pytest.fixture(autouse=True)
    def slow_callback_check(request):
        yield
        marker = pathlib.Path(__file__).parent / (request.node.name + ".slow")
        if marker.exists():
            left = int(marker.read_text())
            if left:
                marker.write_text(str(left - 1))
                pytest.fail(
                    "asyncio slow-callback threshold of 0.050s exceeded during "
                    "test '%s' (1 violation(s))" % request.node.name
                )
    """
)


def _project(tmp_path, tests, slow=None):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_x.py").write_text(textwrap.dedent(tests))
    for name, times in (slow or {}).items():
        (tmp_path / f"{name}.slow").write_text(str(times))
    return tmp_path


def _run(tree, capture=True, **options):
    pytest_cmd = [sys.executable, "-m", "pytest", "-c", os.devnull, "-q"]
    return timing_reruns.run(
        [*pytest_cmd, "--rootdir", str(tree), "-p", "no:cacheprovider"],
        ["test_x.py"],
        cwd=tree,
        capture=capture,
        timeout=120,
        **options,
    )


TWO_TESTS = """
    def test_fine():
        pass

    def test_handler():
        pass
"""


BROKEN_AND_SLOW = """
    def test_broken():
        assert 1 == 2

    def test_handler():
        pass
"""

SLOW_AND_WRONG = """
    def test_handler():
        assert False, "wrong answer"
"""

HANDLER = "test_x.py::test_handler"


@pytest.mark.parametrize(
    ("tests", "slow", "returncode", "reran", "note", "runs"),
    [
        pytest.param(
            TWO_TESTS,
            1,
            0,
            [HANDLER],
            f"passed when run again alone: {HANDLER}",
            2,
            id="check-failed-once-reruns-alone-and-passes",
        ),
        pytest.param(
            TWO_TESTS,
            5,
            1,
            [HANDLER],
            "did not pass when run again alone",
            3,
            id="check-failed-every-time-fails-after-two-reruns",
        ),
        pytest.param(
            BROKEN_AND_SLOW,
            1,
            1,
            [],
            "",
            1,
            id="any-other-failure-fails-without-a-rerun",
        ),
        pytest.param(
            SLOW_AND_WRONG,
            1,
            1,
            [],
            "",
            1,
            id="failing-its-call-and-the-check-is-not-a-timing-failure",
        ),
    ],
)
def test_what_a_run_does_with_a_timing_failure(
    tmp_path, tests, slow, returncode, reran, note, runs
):
    outcome = _run(_project(tmp_path, tests, slow={"test_handler": slow}))

    assert (outcome.returncode, outcome.reran) == (returncode, reran)
    assert (note in outcome.note) if note else (outcome.note == "")
    assert len(outcome.runs) == runs


def test_a_rerun_runs_only_the_timing_failures_and_says_why(tmp_path):
    outcome = _run(_project(tmp_path, TWO_TESTS, slow={"test_handler": 1}))

    assert f"running them again alone (1 of 2): {HANDLER}" in outcome.output
    assert "1 passed" in outcome.runs[1]
    assert "test_fine" not in outcome.runs[1]


def test_a_passing_run_and_an_empty_one_keep_pytests_exit_code(tmp_path):
    tree = _project(tmp_path, TWO_TESTS)
    assert _run(tree).returncode == 0

    (tree / "test_x.py").write_text("")
    assert _run(tree).returncode == 5  # pytest: no tests collected


def test_the_runs_leave_nothing_in_the_temp_dir(tmp_path, monkeypatch):
    # upstream's tests left tmpXXXX/{pillar,roots} trees and pytest-of-<user>
    # (100 MB a run) in the temp directory after every nox -s tests
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    (tmp_path / "p").mkdir()
    tree = _project(
        tmp_path / "p",
        """
        import tempfile, pathlib

        def test_leaves_a_tree(tmp_path, tmp_path_factory):
            (pathlib.Path(tempfile.mkdtemp()) / "roots").mkdir()
            (tmp_path_factory.mktemp("pillar") / "top.sls").write_text("base: {}")
            (tmp_path / "kept").write_text("x")

        def test_fails_and_pytest_would_keep_its_tmp_path(tmp_path):
            (tmp_path / "kept").write_text("x")
            assert False
        """,
    )

    outcome = timing_reruns.run(
        [sys.executable, "-m", "pytest", "-c", os.devnull, "-p", "no:cacheprovider"],
        ["test_x.py"],
        cwd=tree,
        env={**os.environ, "TMPDIR": str(temp)},
        capture=True,
        timeout=120,
    )

    assert outcome.returncode == 1, outcome.output
    assert "1 failed, 1 passed" in outcome.output
    assert list(temp.iterdir()) == []


def test_the_command_line_needs_the_paths_after_a_double_dash(capsys):
    assert timing_reruns.main(["-q", "tests/unit"]) == 2
    assert "separate pytest's options from the test paths with --" in (
        capsys.readouterr().err
    )
    assert timing_reruns.main(["--reruns", "two", "--", "tests"]) == 2
    assert "--reruns takes a whole number" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "not json", "[]", '{"a": true, "b": false}'])
def test_a_missing_or_mixed_record_is_no_reason_to_rerun(tmp_path, content):
    record = tmp_path / "failed.json"
    if content:
        record.write_text(content)
    assert timing_reruns.timing_only_failures(record) is None


# Salt's check in small: fails at teardown unless a no_blocking(threshold=...)
# marker raises the threshold above what the test "took"
THRESHOLD_CONFTEST = textwrap.dedent(
    """
    import pytest

    def pytest_configure(config):
        config.addinivalue_line("markers", "no_blocking(threshold=None, reason=None)")

    @pytest.fixture(autouse=True)
    def slow_callback_check(request):
        yield
        marker = request.node.get_closest_marker("no_blocking")
        threshold = marker.kwargs["threshold"] if marker else 0.05
        if threshold < 0.2:  # every test here "took" 0.2 s
            pytest.fail("asyncio slow-callback threshold of %.3fs exceeded" % threshold)
    """
)


def test_listed_slow_tests_run_with_a_raised_threshold_and_the_header_says_so(
    tmp_path,
):
    tree = _project(tmp_path, TWO_TESTS)
    (tree / "conftest.py").write_text(THRESHOLD_CONFTEST)
    known = tree / "known-slow"
    known.write_text("# over 50 ms on the pristine release\ntest_x.py::test_handler\n")

    outcome = timing_reruns.run(
        [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(tree)],
        ["test_x.py"],
        cwd=tree,
        reruns=0,
        slow_callbacks=known,
        capture=True,
        timeout=120,
    )

    # the listed test passes; the other one still meets the 50 ms check
    assert outcome.returncode == 1
    assert "FAILED test_x.py::test_fine" in outcome.output or (
        "ERROR test_x.py::test_fine" in outcome.output
    )
    assert (
        "test_x.py::test_handler" not in outcome.output.split("short test summary")[-1]
    )
    assert "1 upstream test(s) known to exceed the 50 ms slow-callback check" in (
        outcome.output
    )


def test_the_command_line_refuses_a_missing_slow_list(capsys, tmp_path):
    missing = tmp_path / "nope"
    assert timing_reruns.main(["--slow-callbacks", str(missing), "--", "t"]) == 2
    assert "--slow-callbacks: no such file" in capsys.readouterr().err


def test_sigterm_stops_pytest_and_leaves_no_temp_dir(tmp_path):
    # nox or CI stopping the run left the pytest child running and a
    # saltfleet-timing-* directory in /tmp
    (tmp_path / "p").mkdir()
    project = _project(
        tmp_path / "p", "import time\ndef test_slow():\n    time.sleep(60)\n"
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "series.timing_reruns",
            "-p",
            "no:cacheprovider",
            "--",
            ".",
        ],
        cwd=project,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    parent = psutil.Process(proc.pid)
    children = wait_for(lambda: parent.children(recursive=True), timeout=30)
    try:
        assert children and any(temp.iterdir())
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "interrupted; pytest was stopped" in err
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
        assert list(temp.iterdir()) == []
    finally:  # a failure leaves nothing running either
        for process in [parent, *children]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        proc.communicate()


# fails its own assertion the first time it runs, passes the second: a test
# that measures wall time on a loaded machine
FLAKY_ONCE = """
    import pathlib

    def test_fine():
        pass

    def test_waits():
        marker = pathlib.Path(__file__).parent / "waited"
        if not marker.exists():
            marker.write_text("1")
            assert False, "data came back before min_wait_time"
"""


def _run_with_sensitive(tree, listed):
    sensitive = tree / "timing-sensitive"
    sensitive.write_text("# a reason\n" + "".join(f"{t}\n" for t in listed))
    return _run(tree, timing_sensitive=sensitive)


def test_a_listed_timing_sensitive_test_runs_again_alone_whatever_failed_it(tmp_path):
    tree = _project(tmp_path, FLAKY_ONCE)

    outcome = _run_with_sensitive(tree, ["test_x.py::test_waits"])

    assert outcome.returncode == 0
    assert outcome.reran == ["test_x.py::test_waits"]
    assert "known timing-sensitive" in outcome.note
    assert len(outcome.runs) == 2


def test_the_same_failure_of_a_test_not_listed_fails_the_run(tmp_path):
    tree = _project(tmp_path, FLAKY_ONCE)

    outcome = _run_with_sensitive(tree, ["test_x.py::test_fine"])

    assert outcome.returncode == 1
    assert outcome.reran == []
    assert len(outcome.runs) == 1


def test_a_missing_timing_sensitive_file_is_a_usage_error(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert timing_reruns.main(["--timing-sensitive", str(missing), "--", "t"]) == 2
    assert "--timing-sensitive: no such file" in capsys.readouterr().err


def test_a_fixed_path_the_tests_made_empty_is_removed_and_others_kept(
    tmp_path, monkeypatch
) -> None:
    made_empty, made_full, there_before = (
        tmp_path / "proc",
        tmp_path / "full",
        tmp_path / "kept",
    )
    there_before.mkdir()
    monkeypatch.setattr(
        timing_reruns, "FIXED_PATHS", (made_empty, made_full, there_before)
    )
    with timing_reruns._fixed_paths_removed():
        made_empty.mkdir()
        made_full.mkdir()
        (made_full / "a-file").write_text("kept: not ours to judge\n")
    assert not made_empty.exists()
    assert (made_full / "a-file").exists()
    assert there_before.is_dir()
