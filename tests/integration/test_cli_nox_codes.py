"""The harness's exit codes reach the user unchanged through nox."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import PROJECT_ROOT


def test_a_usage_error_exits_2_through_nox_not_1() -> None:
    # nox's session.run turns every failed command into exit 1; the codes
    # mean something (2 usage, 69 expired unpublished, 75 queue full).
    result = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "vendor", "--", "--no-such-option"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "unrecognized arguments: --no-such-option" in output
