"""Package states across a fleet of simulated minions, end to end through the
master: states at org, group and minion scope, a highstate of every minion,
``pkgset`` beacons refreshing inventories and candidates (engine), and the
status values consistent, pending, inconsistent and orphan-kept.

The simulated minions apply package states to their synthetic package sets
(``evil_minions.packages``), so the highstates here change nothing on the host.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from saltext.pkgstate.store import PackageStateStore

from evil_minions import fire_beacons
from evil_minions.packages import offered_fillers
from harness.fleet import FleetConfig
from harness.pillar.model import Group
from harness.pillar.store import PillarStore
from harness.stack import Stack, fleet_stack
from tests.conftest import wait_for

pytestmark = pytest.mark.integration

COUNT = 20
PACKAGES = 60
ORG, GROUP = "acme", Group("acme", "web")
APPLY_TIMEOUT = 120
#: seconds for the engine's database writes after an event
ENGINE_TIMEOUT = 60
#: a package-manager run outside Salt that updates every installed package
EVERY_PACKAGE = PACKAGES + 10


# installed on every simulated minion (index < PACKAGES), and one that is not
BASE, LATEST, AT_LEAST, ADDED = offered_fillers(4)
NOT_INSTALLED = offered_fillers(1, start=PACKAGES + 5)[0]


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    fleet = FleetConfig(count=COUNT, processes=1, package_count=PACKAGES)
    with fleet_stack(
        COUNT, root=open_tmp_module / "stack", fleet=fleet, pkgstates=True
    ) as running:
        yield running


@pytest.fixture(scope="module")
def members(stack: Stack) -> list[str]:
    """Every minion in org acme; the first half also in group acme/web."""
    assert stack.pg is not None and stack.fleet is not None
    ids = stack.fleet.ids
    conn = stack.pg.connect()
    try:
        pillars = PillarStore(conn)
        with pillars.transaction() as cur:
            group_id = pillars.ensure_group(cur, GROUP)
            for index, minion in enumerate(ids):
                server_id = pillars.ensure_server(cur, minion, ORG)
                pillars.set_membership(
                    cur, server_id, [group_id] if index < COUNT // 2 else []
                )
    finally:
        conn.close()
    return ids[: COUNT // 2]


@pytest.fixture(scope="module")
def store(stack: Stack):
    assert stack.pg is not None
    with PackageStateStore(stack.pg.dsn) as opened:
        yield opened


def _run_ok(stack: Stack, *args: str) -> Any:
    assert stack.master is not None
    done = stack.master.run_cli("salt-run", "--out", "yaml", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return yaml.safe_load(done.stdout)


def _statuses(store: PackageStateStore, minion: str, grains: dict) -> dict[str, str]:
    packages = store.status(minion, grains)["packages"]
    return {name: spec["status"] for name, spec in packages.items()}


def test_statuses_follow_highstates_saves_and_changes_outside_salt(
    stack: Stack, members: list[str], store: PackageStateStore
) -> None:
    assert stack.fleet is not None
    everyone = stack.fleet.ids
    target = members[0]
    grains = stack.cmd("*", "grains.items", timeout=60)
    installed = stack.cmd(target, "pkg.list_pkgs")[target]
    offered = stack.cmd(target, "pkg.list_repo_pkgs", timeout=60)[target]
    orphans = sorted(set(installed) - set(offered))
    assert orphans, (
        "the simulated package set has installed packages without candidates"
    )
    orphan = orphans[0]
    pinned = BASE

    _run_ok(stack, "pkgstate.set", "base", BASE)
    _run_ok(stack, "pkgstate.assign", "base", f"org={ORG}")
    _run_ok(
        stack,
        "pkgstate.set",
        "web",
        f"{LATEST}@latest",
        f"{AT_LEAST}>=0.1",
        f"{NOT_INSTALLED}@removed",
    )
    _run_ok(stack, "pkgstate.assign", "web", f"group={GROUP.key}")
    _run_ok(
        stack,
        "pkgstate.set",
        f"minion:{target}",
        orphan,
        f"{pinned}=={installed[pinned]}",
    )
    shown = _run_ok(stack, "pkgstate.show", f"minion={target}")["packages"]
    assert {n: p["decided_by"] for n, p in shown.items()} == {
        pinned: f"minion:{target}",  # the minion's own state beats the org's
        LATEST: "web",
        AT_LEAST: "web",
        NOT_INSTALLED: "web",
        orphan: f"minion:{target}",
    }

    ran = stack.cmd("*", "state.apply", timeout=APPLY_TIMEOUT)
    assert sorted(ran) == sorted(everyone)
    for minion, result in ran.items():
        assert isinstance(result, dict), (minion, result)
        assert all(chunk["result"] is True for chunk in result.values()), minion
    # no change outside Salt: the beacons only make the engine refresh
    report = fire_beacons(stack.fleet.config.run_dir, everyone, change_packages=False)
    assert report.fired == sorted(everyone)

    expected = {
        minion: {BASE: "consistent"}
        | (
            {LATEST: "consistent", AT_LEAST: "consistent", NOT_INSTALLED: "consistent"}
            if minion in members
            else {}
        )
        for minion in everyone
    }
    expected[target] |= {orphan: "orphan-kept", pinned: "consistent"}
    for minion in everyone:

        def settled(m: str = minion) -> bool:
            return _statuses(store, m, grains[m]) == expected[m]

        # the engine's writes follow events the test cannot subscribe to
        assert wait_for(settled, timeout=ENGINE_TIMEOUT, interval=0.5), (
            f"{minion}'s statuses did not become {expected[minion]}"
        )
    inventory = store.inventory(target)
    assert inventory is not None and inventory.available is not None
    assert inventory.available[orphan] == []
    assert set(inventory.available) == {BASE, LATEST, AT_LEAST, orphan}

    # a group save is pending on its members only, for the package it adds
    _run_ok(stack, "pkgstate.update", "web", ADDED)
    for minion in everyone:
        want = expected[minion] | ({ADDED: "pending"} if minion in members else {})
        assert _statuses(store, minion, grains[minion]) == want, minion

    # outside Salt, every package of the target moves past the repositories
    before = inventory.refreshed_at
    report = fire_beacons(stack.fleet.config.run_dir, [target], packages=EVERY_PACKAGE)
    assert report.fired == [target]
    assert wait_for(
        lambda: (now := store.inventory(target)) and now.refreshed_at != before,
        timeout=ENGINE_TIMEOUT,
        interval=0.5,
    ), "the engine stored no new inventory of the target"
    assert _statuses(store, target, grains[target]) == expected[target] | {
        pinned: "inconsistent",  # no longer the pinned version
        ADDED: "pending",
    }

    summary = _run_ok(stack, "pkgstate.status")
    assert set(summary["total"]) == {
        "consistent",
        "pending",
        "inconsistent",
        "orphan-kept",
    }
    assert summary["minions"][target] == {
        "consistent": 3,
        "inconsistent": 1,
        "orphan-kept": 1,
        "pending": 1,
    }


def test_refresh_stores_inventory_and_candidates_at_once(
    stack: Stack, members: list[str], store: PackageStateStore
) -> None:
    minion = members[-1]
    _run_ok(stack, "pkgstate.set", f"minion:{minion}", "no-such-package")
    refreshed = _run_ok(stack, "pkgstate.refresh", minion)
    assert refreshed == {"refreshed": [minion]}
    stored = _run_ok(stack, "pkgstate.inventory", minion)
    assert stored["available"]["no-such-package"] == []
    assert stored["available"][BASE]
