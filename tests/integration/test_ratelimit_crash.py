"""A master killed with ``kill -9`` while rate-limited jobs go out, then restarted.

Every job the master acknowledged with a jid must be published at most once
and none may vanish: each ends with a recorded outcome, or its returns show
it ran. A minion whose return was in flight at the kill sends it again to
the restarted master (as a real minion retries a return); such a retry is
the only second return of one minion for one jid the test accepts, counted
by the simulated minions themselves (``return_retries``).
"""

from __future__ import annotations

import collections
import os
import signal

import pytest

from harness.ratelimit import (
    MANAGER_START_EVENT,
    QueueProbe,
    listener_outcomes,
)
from harness.stack import Stack
from tests.conftest import wait_for
from tests.integration.conftest import rate_limited_stack, small_fleet_limits

pytestmark = pytest.mark.integration

MINIONS = 10
JOBS = 8
# a job to '*' takes all the master's points: the jobs go out one by one
LIMITS = small_fleet_limits(MINIONS, spare=0, max_queue=JOBS, long_running=30)


stack = rate_limited_stack(MINIONS, LIMITS)


def _kill_master(stack: Stack) -> None:
    """``kill -9`` of the master and every process it forked (its session)."""
    assert stack.master is not None
    process = stack.master.process
    os.killpg(process.pid, signal.SIGKILL)
    assert wait_for(lambda: not process.running(), timeout=30)


def test_kill_9_mid_queue_loses_no_job_and_runs_none_twice(stack: Stack) -> None:
    assert stack.master is not None and stack.listener is not None
    assert stack.fleet is not None
    listener = stack.listener
    probe = QueueProbe(stack.master.settings.sock_dir)
    fleet_before = stack.fleet.status()
    assert fleet_before is not None
    since = stack.listener.mark()
    with stack.client() as client:
        jids = [client.cmd_async("*", "test.sleep", [2]) for _ in range(JOBS)]
    assert all(jids), jids  # every one acknowledged with a jid

    # kill it with jobs out and jobs still queued
    assert wait_for(lambda: listener_outcomes(listener, since), timeout=60), (
        "no job was published"
    )
    assert probe.status()["queued"] > 0
    _kill_master(stack)

    restarted = stack.listener.mark()
    stack.master.start()
    assert stack.listener.wait_for(MANAGER_START_EVENT, timeout=60, since=restarted)

    def returns() -> dict[str, collections.Counter[str]]:
        found: dict[str, collections.Counter[str]] = {}
        for jid in jids:
            events = listener.matching(f"salt/job/{jid}/ret/*", since)
            found[jid] = collections.Counter(e.tag.rsplit("/", 1)[1] for e in events)
        return found

    def accounted() -> bool:
        outcomes = listener_outcomes(listener, since)
        ran = returns()
        # an outcome event fired just before the kill may not have reached
        # the listener: a job all of whose minions returned ran all the same
        return all(outcomes.get(jid) or len(ran[jid]) == MINIONS for jid in jids)

    assert wait_for(accounted, timeout=120), (
        listener_outcomes(listener, since),
        returns(),
    )
    assert wait_for(
        lambda: (s := probe.status())["queued"] == 0 and s["publishing"] == 0,
        timeout=60,
    )
    again = {
        (jid, minion): count - 1
        for jid, counts in returns().items()
        for minion, count in counts.items()
        if count > 1
    }
    fleet_after = stack.fleet.status()
    assert fleet_after is not None
    after, before = fleet_after["return_retries"], fleet_before["return_retries"]
    assert isinstance(after, int) and isinstance(before, int)
    retries = after - before
    # a second execution would return twice without a retry behind it
    assert sum(again.values()) <= retries, (again, retries)
    outcomes = listener_outcomes(listener, since)
    assert all(len(outcomes.get(jid, [])) <= 1 for jid in jids), outcomes
    assert any(len(counts) == MINIONS for counts in returns().values())
