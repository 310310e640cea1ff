"""The stack with real PostgreSQL, a patched salt-master and a real salt-minion."""

from __future__ import annotations

import socket

import pytest

from harness.processes import StartupError
from harness.scenarios import PROBE_EXT_PILLAR, SCENARIOS
from harness.stack import REAL_MINION_ID, Stack, StackSettings
from tests.conftest import alive

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack():
    with Stack(StackSettings(ext_pillar=PROBE_EXT_PILLAR)) as running:
        yield running


@pytest.mark.parametrize(
    "name,scenario", SCENARIOS, ids=[name for name, _ in SCENARIOS]
)
def test_demo_scenario(stack: Stack, name, scenario) -> None:
    assert scenario(stack)


def test_minion_pillar_comes_from_postgres(stack: Stack) -> None:
    ret = stack.cmd(REAL_MINION_ID, "pillar.items", ["unmask=True"])
    probe = ret[REAL_MINION_ID]["saltfleet_probe"]
    assert probe["database"] == "saltfleet"
    assert probe["minion"] == REAL_MINION_ID


def test_nothing_is_left_running_after_exit() -> None:
    with Stack(StackSettings(real_minion=True)) as running:
        assert running.cmd(REAL_MINION_ID, "test.ping") == {REAL_MINION_ID: True}
        pids = running.pids()
        root = running.root
    assert len(pids) > 5  # postgres, master and its workers, minion
    assert alive(pids) == []
    assert not root.exists()


def test_master_that_fails_to_start_shows_its_log(open_tmp) -> None:
    settings = StackSettings(
        root=open_tmp, real_minion=False, master_opts={"user": "saltfleet-no-such-user"}
    )
    stack = Stack(settings)
    with pytest.raises(StartupError) as err:
        stack.start()
    message = str(err.value)
    assert "salt-master exited" in message
    assert "saltfleet-no-such-user" in message  # from the master's own log
    assert alive(stack.pids()) == []


def test_port_in_use_stops_nothing_running(tmp_path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        stack = Stack(StackSettings(root=tmp_path, pg_port=port, real_minion=False))
        with pytest.raises(
            Exception, match=f"PostgreSQL port {port} on 127.0.0.1 is already in use"
        ):
            stack.start()
    assert stack.postgres is None
