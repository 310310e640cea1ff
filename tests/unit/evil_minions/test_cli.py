"""Every command line mistake ends in one clear message and a non-zero exit,
never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evil_minions", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: --master"),
        (
            ["--master", "127.0.0.1:4506", "--count", "0"],
            "--count: must be at least 1: 0",
        ),
        (
            ["--master", "127.0.0.1:4506", "--count", "many"],
            "--count: not a whole number: 'many'",
        ),
        (
            ["--master", "127.0.0.1:4506", "--count", "2", "--processes", "3"],
            "--processes 3 is more than --count 2",
        ),
        (["--master", "127.0.0.1:http"], "invalid port in --master"),
        (
            ["--master", "127.0.0.1:4506", "--publish-port", "99999"],
            "port out of range 1-65535",
        ),
        (["--master", "127.0.0.1:4506", "--latency", "slow"], "invalid latency 'slow'"),
        (
            ["--master", "127.0.0.1:4506", "--function-latency", "ping=1"],
            "MODULE.FUNCTION=LATENCY",
        ),
        (["--master", "127.0.0.1:4506", "--slowdown", "0"], "must be more than 0: 0"),
        (["--master", "127.0.0.1:4506", "--prefix", "a b"], "invalid --prefix"),
        (["--master", "127.0.0.1:4506", "--transport", "udp"], "invalid choice: 'udp'"),
        (["--master", "127.0.0.1:4506", "--bogus"], "unrecognized arguments: --bogus"),
        (
            ["beacon", "--run-dir", "/tmp"],
            "one of the arguments --ids --all is required",
        ),
    ],
)
def test_usage_errors(args, message):
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "evil_minions: error:" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_time_errors_exit_1_without_traceback(tmp_path):
    beacon = run_cli("beacon", "--run-dir", str(tmp_path), "--ids", "evil-0001")
    assert beacon.returncode == 1
    assert f"evil_minions: error: no fleet is running in {tmp_path}" in beacon.stderr
    replay = run_cli("--master", "127.0.0.1:4506", "--count", "1", "--keys-dir", str(tmp_path / "k"),
                     "--replay", str(tmp_path / "missing.json"))  # fmt: skip
    assert replay.returncode == 1
    assert "cannot read replay file" in replay.stderr
    for result in (beacon, replay):
        assert "Traceback" not in result.stderr


def test_help_exits_0():
    result = run_cli("--help")
    assert result.returncode == 0
    assert (
        "beacon" in result.stdout
        and "worker" not in result.stdout.split("positional arguments")[0]
    )
