"""``rate_limiting:exempt_max_targets`` on a real master with simulated
minions: while the master is full and a job waits in the queue, a job to one
minion goes out at once and is not charged; a job to two still waits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.ratelimit import QueueProbe
from harness.stack import Stack
from tests.conftest import wait_for
from tests.integration.conftest import rate_limited_stack, small_fleet_limits

pytestmark = pytest.mark.integration

MINIONS = 4
# one job to '*' takes every point the master has
LIMITS = replace(
    small_fleet_limits(MINIONS, spare=0, max_queue=5), exempt_max_targets=1
)

stack = rate_limited_stack(MINIONS, LIMITS)


def _status(stack: Stack) -> dict[str, int]:
    assert stack.master is not None
    status = QueueProbe(stack.master.settings.sock_dir).status()
    return {"queued": status["queued"], "master_jobs": status["master_jobs"]}


def test_a_job_to_one_minion_passes_a_full_queue(stack: Stack) -> None:
    first, second = stack.fleet.ids[:2]
    with stack.client() as client:
        assert client.cmd_async("*", "test.sleep", [20])
        assert wait_for(lambda: _status(stack)["master_jobs"] == MINIONS, timeout=20)
        assert client.cmd_async(
            [first, second], "test.echo", ["later"], tgt_type="list"
        )
    assert wait_for(lambda: _status(stack)["queued"] == 1, timeout=20)

    # published at once to its one minion, ahead of the queued job
    assert stack.cmd(first, "test.echo", ["now"], timeout=15) == {first: "now"}
    # and neither queued nor charged
    assert _status(stack) == {"queued": 1, "master_jobs": MINIONS}
