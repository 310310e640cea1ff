"""Simulated minions (evil_minions) against a real master, on Salt's protocol."""

from __future__ import annotations

import os
import time

import pytest

from evil_minions import fire_beacons, synthetic_grains
from harness.fleet import FleetConfig
from harness.stack import Stack, fleet_stack
from tests.conftest import alive

pytestmark = pytest.mark.integration

COUNT = int(os.environ.get("SALTFLEET_CI_MINIONS", "50"))


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    with fleet_stack(
        COUNT,
        root=open_tmp_module / "stack",
        fleet=FleetConfig(count=COUNT, processes=2),
        pillar_files={
            "top.sls": "base:\n  '*':\n    - common\n",
            "common.sls": "who: {{ grains['id'] }}\nfamily: {{ grains['os_family'] }}\n",
        },
    ) as running:
        yield running


def test_every_minion_answers_ping(stack: Stack) -> None:
    ret = stack.cmd("*", "test.ping")
    assert ret == {mid: True for mid in stack.fleet.ids}


def test_grain_target_reaches_exactly_the_matching_minions(stack: Stack) -> None:
    expected = {
        m for m in stack.fleet.ids if synthetic_grains(m)["os_family"] == "Suse"
    }
    assert 0 < len(expected) < COUNT
    ret = stack.cmd("os_family:Suse", "test.ping", tgt_type="grain")
    assert set(ret) == expected


def test_compound_target(stack: Stack) -> None:
    first, second = stack.fleet.ids[:2]
    ret = stack.cmd(
        f"L@{first},{second} or G@os_family:NoSuchFamily",
        "test.ping",
        tgt_type="compound",
    )
    assert set(ret) == {first, second}


def test_pillar_is_compiled_by_the_master(stack: Stack) -> None:
    ret = stack.cmd("*", "pillar.items", ["unmask=True"])
    assert len(ret) == COUNT
    for mid, pillar in ret.items():
        assert pillar["who"] == mid
        assert pillar["family"] == synthetic_grains(mid)["os_family"]


def test_running_job_is_visible_in_saltutil_running(stack: Stack) -> None:
    target = stack.fleet.ids[0]
    with stack.client() as client:
        jid = client.cmd_async(target, "test.sleep", [6])
        assert jid
        deadline = time.monotonic() + 5
        running: list = []
        while time.monotonic() < deadline and not running:
            running = (
                client.cmd(target, "saltutil.running", timeout=10).get(target) or []
            )
        assert any(job["jid"] == jid and job["fun"] == "test.sleep" for job in running)


def test_unknown_function_is_an_error_return(stack: Stack) -> None:
    target = stack.fleet.ids[0]
    ret = stack.cmd(target, "nosuch.function", full_return=True)
    assert "'nosuch.function' is not available." in ret[target]["ret"]
    assert ret[target]["retcode"] != 0


def test_beacon_event_reaches_the_master_bus(stack: Stack) -> None:
    target = stack.fleet.ids[-1]
    assert stack.listener is not None
    since = stack.listener.mark()
    before = stack.cmd(target, "pkg.list_pkgs")[target]
    report = fire_beacons(stack.fleet.config.run_dir, [target])
    assert report.fired == [target]
    event = stack.listener.wait_for(
        f"salt/beacon/{target}/pkgset/changed", timeout=30, since=since
    )
    assert event is not None
    assert stack.cmd(target, "pkg.list_pkgs")[target] != before


def test_fleet_stops_with_the_stack(open_tmp) -> None:
    with fleet_stack(5, root=open_tmp / "s") as small:
        assert len(small.cmd("*", "test.ping")) == 5
        pids = small.pids()
    assert alive(pids) == []
