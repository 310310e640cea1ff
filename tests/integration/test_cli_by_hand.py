"""The stack by hand: Salt's own commands through the harness, a master
restarted (by the harness or outside it) stays visible to ``status`` and
stoppable by ``down``, and ``down`` says what it really stopped."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from harness.master import salt_script
from harness.processes import stop_process_tree
from tests.conftest import alive, run_cli

pytestmark = pytest.mark.integration


def _master_pid(root: Path) -> int:
    state = json.loads((root / "stack.json").read_text())
    return next(p["pid"] for p in state["processes"] if p["name"] == "salt-master")


def _all_pids(root: Path) -> list[int]:
    state = json.loads((root / "stack.json").read_text())
    return [p["pid"] for p in state["processes"]]


@pytest.fixture
def stack_root(open_tmp):
    root = open_tmp / "stack"
    up = run_cli("up", "--root", str(root))
    assert up.returncode == 0, up.stderr
    assert "nox -s harness -- salt '*' test.ping" in up.stdout
    started = _all_pids(root)
    try:
        yield root
    finally:
        if (root / "stack.json").exists():
            run_cli("down", "--root", str(root))
        for pid in alive(started):
            stop_process_tree(pid)


def test_salt_commands_run_and_a_restart_keeps_status_and_down_true(
    stack_root: Path, tmp_path: Path
) -> None:
    # one stack for both: bringing one up is the slow part of this file
    ping = run_cli("salt", "--root", str(stack_root), "*", "test.ping", "--out=json")
    assert ping.returncode == 0, ping.stderr
    assert json.loads(ping.stdout) == {"saltfleet-minion-1": True}
    keys = run_cli("salt-key", "--root", str(stack_root), "-L", "--out=json")
    assert json.loads(keys.stdout)["minions"] == ["saltfleet-minion-1"]
    call = run_cli("salt-call", "--root", str(stack_root), "test.echo", "hi")
    assert call.returncode == 0, call.stderr
    assert "hi" in call.stdout

    before = _master_pid(stack_root)
    options = tmp_path / "opts.yml"
    options.write_text("timeout: 17\n")
    restart = run_cli(
        "restart", "master", "--root", str(stack_root), "--master-opts", str(options)
    )
    assert restart.returncode == 0, restart.stderr
    after = _master_pid(stack_root)
    assert after != before and alive([before]) == []
    assert "timeout: 17" in (stack_root / "master/etc/salt/master").read_text()
    status = run_cli("status", "--root", str(stack_root))
    assert status.returncode == 0, status.stdout
    assert "NOT RUNNING" not in status.stdout

    # restarted by hand, as an operator would: the harness follows the pidfile
    psutil.Process(after).terminate()
    psutil.wait_procs([psutil.Process(after)], timeout=30)
    conf = stack_root / "master" / "etc" / "salt"
    subprocess.run([salt_script("salt-master"), "-c", str(conf), "-d"], check=True)
    deadline = time.monotonic() + 60
    status = run_cli("status", "--root", str(stack_root))
    while "restarted outside the harness" not in status.stdout:
        assert time.monotonic() < deadline, status.stdout
        time.sleep(1)
        status = run_cli("status", "--root", str(stack_root))
    assert status.returncode == 0 and "NOT RUNNING" not in status.stdout
    by_hand = _master_pid(stack_root)
    down = run_cli("down", "--root", str(stack_root))
    assert "stopped 3 processes" in down.stdout
    assert alive([by_hand]) == []


def test_down_says_when_nothing_was_running(stack_root: Path) -> None:
    # every daemon gone (with the workers it forked), the record still there
    pids = _all_pids(stack_root)
    for pid in pids:
        stop_process_tree(pid)
    assert alive(pids) == []
    down = run_cli("down", "--root", str(stack_root))
    assert down.returncode == 0
    assert "nothing was running" in down.stdout
    assert "stopped" not in down.stdout
