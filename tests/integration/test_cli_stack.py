"""``python -m harness up / status / down`` and the external-DSN path, as a user runs them."""

from __future__ import annotations

import json

import pytest

from harness.ports import free_port
from harness.postgres import EmbeddedPostgres
from harness.stack import master_layout
from tests.conftest import alive, run_cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def external_postgres(open_tmp_module):
    server = EmbeddedPostgres(open_tmp_module / "pg", free_port(), database="external")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_up_status_down_with_external_dsn(open_tmp, external_postgres) -> None:
    root = open_tmp / "stack"
    dsn = external_postgres.connection.dsn
    up = run_cli("up", "--root", str(root), "--no-minion", "--dsn", dsn)
    assert up.returncode == 0, up.stderr
    state = json.loads((root / "stack.json").read_text())
    pids = [p["pid"] for p in state["processes"]]
    try:
        assert [p["name"] for p in state["processes"]] == ["salt-master"]
        assert "dbname=external" in state["postgres_dsn"]
        status = run_cli("status", "--root", str(root))
        assert status.returncode == 0
        assert "running" in status.stdout
    finally:
        down = run_cli("down", "--root", str(root))
    assert down.returncode == 0, down.stderr
    assert alive(pids) == []
    after = run_cli("status", "--root", str(root))
    assert after.returncode == 2
    assert "no stack is recorded" in after.stderr


def test_unreachable_external_dsn(tmp_path) -> None:
    port = free_port()
    result = run_cli(
        "up",
        "--root",
        str(tmp_path / "s"),
        "--dsn",
        f"postgresql://salt@127.0.0.1:{port}/pillars",
    )
    assert result.returncode == 2
    assert f"cannot reach PostgreSQL at 127.0.0.1:{port}/pillars" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_dsn(tmp_path) -> None:
    result = run_cli(
        "up", "--root", str(tmp_path / "s"), "--dsn", "host=127.0.0.1 port"
    )
    assert result.returncode == 2
    assert "invalid PostgreSQL DSN" in result.stderr


def test_interrupt_during_startup_stops_everything(open_tmp) -> None:
    """Ctrl-C while the stack comes up leaves no process of it behind."""
    import signal
    import subprocess
    import sys
    import time

    import psutil

    from tests.conftest import PROJECT_ROOT

    root = open_tmp / "stack"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "up", "--root", str(root)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal, even when the tests run with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    started: list[int] = []
    try:
        # interrupt once the master exists (its config is written just before it starts)
        deadline = time.monotonic() + 120
        while not master_layout(root).conf_file.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130
        assert "interrupted; everything started was stopped" in err
        assert alive(started) == []
        assert [p.pid for p in _running_under(root)] == []
    finally:
        # whatever failed above, nothing this test started may outlive it
        _stop_by_pid(proc, started, root)


def _stop_by_pid(proc, started: list[int], root) -> None:
    """Stop ``harness up`` and every process it started, by pid (what it
    started before it was interrupted, and anything running under ``root``)."""
    import contextlib

    import psutil

    from harness.processes import stop_process_tree

    known = []
    for pid in alive(started):
        with contextlib.suppress(psutil.NoSuchProcess):
            known.append(psutil.Process(pid))
    known += _running_under(root)
    stop_process_tree(proc.pid, timeout=60, known=known)
    with contextlib.suppress(Exception):
        proc.communicate(timeout=5)


def _running_under(root) -> list:
    """The processes whose command line names a path under ``root``."""
    import psutil

    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(root) in part for part in (p.info["cmdline"] or []))
    ]
