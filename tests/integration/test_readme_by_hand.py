"""The README's by-hand block, run verbatim as a user would paste it.

Each command must succeed; the pillar rows put at every scope must reach the
minion in merge order (the minion's row wins); ``down`` must leave nothing of
the stack running.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import alive

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STACK_STATE = ROOT / ".saltfleet" / "stack" / "stack.json"
MARKER = "<!-- by-hand:"


def readme_commands() -> list[str]:
    """The command lines of the README block that follows the by-hand marker."""
    text = (ROOT / "README.md").read_text()
    start = text.index("```sh\n", text.index(MARKER)) + len("```sh\n")
    return [
        line for line in text[start : text.index("```", start)].splitlines() if line
    ]


def _run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.skipif(
    STACK_STATE.exists(), reason=f"a stack is recorded in {STACK_STATE.parent}"
)
def test_the_readme_by_hand_block_works_verbatim() -> None:
    commands = readme_commands()
    assert commands[0].endswith(
        "up --minions 20 --ext-pillar db --rate-limiting --pkgstates"
    )
    assert commands[-1].endswith("-- down")
    outputs: dict[str, str] = {}
    pids: list[int] = []
    try:
        for command in commands[:-1]:
            result = _run(command)
            assert result.returncode == 0, f"{command}\n{result.stdout}{result.stderr}"
            outputs[command] = result.stdout
            if not pids and STACK_STATE.exists():
                state = json.loads(STACK_STATE.read_text())
                pids = [p["pid"] for p in state["processes"]]
    finally:
        down = _run(commands[-1])
    assert down.returncode == 0, down.stderr
    assert "stopped 4 processes" in down.stdout
    assert pids and alive(pids) == []
    assert not STACK_STATE.exists()

    by_name = {c.split(" -- ", 1)[1]: out for c, out in outputs.items()}
    assert "NOT RUNNING" not in by_name["status"]
    assert by_name["salt '*' test.ping"].count("True") == 21
    rows = by_name["sql \"SELECT pillar FROM salt_pillar_rows('saltfleet-minion-1')\""]
    motds = [json.loads(r).get("motd") for r in rows.splitlines() if r[:1] == "{"]
    assert [m for m in motds if m in ("global", "org", "group", "minion")] == [
        "global",
        "org",
        "group",
        "minion",
    ]
    item = by_name["salt saltfleet-minion-1 pillar.item motd unmask=True"]
    salt_words = [
        w
        for line in item.splitlines()
        if not line.startswith("vendor:")
        for w in line.split()
    ]
    assert salt_words == ["saltfleet-minion-1:", "----------", "motd:", "minion"]
    assert by_name["salt '*' test.ping"] == outputs[commands[-2]]
    # the package state reached the simulated minion through the master
    applied = by_name["salt evil-0001 state.apply pkgstate test=True"]
    for state_id in (
        "pkgstate-installed-bash",
        "pkgstate-installed-curl",
        "pkgstate-latest-vim",
        "pkgstate-removed-telnet",
    ):
        assert state_id in applied, applied
    assert "bash" in by_name["salt-run pkgstate.status evil-0001"]
