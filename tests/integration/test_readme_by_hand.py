"""The README's by-hand block, run verbatim as a user would paste it (in its
order, except that the reads right after ``up`` run side by side).

Each command must succeed and show what the README says it shows; the pillar rows put at every scope must reach the
minion in merge order (the minion's row wins); ``down`` must leave nothing of
the stack running. The stack lives in a root of the test's own
(``$SALTFLEET_STACK_ROOT``): the user's stack in ``.saltfleet/stack`` is
neither read nor changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from harness.cli import DEFAULT_ROOT, ROOT_ENV
from tests.conftest import alive

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
USER_STACK = ROOT / DEFAULT_ROOT
MARKER = "<!-- by-hand:"


def readme_commands() -> list[str]:
    """The command lines of the README block that follows the by-hand marker."""
    text = (ROOT / "README.md").read_text()
    start = text.index("```sh\n", text.index(MARKER)) + len("```sh\n")
    return [
        line for line in text[start : text.index("```", start)].splitlines() if line
    ]


def _run(command: str, root: Path, temp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        stdin=subprocess.DEVNULL,
        # the stack in a root of the test's own; the temp directory one the
        # test can check is left as it was found
        env={**os.environ, ROOT_ENV: str(root), "TMPDIR": str(temp)},
    )


def _salt_lines(output: str) -> list[str]:
    """The output without the nox session's vendoring line."""
    return [line for line in output.splitlines() if not line.startswith("vendor:")]


def _snapshot(path: Path) -> list[tuple[str, float]]:
    """What the user's stack directory holds, with modification times."""
    if not path.exists():
        return []
    return sorted((str(p), p.stat().st_mtime) for p in path.rglob("*"))


def _leftovers(temp: Path) -> str:
    """What was left in the temp directory, how old, and which processes
    still run from it: enough to tell a copy kept as in use from one kept as
    fresh (harness.postgres.remove_stale_copies)."""
    now = time.time()
    lines = ["left in the temp dir:"]
    for path in sorted(temp.iterdir()):
        lines.append(f"  {path.name}: modified {now - path.stat().st_mtime:.0f} s ago")
    for proc in psutil.process_iter(["pid", "exe", "status", "cmdline"]):
        exe = proc.info["exe"] or ""
        if exe.startswith(str(temp)):
            lines.append(
                f"  in use by pid {proc.info['pid']} ({proc.info['status']}): {exe}"
            )
    return "\n".join(lines)


