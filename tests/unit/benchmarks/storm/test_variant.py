"""The storm's own threads: how the presence pinger talks to the master.

A fake stack stands in for the master: these tests count the LocalClients
the pinger makes and what it records, not the master's answers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.storm.accounting import PING_MAX_OUTSTANDING
from benchmarks.storm.options import StormOptions
from benchmarks.storm.variant import StormRun, storm_seconds


class _Client:
    """A LocalClient whose pings every target answers at once."""

    def __init__(self) -> None:
        self.destroyed = False

    def cmd_iter(self, targets: list[str], *_: Any, **__: Any) -> Iterator[Any]:
        yield {"jid": "1", "minions": targets}
        for minion in targets:
            yield {minion: True}


class _Stack:
    """Just what a StormRun needs of a started stack, counting clients."""

    def __init__(self, tmp_path: Path) -> None:
        self.master = SimpleNamespace(settings=SimpleNamespace(sock_dir=tmp_path))
        self.listener = object()
        self.fleet = SimpleNamespace(ids=["m1", "m2"])
        self.clients: list[_Client] = []

    @contextlib.contextmanager
    def client(self) -> Iterator[_Client]:
        client = _Client()
        self.clients.append(client)
        try:
            yield client
        finally:
            client.destroyed = True


def test_each_pinger_thread_keeps_one_client_for_the_run(tmp_path: Path) -> None:
    stack = _Stack(tmp_path)
    storm = StormRun("off", None, StormOptions(), stack)  # type: ignore[arg-type]
    with storm._ping_clients:
        for tick in range(3):
            storm._one_ping(float(tick), ["m1", "m2"])
        other = threading.Thread(target=storm._one_ping, args=(3.0, ["m1", "m2"]))
        other.start()
        other.join()
        # one per thread, not one per ping: the fourth ping ran in another
        assert len(stack.clients) == 2
        assert not any(client.destroyed for client in stack.clients)
    assert all(client.destroyed for client in stack.clients)
    assert [(p.returned, p.answered) for p in storm.result.pings] == [(2, True)] * 4


def test_every_pinger_thread_has_its_client_before_the_clock_starts(
    tmp_path: Path,
) -> None:
    """The first pings no longer time the making of a LocalClient: every
    thread of the pool has one before the first tick, and pings make none."""
    stack = _Stack(tmp_path)
    storm = StormRun("off", None, StormOptions(), stack)  # type: ignore[arg-type]
    with storm._ping_clients, ThreadPoolExecutor(PING_MAX_OUTSTANDING) as pool:
        storm.warm_ping_clients(pool)
        assert len(stack.clients) == PING_MAX_OUTSTANDING
        for tick in range(2 * PING_MAX_OUTSTANDING):
            pool.submit(storm._one_ping, float(tick), ["m1"]).result()
        assert len(stack.clients) == PING_MAX_OUTSTANDING
    assert all(client.destroyed for client in stack.clients)


def test_a_storm_that_ended_quiet_lasts_until_its_last_return() -> None:
    # 60 s without a return ended it: those 60 s are not the storm's
    assert storm_seconds(1100.0, 2040.0, 1000.0, quiet=True) == 1040.0


def test_any_other_storm_lasts_until_it_ended() -> None:
    # ended with its last expected return, though returns of jobs whose
    # submission failed stopped coming earlier, or cut short, or no return
    assert storm_seconds(598.0, 1438.0, 1000.0, quiet=False) == 598.0
    assert storm_seconds(1800.0, 2040.0, 1000.0, quiet=False) == 1800.0
    assert storm_seconds(90.0, None, 1000.0, quiet=True) == 90.0


def test_the_cpu_a_role_spent_is_what_it_used_between_the_two_readings() -> None:
    from benchmarks.storm.accounting import master_roles
    from benchmarks.storm.variant import cpu_spent

    before = {"MWorker default": 10.0, "main": 1.0}
    after = {
        "MWorker default": 14.5,
        "main": 1.5,
        "Engine(x.saltfleet_consumer)": 2.0,
        "Engine(x.saltfleet_events)": 1.0,
    }
    spent = cpu_spent(before, after)
    # a role that appeared in between spent all it shows
    assert spent == {
        "MWorker default": 4.5,
        "main": 0.5,
        "Engine(x.saltfleet_consumer)": 2.0,
        "Engine(x.saltfleet_events)": 1.0,
    }
    # the consumer is a system beside the master and the forwarder the
    # benchmark's instrument: neither is the master's work
    assert master_roles(spent) == {"MWorker default": 4.5, "main": 0.5}
