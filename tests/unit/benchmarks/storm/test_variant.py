"""The storm's own threads: how the presence pinger talks to the master.

A fake stack stands in for the master: these tests count the LocalClients
the pinger makes and what it records, not the master's answers.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.storm.accounting import PING_MAX_OUTSTANDING
from benchmarks.storm.options import StormOptions
from benchmarks.storm.variant import StormRun, box_cpu_seconds, storm_seconds


class _Client:
    """A LocalClient whose master takes every publication at once."""

    def __init__(self) -> None:
        self.destroyed = False
        self.calls: list[dict[str, Any]] = []

    def run_job(self, targets: list[str], fun: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append({"targets": targets, "fun": fun, **kwargs})
        return {"jid": f"{len(self.calls)}", "minions": targets}


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
    # published, the answers still to be read off the bus
    assert [(p.jid, p.answered) for p in storm.result.pings] == [
        ("1", False),
        ("2", False),
        ("3", False),
        ("1", False),
    ]


def test_a_ping_publishes_without_listening_and_keeps_its_jid(tmp_path: Path) -> None:
    """A client that listened would decode every event of the bus while it
    waited: the driver's CPU would depend on how the master answers."""
    stack = _Stack(tmp_path)
    storm = StormRun("off", None, StormOptions(), stack)  # type: ignore[arg-type]
    with storm._ping_clients:
        storm._one_ping(4.0, ["m1", "m2"])
    (call,) = stack.clients[0].calls
    assert call["fun"] == "test.ping" and call["listen"] is False
    assert call["tgt_type"] == "list" and call["targets"] == ["m1", "m2"]
    (ping,) = storm.result.pings
    assert (ping.t, ping.jid, ping.targets) == (4.0, "1", 2)
    assert ping.publish_s is not None and ping.began_at > 0


def test_a_ping_the_master_did_not_take_is_kept_unanswered(tmp_path: Path) -> None:
    stack = _Stack(tmp_path)
    storm = StormRun("off", None, StormOptions(), stack)  # type: ignore[arg-type]
    with storm._ping_clients:
        client = storm._ping_client()
        client.run_job = lambda *a, **k: (_ for _ in ()).throw(OSError("refused"))
        storm._one_ping(1.0, ["m1"])
        client.run_job = lambda *a, **k: {}  # Salt's answer to a failed publish
        storm._one_ping(2.0, ["m1"])
    assert [(p.jid, p.publish_s, p.answered) for p in storm.result.pings] == [
        ("", None, False)
    ] * 2


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


class _Clock:
    """time.time, time.monotonic and time.sleep of a storm, sleeps recorded."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class _Listener:
    """The harness's listener: what it has received, in order."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events

    def since(self, index: int) -> tuple[list[Any], int]:
        return self.events[index:], len(self.events)


def _ending_storm(
    tmp_path: Path, monkeypatch: Any, events: list[Any]
) -> tuple[StormRun, _Clock]:
    """A storm that ended at 1000 s with three pings out: two published at
    990 and 998 s (jids 1 and 2, one target each), one never published."""
    from benchmarks.storm import variant
    from benchmarks.storm.accounting import PING_TIMEOUT, Ping

    clock = _Clock(1000.0)
    monkeypatch.setattr(variant.time, "time", clock.time)
    monkeypatch.setattr(variant.time, "monotonic", clock.time)
    monkeypatch.setattr(variant.time, "sleep", clock.sleep)
    stack = _Stack(tmp_path)
    stack.listener = _Listener(events)  # type: ignore[assignment]
    storm = StormRun("off", None, StormOptions(), stack)  # type: ignore[arg-type]
    storm.result.pings = [
        Ping(1.0, PING_TIMEOUT, 0, targets=1, jid="1", began_at=990.0),
        Ping(9.0, PING_TIMEOUT, 0, targets=1, jid="2", began_at=998.0),
        Ping(10.0, PING_TIMEOUT, 0, targets=1, began_at=999.5),
    ]
    return storm, clock


def test_the_last_ping_gets_its_whole_timeout_before_it_is_read(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A ping sent just before the storm ended is not judged by the returns
    that had reached the bus by then: the storm waits out its timeout, and
    no longer once its target has returned."""
    from harness.events import Event

    storm, clock = _ending_storm(
        tmp_path, monkeypatch, [Event("salt/job/2/ret/m1", {}, 1003.0)]
    )
    storm._wait_for_the_last_pings(0)
    assert clock.slept == [8.0]  # until 998 + 10 s; jid 1's timeout had passed


def test_the_wait_ends_when_the_listener_has_caught_up_past_the_timeout(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from benchmarks.storm import variant
    from harness.events import Event

    late = datetime.datetime.fromtimestamp(1008.5, datetime.UTC)
    events = [Event("salt/job/9/new", {"_stamp": late.isoformat()}, 1009.0)]
    storm, clock = _ending_storm(tmp_path, monkeypatch, events)
    storm._wait_for_the_last_pings(0)
    # the bus had nothing more for jid 2 by its timeout: no poll after it
    assert clock.slept == [8.0]
    assert variant.LISTENER_LAG_MAX_S > 8.0
    # with nothing past the timeout and no return, it waits at most that long
    storm, clock = _ending_storm(tmp_path, monkeypatch, [])
    storm._wait_for_the_last_pings(0)
    assert sum(clock.slept) == pytest.approx(8.0 + variant.LISTENER_LAG_MAX_S)


def test_the_box_s_busy_time_counts_guests_once_and_not_stolen_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/proc/stat`` counts a guest's time in user and nice already, and
    stolen time is CPU the box never had."""
    import psutil

    times = SimpleNamespace(
        user=10.0, nice=1.0, system=5.0, idle=80.0, iowait=2.0,
        irq=0.5, softirq=0.5, steal=7.0, guest=3.0, guest_nice=1.0,
    )  # fmt: skip
    monkeypatch.setattr(psutil, "cpu_times", lambda: times)
    assert box_cpu_seconds() == (17.0, 99.0)