def test_the_readme_by_hand_block_works_verbatim(open_tmp) -> None:
    root = open_tmp / "stack"
    stack_state = root / "stack.json"
    temp = open_tmp / "tmp"
    temp.mkdir()
    temp.chmod(0o1777)  # like /tmp: an unprivileged PostgreSQL may need it
    user_stack = _snapshot(USER_STACK)
    commands = readme_commands()
    assert commands[0].endswith(
        "up --minions 20 --ext-pillar db --rate-limiting --pkgstates"
    )
    assert commands[-1].endswith("-- down --purge")
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    pids: list[int] = []
    # The commands between `up` and the first write only read the stack and
    # do not depend on each other, so they run side by side: each spends most
    # of its time starting nox and Salt, or waiting for the stack.
    first_write = next(i for i, c in enumerate(commands) if ' sql "INSERT' in c)
    batches = [
        commands[:1],
        commands[1:first_write],
        *([command] for command in commands[first_write:-1]),
    ]
    try:
        for batch in batches:
            with ThreadPoolExecutor(max_workers=len(batch)) as pool:
                results = list(pool.map(lambda c: _run(c, root, temp), batch))
            for command, result in zip(batch, results, strict=True):
                output = f"{command}\n{result.stdout}{result.stderr}"
                assert result.returncode == 0, output
                outputs[command] = result.stdout
                errors[command] = result.stderr
            if not pids and stack_state.exists():
                state = json.loads(stack_state.read_text())
                pids = [p["pid"] for p in state["processes"]]
    finally:
        down = _run(commands[-1], root, temp)
    assert down.returncode == 0, down.stderr
    assert "stopped 4 processes" in down.stdout
    assert pids and alive(pids) == []
    assert not root.exists(), "down --purge removes the stack's data"
    assert _snapshot(USER_STACK) == user_stack
    assert sorted(p.name for p in temp.iterdir()) == [], _leftovers(temp)

    by_name = {c.split(" -- ", 1)[1]: out for c, out in outputs.items()}
    # up prints every process it started with its pid and log
    up = by_name["up --minions 20 --ext-pillar db --rate-limiting --pkgstates"]
    started = [
        line.split(" pid ", 1)[1].split()[0]
        for line in _salt_lines(up)
        if " pid " in line and "(log " in line
    ]
    assert started == [str(pid) for pid in pids], up
    # the stack the text describes: PostgreSQL, master, real minion, 20 simulated
    status = _salt_lines(by_name["status"])
    assert [line.split()[0] for line in status if " pid " in line] == [
        "postgres",
        "salt-master",
        "salt-minion",
        "evil_minions",
    ]
    assert all(" running " in line for line in status if " pid " in line), status
    fleet = {f"evil-{n:04d}" for n in range(1, 21)} | {"saltfleet-minion-1"}
    ping = _salt_lines(by_name["salt '*' test.ping"])
    assert {line[:-1] for line in ping if line.endswith(":")} == fleet
    assert [line.strip() for line in ping if line.startswith(" ")] == ["True"] * 21
    # rate limiting on, with Salt's defaults
    limits = _salt_lines(by_name["salt-run ratelimit.status"])
    assert limits[limits.index("max_master_jobs:") + 1].strip() == "2000"
    keys = _salt_lines(by_name["salt-key -L"])
    assert keys[0] == "Accepted Keys:"
    assert set(keys[1 : keys.index("Denied Keys:")]) == fleet
    assert _salt_lines(by_name["salt-call test.echo hello"]) == ["local:", "    hello"]
    # the Queries section's examples: SUSE minions with more than 4 GB, and
    # the first nine simulated minions' addresses
    big = _salt_lines(
        by_name[
            "salt-run query.query minion fields=name,os,mem_total,cpus "
            "filter='os == \"SUSE\" and mem_total > 4096'"
        ]
    )
    assert big[0].split() == ["Name", "OS", "MemTotal", "CPUs"]
    suse = [line.split() for line in big[1:] if line.startswith("evil-")]
    assert suse and all(r[1] == "SUSE" and int(r[2].rstrip("M")) > 4096 for r in suse)
    assert "(nodata)" not in "\n".join(big)
    addresses = _salt_lines(
        by_name[
            "salt-run query.query minion fields=name,ip4.0 names='evil-000*' "
            "separator='|' header=False"
        ]
    )
    assert [a for a in addresses if a.startswith("evil-")] == [
        f"evil-000{n}|10.0.0.{n + 1}" for n in range(1, 10)
    ]
    inserts = [c for c in commands if ' sql "INSERT' in c]
    assert len(inserts) == 4
    for command in inserts:  # a fresh stack: every row is new
        assert "INSERT 0 1" in outputs[command].splitlines(), outputs[command]
    rows = by_name["sql \"SELECT pillar FROM salt_pillar_rows('saltfleet-minion-1')\""]
    motds = [json.loads(r).get("motd") for r in rows.splitlines() if r[:1] == "{"]
    assert [m for m in motds if m in ("global", "org", "group", "minion")] == [
        "global",
        "org",
        "group",
        "minion",
    ]
    refreshed = by_name["salt saltfleet-minion-1 saltutil.refresh_pillar"]
    assert _salt_lines(refreshed) == ["saltfleet-minion-1:", "    True"], refreshed
    item = by_name["salt saltfleet-minion-1 pillar.item motd unmask=True"]
    salt_words = [
        w
        for line in item.splitlines()
        if not line.startswith("vendor:")
        for w in line.split()
    ]
    assert salt_words == ["saltfleet-minion-1:", "----------", "motd:", "minion"]
    assert by_name["salt '*' test.ping"] == outputs[commands[-2]]
    # a fresh stack: the package state's first revision, for both minions
    saved = _salt_lines(
        by_name[
            "salt-run pkgstate.set base bash 'curl>=0.12' vim@latest telnet@removed"
        ]
    )
    assert saved[saved.index("revision:") + 1].strip() == "1"
    assigned = by_name["salt-run pkgstate.assign base minions=evil-0001,evil-0002"]
    assert "target:\n          evil-0001" in assigned
    assert "target:\n          evil-0002" in assigned
    # the package state reached the simulated minion through the master, and
    # every state of it succeeds there (test=True: vim would be upgraded)
    applied = by_name["salt evil-0001 state.apply pkgstate test=True"]
    for state_id in (
        "pkgstate-installed-bash",
        "pkgstate-installed-curl",
        "pkgstate-latest-vim",
        "pkgstate-removed-telnet",
    ):
        assert f"ID: {state_id}" in applied, applied
    assert "Result: False" not in applied, applied
    assert "\nFailed:    0\n" in applied, applied
    status = _salt_lines(by_name["salt-run pkgstate.status evil-0001"])
    assert status[status.index("counts:") + 2].split() == ["pending:"]
    assert status[status.index("counts:") + 3].strip() == "4"
    # salt-run destroys its Runner and MasterMinion itself (patch 0019)
    for command, error in errors.items():
        if " salt-run " in command:
            assert "unclosed Runner" not in error, error
            assert "unclosed MasterMinion" not in error, error
    restarted = by_name["restart master --master-opts harness/examples/master-opts.yml"]
    assert "salt-master restarted with " in restarted, restarted
