"""A job to every minion published in slices under one jid, on a real master.

With ``rate_limiting:slices`` the master publishes a job to as many minions
as its budget of returns in flight allows and the next slice as returns come
back. The caller must not notice: the ``salt`` CLI sees one job, every
minion's return under its jid, and the job cache lists all of its minions.
"""

from __future__ import annotations

import json

import pytest

from harness.ratelimit import (
    SLICE_EVENTS,
    QueueProbe,
    RateLimiting,
    listener_outcomes,
    slice_event,
)
from harness.stack import Stack
from tests.conftest import wait_for
from tests.integration.conftest import rate_limited_stack

pytestmark = pytest.mark.integration

MINIONS = 60
LIMITS = RateLimiting(
    # a job to '*' needs 60 points: it goes out in slices of about 20
    max_master_jobs=20,
    max_minion_jobs=4,
    slices=True,
    slice_min_targets=10,
    maintenance_interval=30,
    long_running=120,
)


stack = rate_limited_stack(MINIONS, LIMITS)


def test_a_job_to_all_goes_out_in_slices_and_the_caller_sees_one_job(
    stack: Stack,
) -> None:
    assert stack.master is not None and stack.listener is not None
    assert stack.fleet is not None
    everyone = sorted(stack.fleet.ids)
    since = stack.listener.mark()
    cli = stack.master.run_cli(
        "salt", "--out=json", "--static", "-t", "60", "*", "test.sleep", "1"
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    returns = json.loads(cli.stdout)
    assert sorted(returns) == everyone
    assert all(value is True for value in returns.values())

    slices: dict[str, list[list[str]]] = {}
    for event in stack.listener.matching(SLICE_EVENTS, since):
        fired = slice_event(event.tag)
        assert fired is not None
        slices.setdefault(fired[0], []).append(event.data["minions"])
    assert len(slices) == 1, slices  # one job, one jid
    ((jid, parts),) = slices.items()
    assert len(parts) >= 3, parts
    assert all(len(part) <= LIMITS.max_master_jobs for part in parts)
    published = [minion for part in parts for minion in part]
    assert sorted(published) == everyone  # each minion once

    outcomes = wait_for(lambda: listener_outcomes(stack.listener, since).get(jid))
    assert outcomes == ["published"]
    returned = {
        event.tag.rsplit("/", 1)[-1]
        for event in stack.listener.matching(f"salt/job/{jid}/ret/*", since)
    }
    assert returned == set(everyone)

    listed = stack.master.run_cli("salt-run", "--out=json", "jobs.list_job", jid)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    job = json.loads(listed.stdout)
    assert sorted(job["Minions"]) == everyone
    assert sorted(job["Result"]) == everyone

    status = QueueProbe(stack.master.settings.sock_dir).status()
    assert status["slices"]["published"] >= len(parts)
    assert status["submitted"] == (
        status["queued"] + status["publishing"] + sum(status["outcomes"].values())
    )
    fleet = stack.fleet.status()  # each minion's own count of jobs at once
    assert fleet is not None
    assert fleet["peak_minion_jobs"] <= LIMITS.max_minion_jobs
