"""The ``query`` runner's rate-limit fields against a master with rate limiting on.

The capacity a minion holds (``ratelimit.jobs``, ``ratelimit.jids``) and a
job's outcome (``ratelimit.outcome``) come from the queue manager over its
socket; with rate limiting off they are unavailable (``test_query.py``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.ratelimit import RateLimiting
from harness.stack import Stack
from tests.integration.conftest import rate_limited_stack

pytestmark = pytest.mark.integration

MINIONS = 3
NORMAL = 0


stack = rate_limited_stack(MINIONS, RateLimiting(maintenance_interval=5))


def _query(stack: Stack, *args: str) -> dict[str, Any]:
    assert stack.master is not None
    done = stack.master.run_cli("salt-run", "--out", "json", "query.query", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_capacity_held_and_outcome(stack: Stack) -> None:
    with stack.client() as client:
        # long enough to outlast three salt-run calls on a busy machine
        jid = client.cmd_async("*", "test.sleep", [30])
    assert jid
    deadline = time.monotonic() + 20
    while True:
        result = _query(stack, "minion", "fields=name,ratelimit.jobs,ratelimit.jids")
        held = {row[0][1]: row[1:] for row in result["data"]}
        if all(cells[0] == [NORMAL, 1] for cells in held.values()):
            break
        assert time.monotonic() < deadline, held
        time.sleep(0.5)
    assert set(held) == set(stack.fleet.ids)
    assert all(cells[1] == [NORMAL, [jid]] for cells in held.values())

    (row,) = _query(
        stack, "job", "fields=jid,ratelimit.outcome", f"filter=jid == '{jid}'"
    )["data"]
    assert row == [[NORMAL, jid], [NORMAL, "published"]]
    busy = _query(
        stack, "minion", "fields=name", "filter=ratelimit.jobs > 0", "names=*"
    )
    assert len(busy["data"]) == MINIONS
