"""Jobs and minions the master's rate limiter did not publish, seen the way a
user sees them (issue 24, item 7).

In order, on one master whose first minion is kept busy by two long jobs
(``max_minion_jobs: 2``):

- a job to every minion is published without the busy one: the ``salt``
  CLI says that minion was not sent the job instead of "Minion did not
  return", ``jobs.lookup_jid`` says it was not published to it, and
  ``query`` shows the outcome and the count of excluded minions;
- with the master full (``max_master_jobs``), a job waits in the queue:
  ``jobs.list_job``, ``jobs.lookup_jid`` and ``query`` (looking the jid up
  by its number) show it as queued, not as a published job without returns;
- a synchronous ``salt`` call waits in the queue until its caller gives up:
  the CLI says it expired in the queue (exit code 69), ``jobs.lookup_jid``
  says it was never published, ``jobs.list_job`` carries the outcome, and
  ``ratelimit.status`` accounts for every job it was handed.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Any

import pytest

from harness.ratelimit import QueueProbe
from harness.stack import Stack
from tests.integration.conftest import rate_limited_stack, small_fleet_limits

pytestmark = pytest.mark.integration

MINIONS = 4
# one job to '*' takes MINIONS points: a second one waits for it
LIMITS = small_fleet_limits(MINIONS, spare=1, max_queue=5)
EX_UNAVAILABLE = 69
NORMAL = 0


stack = rate_limited_stack(MINIONS, LIMITS)


def _run(stack: Stack, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None
    done = stack.master.run_cli(script, *args)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def _json(stack: Stack, *args: str) -> Any:
    return json.loads(_run(stack, "salt-run", "--out", "json", *args).stdout)


def _outcome(stack: Stack, jid: str) -> list[list[Any]]:
    # names=<jid>: salt-run parses the jid into a number, still a name
    result = _json(
        stack,
        "query.query",
        "job",
        "fields=jid,ratelimit.outcome,ratelimit.excluded",
        f"names={jid}",
    )
    (row,) = result["data"]
    return row


def test_a_minion_the_rate_limiter_excludes_is_not_sent_the_job(
    stack: Stack,
) -> None:
    busy = stack.fleet.ids[0]
    with stack.client() as client:
        for _ in range(LIMITS.max_minion_jobs):
            assert client.cmd_async(busy, "test.sleep", [90])
    cli = _run(stack, "salt", "-t", "5", "--show-jid", "*", "test.echo", "hi")
    out = cli.stdout
    assert f"{busy}:\n    Minion was not sent the job. [Excluded]" in out, out
    assert "did not return" not in out, out
    for other in stack.fleet.ids[1:]:
        assert f"{other}:\n    hi" in out, out
    jid = out.split("jid: ", 1)[1].split()[0]

    looked_up = _json(stack, "jobs.lookup_jid", jid, "missing=True")
    assert looked_up[busy] == "Not published: the master's rate limiter excluded it"
    assert all(looked_up[other] == "hi" for other in stack.fleet.ids[1:])
    listed = _json(stack, "jobs.list_job", jid)
    assert listed["RateLimiting"]["excluded"] == [busy]
    assert _outcome(stack, jid) == [
        [NORMAL, jid],
        [NORMAL, "published_excluding"],
        [NORMAL, 1],
    ]


def test_a_job_waiting_in_the_queue_shows_as_queued(stack: Stack) -> None:
    others = stack.fleet.ids[1:]
    with stack.client() as client:
        # with the busy minion's two jobs, the master is full (5 points)
        assert client.cmd_async(others, "test.sleep", [90], tgt_type="list")
        jid = client.cmd_async(others[0], "test.echo", ["later"])
    assert jid
    deadline = time.monotonic() + 20
    while True:
        listed = _json(stack, "jobs.list_job", jid)
        if listed.get("RateLimiting") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert listed["RateLimiting"]["outcome"] == "queued", listed
    assert listed["RateLimiting"]["position"] == 1
    looked_up = _run(stack, "salt-run", "jobs.lookup_jid", jid, "missing=True")
    assert f"Job {jid} is queued in the master's rate-limiting queue" in (
        looked_up.stdout
    )
    assert "did not return" not in looked_up.stdout
    assert _outcome(stack, jid)[1] == [NORMAL, "queued"]


def test_sync_job_that_expires_in_the_queue(stack: Stack) -> None:
    with stack.client() as client:
        # queued behind the job of the test before, the master being full
        assert client.cmd_async("*", "test.sleep", [60])
    began = time.monotonic()
    assert stack.master is not None
    cli = stack.master.run_cli("salt", "-t", "2", "*", "test.echo", "hi")
    waited = time.monotonic() - began

    assert cli.returncode == EX_UNAVAILABLE, cli.stdout + cli.stderr
    assert "expired in the master's rate-limiting queue" in cli.stderr
    assert "did not return" not in cli.stdout
    assert "Traceback" not in cli.stderr
    # the caller's timeout and its find_job round, not the 2 s alone
    assert waited >= 2 + 5, waited
    found = re.search(r"Job (\d+) expired", cli.stderr)
    assert found, cli.stderr
    jid = found.group(1)

    looked_up = stack.master.run_cli("salt-run", "jobs.lookup_jid", jid)
    assert f"Job {jid} was never published" in looked_up.stdout, looked_up.stdout
    listed = stack.master.run_cli("salt-run", "--out=json", "jobs.list_job", jid)
    assert '"outcome": "expired"' in listed.stdout, listed.stdout

    status = QueueProbe(stack.master.settings.sock_dir).status()
    assert status["outcomes"]["expired"] >= 1
    assert status["submitted"] == (
        status["queued"] + status["publishing"] + sum(status["outcomes"].values())
    )
