"""A job that never leaves the master's queue, seen the way a user sees it.

The master is kept full by one long job, so a synchronous ``salt`` call
waits in the queue until its caller gives up. Nothing about it may look
like an ordinary job whose minions did not answer: the CLI says it expired
in the queue (exit code 69), ``jobs.lookup_jid`` says it was never
published, ``jobs.list_job`` carries the outcome, and ``ratelimit.status``
accounts for every job it was handed.
"""

from __future__ import annotations

import re
import time

import pytest

from harness.ratelimit import QueueProbe, RateLimiting
from harness.stack import Stack, fleet_stack

pytestmark = pytest.mark.integration

MINIONS = 4
LIMITS = RateLimiting(
    # one job to '*' takes MINIONS points: a second one waits for it
    max_master_jobs=MINIONS + 1,
    max_minion_jobs=2,
    max_queue=5,
    maintenance_interval=5,
    long_running=60,
)
EX_UNAVAILABLE = 69


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    with fleet_stack(
        MINIONS, root=open_tmp_module / "stack", master_opts=LIMITS.master_options()
    ) as running:
        yield running


def test_sync_job_that_expires_in_the_queue(stack: Stack) -> None:
    with stack.client() as client:
        assert client.cmd_async("*", "test.sleep", [60])  # fills the master
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
