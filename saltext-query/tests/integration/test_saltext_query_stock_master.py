"""``pip install ./saltext-query`` on a stock 3008.3 master, eauth included.

A fresh virtual environment gets the released ``salt==3008.3`` from the
package index (pip's cache serves what it has) and the extension, built from
the saltfleet patch beside it and nothing else of the checkout. A real
salt-master of that Salt runs on loopback with three accepted keys and two
eauth backends; ``salt-run`` asks it as the master's user and as eauth
users, and each sees what its grants allow or is refused with a message.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

EXTENSION = Path(__file__).resolve().parents[2]
PATCHES = EXTENSION.parent / "patches"
STOCK_SALT = "salt==3008.3"
SECRET = "saltext-query-test-secret"
KEYS = ("db1", "web1", "web2")
NORMAL = 0
#: seconds for the master to answer its first runner call
READY_TIMEOUT = 120


@dataclass(frozen=True)
class StockMaster:
    root: Path
    conf_dir: Path

    def salt_run(
        self, *args: str, user: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        auth = (
            []
            if user is None
            else ["--eauth", "sharedsecret", "--username", user, "--password", SECRET]
        )
        return subprocess.run(
            [
                self.root / "venv" / "bin" / "salt-run",
                "-c",
                self.conf_dir,
                *auth,
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _install(root: Path) -> None:
    # a copy with the one patch it is built from: building in the checkout
    # would leave build/ there
    source = root / "saltext-query"
    shutil.copytree(
        EXTENSION,
        source,
        ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__", ".*_cache", "tests"
        ),
    )
    (root / "patches").mkdir()
    for patch in PATCHES.glob("*-Add-the-query-runner-*.patch"):
        shutil.copy(patch, root / "patches")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    installed = subprocess.run(
        [
            root / "venv" / "bin" / "python",
            "-m",
            "pip",
            "install",
            "--progress-bar",
            "off",
            STOCK_SALT,
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr


def _configure(root: Path) -> Path:
    publish_port, ret_port = _free_ports(2)
    config: dict[str, Any] = {
        "root_dir": str(root / "master"),
        "user": getpass.getuser(),
        "interface": "127.0.0.1",
        "publish_port": publish_port,
        "ret_port": ret_port,
        "sharedsecret": SECRET,
        "log_level_logfile": "info",
        "external_auth": {
            "sharedsecret": {
                "webops": [{"web*": ["test.ping"]}, {"@runner": ["query.*"]}],
                "carol": [{"*": ["test.ping"]}, "@runner"],
            },
            # carol again, with other grants: which one authenticated her?
            "auto": {"carol": [{"db*": ["test.ping"]}, "@runner"]},
        },
    }
    minions = root / "master" / "etc" / "salt" / "pki" / "master" / "minions"
    minions.mkdir(parents=True)
    for key in KEYS:
        (minions / key).write_text(
            f"-----BEGIN PUBLIC KEY-----\n{key}\n-----END PUBLIC KEY-----\n"
        )
    conf_dir = root / "conf"
    conf_dir.mkdir()
    (conf_dir / "master").write_text(yaml.safe_dump(config))
    return conf_dir


@pytest.fixture(scope="module")
def stock_master() -> Iterator[StockMaster]:
    root = Path(tempfile.mkdtemp(prefix="saltext-query-stock-"))
    master = None
    try:
        _install(root)
        conf_dir = _configure(root)
        master = subprocess.Popen(
            [root / "venv" / "bin" / "salt-master", "-c", conf_dir, "-l", "quiet"],
            start_new_session=True,
        )
        running = StockMaster(root, conf_dir)
        _wait_ready(running, master)
        yield running
    finally:
        if master is not None:
            _stop(master)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(master: StockMaster, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        done = master.salt_run("query.fields", "key", "--out", "json", user="webops")
        if done.returncode == 0:
            return
        assert process.poll() is None, "the stock salt-master exited"
        assert time.monotonic() < deadline, done.stdout + done.stderr
        time.sleep(2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    # the master and every process it forked share its session
    with_group = os.getpgid(process.pid)
    os.killpg(with_group, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(with_group, signal.SIGKILL)
        process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(with_group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.killpg(with_group, signal.SIGKILL)


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return json.loads(done.stdout)


def _names(result: dict[str, Any]) -> list[str]:
    return [row[0][1] for row in result["data"] if row[0][0] == NORMAL]


# the fixture pip-installs Salt: a minute here, more on a busy machine
@pytest.mark.timeout(1800)
def test_the_masters_user_sees_every_key_as_a_table(stock_master: StockMaster) -> None:
    version = stock_master.salt_run("--version")
    assert version.stdout.split()[:2] == ["salt-run", "3008.3"]
    table = stock_master.salt_run("query.query", "key", "fields=name,state")
    assert table.returncode == 0, table.stdout + table.stderr
    lines = table.stdout.split("\n")
    assert lines[0].split() == ["Name", "State"]
    assert [line.split() for line in lines[1:4]] == [[key, "accepted"] for key in KEYS]
    done = stock_master.salt_run("query.query", "key", "fields=name", "--out", "json")
    assert _names(_json(done)) == list(KEYS)


def _keys(master: StockMaster, user: str) -> subprocess.CompletedProcess[str]:
    return master.salt_run(
        "query.query", "key", "fields=name", "--out", "json", user=user
    )


@pytest.mark.timeout(1800)
def test_an_eauth_user_sees_only_what_its_grants_target(
    stock_master: StockMaster,
) -> None:
    done = _keys(stock_master, "webops")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _names(_json(done)) == ["web1", "web2"]

    pillar = stock_master.salt_run(
        "query.query",
        "minion",
        "fields=name,pillar.roles",
        "pillar=True",
        "--out",
        "json",
        user="webops",
    )
    assert pillar.returncode != 0
    assert "pillar.items" in _json(pillar)["error"]


@pytest.mark.timeout(1800)
def test_a_caller_the_extension_cannot_place_is_refused(
    stock_master: StockMaster,
) -> None:
    done = _keys(stock_master, "carol")
    assert done.returncode != 0
    error = _json(done)["error"]
    assert "different grants in the external_auth backends auto, sharedsecret" in error
    assert "web1" not in done.stdout


@pytest.mark.timeout(1800)
def test_an_unknown_field_fails_the_command(stock_master: StockMaster) -> None:
    done = stock_master.salt_run("query.query", "key", "fields=name,colour")
    assert done.returncode != 0
    assert "unknown key field(s) 'colour'" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
