"""Rate limiting in the publish path, on a real master with simulated minions.

The minions count, from their own side, the most non-exempt jobs each had in
flight at once (``peak_minion_jobs``): the limiter must keep that at or below
``max_minion_jobs``.
"""

from __future__ import annotations

import subprocess

import pytest
import salt.exceptions

from harness.fleet import FleetConfig, LatencySpec, TimingModel
from harness.ratelimit import (
    MANAGER_START_EVENT,
    QueueProbe,
    listener_outcomes,
    outcome_problems,
)
from harness.stack import Stack
from tests.conftest import wait_for
from tests.integration.conftest import rate_limited_stack, small_fleet_limits

pytestmark = pytest.mark.integration

MINIONS = 6
# one job to '*' takes MINIONS points: a second one has to wait
LIMITS = small_fleet_limits(MINIONS, spare=2, max_queue=1)


stack = rate_limited_stack(
    MINIONS,
    LIMITS,
    # Minions that run at most max_minion_jobs jobs at once (more wait on the
    # minion) and take a few seconds per state run.
    FleetConfig(
        timing=TimingModel(
            state_duration=LatencySpec(2.0, 3.0),
            max_concurrent_jobs=LIMITS.max_minion_jobs,
        )
    ),
)


def _probe(stack: Stack) -> QueueProbe:
    assert stack.master is not None
    return QueueProbe(stack.master.settings.sock_dir)


def _salt_cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None
    return stack.master.run_cli("salt", *args)


def _idle(stack: Stack) -> bool:
    status = _probe(stack).status()
    return status["queued"] == 0 and status["master_jobs"] == 0


def test_queue_bound_capacity_and_outcomes(stack: Stack) -> None:
    import salt.exceptions

    assert stack.listener is not None
    since = stack.listener.mark()
    with stack.client() as client:
        first = client.cmd_async("*", "test.sleep", [4])  # fills the master
        queued = client.cmd_async("*", "test.sleep", [1])  # waits at the head
        assert first and queued
        with pytest.raises(salt.exceptions.SaltMasterOverloadedError):
            client.run_job("*", "test.sleep", [1])  # the queue holds one job
    cli = _salt_cli(stack, "--async", "*", "test.sleep", "1")
    assert cli.returncode == 75, cli.stdout + cli.stderr
    assert "overloaded" in (cli.stdout + cli.stderr).lower()
    assert "Traceback" not in cli.stderr

    # ping is exempt: it goes out while the master is full
    assert len(stack.cmd("*", "test.ping", timeout=20)) == MINIONS

    assert wait_for(lambda: _idle(stack), timeout=60)
    found = listener_outcomes(stack.listener, since)
    assert outcome_problems(found, [first, queued]) == {}
    assert found[first] == ["published"]
    assert found[queued] == ["published"]  # after the first job's returns
    assert [o for outcomes in found.values() for o in outcomes].count("rejected") >= 2
    status = stack.fleet.status()
    assert status is not None and status["peak_minion_jobs"] <= LIMITS.max_minion_jobs


def test_saturated_minions_show_as_not_sent_the_job(stack: Stack) -> None:
    assert wait_for(lambda: _idle(stack), timeout=60)
    busy = stack.fleet.ids[0]
    with stack.client() as client:
        for _ in range(LIMITS.max_minion_jobs):
            client.cmd_async(busy, "test.sleep", [8])
    assert wait_for(
        lambda: _probe(stack).capacity([busy]).get(busy) == LIMITS.max_minion_jobs
    )
    cli = _salt_cli(stack, "--out", "txt", "-t", "10", "*", "test.echo", "hi")
    lines = cli.stdout.splitlines()
    # excluded by the limiter, not a minion that failed to answer
    assert any(
        line.startswith(f"{busy}: Minion was not sent the job. [Excluded]")
        for line in lines
    ), cli.stdout
    assert not any("did not return" in line for line in lines), cli.stdout
    others = [m for m in stack.fleet.ids if m != busy]
    assert all(f"{m}: hi" in lines for m in others), cli.stdout
    status = stack.fleet.status()
    assert status is not None and status["peak_minion_jobs"] <= LIMITS.max_minion_jobs


def test_a_burst_of_state_runs_is_paced_and_every_return_arrives(stack: Stack) -> None:
    assert stack.listener is not None
    # points of a minion that did not return are held until the sweep
    assert wait_for(lambda: _idle(stack), timeout=120)
    since = stack.listener.mark()
    with stack.client() as client:
        # each takes MINIONS of the MINIONS + 2 master points: one at a time,
        # the second waits at the head, the third is over max_queue
        jids = [client.cmd_async("*", "state.apply") for _ in range(2)]
        with pytest.raises(salt.exceptions.SaltMasterOverloadedError):
            client.run_job("*", "state.apply")
    assert all(jids)
    assert wait_for(lambda: _idle(stack), timeout=90)
    found = listener_outcomes(stack.listener, since)
    assert outcome_problems(found, jids) == {}
    published = {
        jid: stack.listener.wait_for(
            f"salt/ratelimit/job/{jid}/published", timeout=5, since=since
        )
        for jid in jids
    }
    # the second job went out only once enough of the first one's returns
    # had given back their points: MINIONS - 2 of them
    first_returns = stack.listener.matching(f"salt/job/{jids[0]}/ret/*", since)
    before = [e for e in first_returns if e.received <= published[jids[1]].received]
    assert len(before) >= MINIONS - 2
    for jid in jids:
        returned = {
            e.tag.rsplit("/", 1)[1]
            for e in stack.listener.matching(f"salt/job/{jid}/ret/*", since)
        }
        assert returned == set(stack.fleet.ids), jid
    status = stack.fleet.status()
    assert status is not None and status["peak_minion_jobs"] <= LIMITS.max_minion_jobs


def test_queued_job_survives_a_master_restart(stack: Stack) -> None:
    assert stack.master is not None and stack.listener is not None
    assert wait_for(lambda: _idle(stack), timeout=60)
    with stack.client() as client:
        client.cmd_async("*", "test.sleep", [8])
        waiting = client.cmd_async("*", "test.echo", ["after restart"])
    assert wait_for(lambda: _probe(stack).status()["queued"] == 1)
    since = stack.listener.mark()
    stack.master.stop()
    stack.master.start()
    started = stack.listener.wait_for(MANAGER_START_EVENT, timeout=60, since=since)
    assert started is not None
    assert started.data.get("resumed", 0) >= 1
    assert wait_for(
        lambda: listener_outcomes(stack.listener, since).get(waiting), timeout=90
    )
    assert listener_outcomes(stack.listener, since)[waiting][0] in (
        "published",
        "published_excluding",
    )
