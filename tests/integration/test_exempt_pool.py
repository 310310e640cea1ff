"""The exempt functions' worker pool, on a real master with simulated minions.

With ``RateLimiting.exempt_pool_workers`` the master gets a worker pool that
lists the exempt functions (``worker_pools:<pool>:functions``): the
publications and returns of ``test.ping`` must be handled by that pool's
MWorker, everything else by the default pool. With
``exempt_pool_max_targets`` (``worker_pools:<pool>:max_targets``) a
publication naming one minion by id goes there too. Which worker did the
work is read from the CPU time each one used, per the process name Salt
gives it.
"""

from __future__ import annotations

import pytest

from benchmarks import proctree
from harness.ratelimit import EXEMPT_POOL, RateLimiting
from harness.stack import Stack, fleet_stack

pytestmark = pytest.mark.integration

MINIONS = 10
ROUNDS = 15
EXEMPT = f"MWorker {EXEMPT_POOL}"
DEFAULT = "MWorker default"


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    with fleet_stack(
        MINIONS,
        root=open_tmp_module / "stack",
        master_opts=RateLimiting(
            exempt_pool_workers=1, exempt_pool_max_targets=1
        ).master_options(2),
        worker_threads=2,
    ) as running:
        yield running


def _cpu_used(
    stack: Stack, fun: str, arg: list[str], tgt: str = "*", minions: int = MINIONS
) -> dict[str, float]:
    """CPU seconds per master process role while ``fun`` runs ROUNDS times
    on ``tgt``, which matches ``minions`` minions."""
    assert stack.master is not None
    pid = stack.master.process.pid
    before = proctree.cpu_by_role(pid)
    for _ in range(ROUNDS):
        assert len(stack.cmd(tgt, fun, arg=arg, timeout=60)) == minions
    after = proctree.cpu_by_role(pid)
    return {name: after[name] - before.get(name, 0.0) for name in after}


def test_pings_go_to_the_exempt_pool_and_other_jobs_do_not(stack: Stack) -> None:
    stack.cmd("*", "test.ping", timeout=60)  # every worker warmed up
    pings = _cpu_used(stack, "test.ping", [])
    echoes = _cpu_used(stack, "test.echo", ["hello"])
    # every ping publication and return: the exempt worker is busy, the
    # default ones idle; and the other way round for test.echo
    assert pings[EXEMPT] > 0.1, pings
    assert pings[DEFAULT] < pings[EXEMPT] / 4, pings
    assert echoes[DEFAULT] > 0.1, echoes
    assert echoes[EXEMPT] < echoes[DEFAULT] / 4, echoes


def test_a_publication_to_one_named_minion_goes_to_the_exempt_pool(
    stack: Stack,
) -> None:
    minion = sorted(stack.cmd("*", "test.ping", timeout=60))[0]
    # the same job to the same minion, named by id or by a pattern: only the
    # publication named by id is the exempt pool's (its return is not)
    named = _cpu_used(stack, "test.echo", ["hello"], tgt=minion, minions=1)
    pattern = _cpu_used(stack, "test.echo", ["hello"], tgt=minion + "*", minions=1)
    assert named[EXEMPT] > 4 * pattern[EXEMPT], (named, pattern)
    assert pattern[DEFAULT] > pattern[EXEMPT], pattern
