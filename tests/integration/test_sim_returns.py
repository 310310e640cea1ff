"""Simulated minions whose master stops while their jobs run: each return is
tried ``return_retry_tries`` times with a timeout in
``return_retry_timer``..``return_retry_timer_max``, its job gives up and the
return counts as an error, as on a real 3008.3 minion."""

from __future__ import annotations

import time

import pytest

from evil_minions.status import RETURN_COUNTERS
from harness.fleet import FleetConfig
from harness.stack import fleet_stack

pytestmark = pytest.mark.integration

COUNT = 2
TRIES = 2


def test_returns_to_a_stopped_master_are_tried_then_counted_lost(open_tmp) -> None:
    fleet = FleetConfig(
        count=COUNT,
        processes=1,
        return_retry_timer=1,
        return_retry_timer_max=2,
        return_retry_tries=TRIES,
        status_interval=0.5,
    )
    with fleet_stack(COUNT, root=open_tmp / "stack", fleet=fleet) as stack:
        assert stack.fleet is not None and stack.master is not None
        with stack.client() as client:
            assert client.cmd_async("*", "test.sleep", [3])
        deadline = time.monotonic() + 20
        while (stack.fleet.status() or {}).get("jobs_running") != COUNT:
            assert time.monotonic() < deadline, stack.fleet.status()
            time.sleep(0.2)
        before = {
            name: int((stack.fleet.status() or {})[name]) for name in RETURN_COUNTERS
        }
        stack.master.stop()
        # the sleep (3 s), then at most TRIES tries of 2 s each, then a status write
        deadline = time.monotonic() + 30
        while True:
            status = stack.fleet.status() or {}
            after = {name: int(status[name]) - before[name] for name in RETURN_COUNTERS}
            if after["return_errors"] == COUNT or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert after == {
        "returns_sent": 0,
        "return_tries": COUNT * TRIES,
        "return_retries": COUNT * (TRIES - 1),
        "return_timeouts": COUNT * TRIES,
        "returns_given_up": COUNT,
        "return_errors": COUNT,
    }
