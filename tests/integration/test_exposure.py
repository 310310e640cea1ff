"""What a running stack exposes, as docs/SECURITY.md states it (issue 24).

One stack with the rate limiter on, salt-api and the embedded PostgreSQL:

- every TCP socket that the master, salt-api and PostgreSQL listen on is
  bound to loopback, so nothing of the stack is reachable from another
  machine unless asked for (``--api-host``);
- the rate limiter's queue socket, which publishes what is written to it
  without further authorization, can be opened by the master's user only;
- salt-api's include with the shared secret is readable by that user only.
"""

from __future__ import annotations

import ipaddress
import stat

import psutil
import pytest

from harness.ratelimit import SOCKET_NAME, RateLimiting
from harness.saltapi import INCLUDE_FILE, ApiSettings
from harness.stack import Stack, fleet_stack

pytestmark = pytest.mark.integration

OWNER_ONLY = 0o600


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    limits = RateLimiting(max_master_jobs=10, max_minion_jobs=2, max_queue=10)
    with fleet_stack(
        2,
        root=open_tmp_module / "stack",
        master_opts=limits.master_options(),
        api=ApiSettings(),
    ) as running:
        yield running


def _listening(pids: list[int]) -> list[tuple[str, int, int]]:
    """(address, port, pid) of every TCP socket the processes listen on."""
    found = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            procs = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for each in procs:
            try:
                conns = each.net_connections(kind="tcp")
            except psutil.NoSuchProcess:
                continue
            found += [
                (c.laddr.ip, c.laddr.port, each.pid)
                for c in conns
                if c.status == psutil.CONN_LISTEN
            ]
    return found


def test_the_stack_listens_on_loopback_only(stack: Stack) -> None:
    assert stack.master is not None and stack.api is not None
    assert stack.postgres is not None
    pids = [
        stack.master.process.pid,
        stack.api.process.pid,
        stack.postgres.process.pid,
    ]
    sockets = _listening(pids)
    ports = {port for _, port, _ in sockets}
    # the master's two ports, salt-api's and PostgreSQL's are among them
    expected = {
        stack.master.settings.publish_port,
        stack.master.settings.ret_port,
        stack.api.port,
        stack.postgres.port,
    }
    assert expected <= ports, sockets
    exposed = [s for s in sockets if not ipaddress.ip_address(s[0]).is_loopback]
    assert not exposed, f"listening beyond loopback: {exposed}"


def test_the_queue_socket_and_the_api_secret_are_the_masters_users_only(
    stack: Stack,
) -> None:
    assert stack.master is not None
    settings = stack.master.settings
    queue = settings.sock_dir / SOCKET_NAME
    assert stat.S_ISSOCK(queue.stat().st_mode), queue
    assert stat.S_IMODE(queue.stat().st_mode) == OWNER_ONLY
    include = settings.conf_dir / "master.d" / INCLUDE_FILE
    assert stat.S_IMODE(include.stat().st_mode) == OWNER_ONLY
