"""A process tree's memory is counted as PSS: pages a forked child shares with
its parent are not counted twice, as summed RSS counts them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import psutil
import pytest

from benchmarks import proctree

SHARED_MIB = 64


@pytest.fixture
def parent_with_forked_child() -> Iterator[int]:
    """This process holds SHARED_MIB of touched pages and forks a child that
    keeps them shared (it only sleeps); yields the parent's pid."""
    shared = bytearray(os.urandom(SHARED_MIB * 2**20))
    child = os.fork()
    if child == 0:  # the child: keep the pages mapped, write nothing
        try:
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while not psutil.Process(os.getpid()).children():
            assert time.monotonic() < deadline, "the forked child did not appear"
            time.sleep(0.05)
        yield os.getpid()
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        del shared


def test_pages_shared_with_a_forked_child_are_counted_once(
    parent_with_forked_child: int,
) -> None:
    procs = proctree.processes(parent_with_forked_child)
    assert len(procs) >= 2
    summed_rss = sum(p.memory_info().rss for p in procs) / 2**20
    pss = sum(proctree.pss_by_role(parent_with_forked_child).values())
    # summed RSS counts the shared buffer in parent and child; PSS once
    assert summed_rss - pss > SHARED_MIB / 2
    assert pss > SHARED_MIB


def test_the_cpu_of_a_child_that_exited_is_still_counted() -> None:
    """A process tree's CPU does not drop when one of its processes exits:
    what a reaped child spent counts in its parent's."""
    import resource
    import subprocess
    import sys

    before = proctree.cpu_seconds(os.getpid())
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    assert spent > 0
    # the child's CPU is in the tree's, on top of this process's own
    assert proctree.cpu_seconds(os.getpid()) - before >= spent * 0.99


def test_a_process_that_is_gone_has_no_memory() -> None:
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert proctree.pss_by_role(child) == {}
