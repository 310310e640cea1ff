"""Package states on a simulated minion: every policy changes the package set as
the ``pkg`` state would, returns what Salt returns, and ``test=True`` changes nothing."""

from __future__ import annotations

import asyncio

import pytest

from evil_minions.functions import execute
from evil_minions.packages import PackageSet, candidate_level, is_orphan
from evil_minions.pkgstate_apply import apply_package_states, managed_packages

from .fakes import FakeMinion, publication, runtime


def _key(policy: str, name: str) -> str:
    function = "removed" if policy == "absent" else policy
    return f"pkg_|-pkgstate-{policy}-{name}_|-{name}_|-{function}"


@pytest.fixture
def pkgs() -> PackageSet:
    return PackageSet("evil-0007", "suse", 200)


def _not_installed(pkgs: PackageSet) -> str:
    return next(n for n in pkgs.catalog() if n not in pkgs.names())


def _with_update(pkgs: PackageSet) -> str:
    return next(n for n in pkgs.names() if candidate_level(pkgs.style, n) == 1)


def _orphan(pkgs: PackageSet) -> str:
    return next(n for n in pkgs.names() if is_orphan(pkgs.style, n))


def test_installed_installs_the_candidate_and_leaves_installed_ones(pkgs):
    missing, present = _not_installed(pkgs), pkgs.names()[0]
    run = apply_package_states(
        pkgs, {missing: {"policy": "installed"}, present: {"policy": "installed"}}
    )
    new = run[_key("installed", missing)]
    assert new["result"] is True
    assert new["changes"] == {missing: {"new": pkgs.candidate(missing), "old": ""}}
    assert (
        new["__sls__"] == "pkgstate"
        and new["__id__"] == f"pkgstate-installed-{missing}"
    )
    same = run[_key("installed", present)]
    assert same["result"] is True and same["changes"] == {}
    assert same["comment"] == f"Package {present} is already installed"
    assert pkgs.list_pkgs()[missing] == pkgs.candidate(missing)
    assert sorted(c["__run_num__"] for c in run.values()) == [0, 1]


def test_installed_with_operator_picks_the_newest_version_meeting_it(pkgs):
    name = _with_update(pkgs)
    oldest, newest = pkgs.repo_versions(name)
    run = apply_package_states(
        pkgs, {name: {"policy": "installed", "op": ">", "version": oldest}}
    )
    assert run[_key("installed", name)]["changes"] == {
        name: {"new": newest, "old": oldest}
    }
    assert pkgs.installed()[name] == newest
    # now met: nothing to do
    again = apply_package_states(
        pkgs, {name: {"policy": "installed", "op": ">=", "version": newest}}
    )
    assert again[_key("installed", name)]["changes"] == {}
    assert again[_key("installed", name)]["result"] is True
    # a downgrade to a version the repositories carry
    down = apply_package_states(
        pkgs, {name: {"policy": "installed", "op": "<", "version": newest}}
    )
    assert down[_key("installed", name)]["changes"] == {
        name: {"new": oldest, "old": newest}
    }


def test_installed_fails_for_a_version_nobody_offers(pkgs):
    name = pkgs.names()[3]
    before = pkgs.list_pkgs()
    run = apply_package_states(
        pkgs, {name: {"policy": "installed", "op": ">=", "version": "99"}}
    )
    chunk = run[_key("installed", name)]
    assert chunk["result"] is False and chunk["changes"] == {}
    # the package exists, so Salt's pre-flight check passes and the package
    # manager's refusal is the comment
    assert chunk["comment"].startswith(
        "Problem encountered installing package(s). Additional info follows:"
    )
    assert chunk["comment"].endswith(f"errors:\n    - No package {name}>=99 available.")
    assert pkgs.list_pkgs() == before


def test_latest_upgrades_and_keeps_orphans(pkgs):
    name, orphan = _with_update(pkgs), _orphan(pkgs)
    old = pkgs.installed()[name]
    run = apply_package_states(
        pkgs, {name: {"policy": "latest"}, orphan: {"policy": "latest"}}
    )
    assert run[_key("latest", name)]["changes"] == {
        name: {"new": pkgs.candidate(name), "old": old}
    }
    kept = run[_key("latest", orphan)]
    assert kept["result"] is True and kept["changes"] == {}
    assert kept["comment"] == f"Package {orphan} is already up-to-date"
    assert orphan in pkgs.names()


def test_latest_of_an_unknown_package_fails(pkgs):
    run = apply_package_states(pkgs, {"nosuch": {"policy": "latest"}})
    assert run[_key("latest", "nosuch")]["result"] is False
    assert (
        run[_key("latest", "nosuch")]["comment"] == "No information found for 'nosuch'."
    )


@pytest.mark.parametrize("policy", ["removed", "purged"])
def test_removed_and_purged_remove(pkgs, policy):
    name = pkgs.names()[5]
    version = pkgs.installed()[name]
    run = apply_package_states(
        pkgs, {name: {"policy": policy}, "gone": {"policy": policy}}
    )
    chunk = run[_key(policy, name)]
    assert chunk["changes"] == {name: {"new": "", "old": version}}
    assert chunk["comment"] == f"All targeted packages were {policy}."
    assert name not in pkgs.names()
    assert run[_key(policy, "gone")]["changes"] == {}
    assert run[_key(policy, "gone")]["comment"].startswith(
        "None of the targeted packages are installed"
    )


def test_absent_removes_only_while_the_version_matches(pkgs):
    low, high = pkgs.names()[6], pkgs.names()[7]
    entries = {
        low: {"policy": "absent", "op": "<", "version": "99"},
        high: {"policy": "absent", "op": ">", "version": "99"},
    }
    run = apply_package_states(pkgs, entries)
    assert run[_key("absent", low)]["changes"][low]["new"] == ""
    assert run[_key("absent", high)]["changes"] == {}
    assert low not in pkgs.names() and high in pkgs.names()


def test_test_mode_reports_salts_dry_run_changes_and_changes_nothing(pkgs):
    missing, upgradable = _not_installed(pkgs), _with_update(pkgs)
    gone, kept = [n for n in pkgs.names() if n != upgradable][:2]
    before = pkgs.list_pkgs()
    run = apply_package_states(
        pkgs,
        {
            missing: {"policy": "installed"},
            upgradable: {"policy": "latest"},
            gone: {"policy": "purged"},
            kept: {"policy": "installed"},
        },
        test=True,
    )
    assert pkgs.list_pkgs() == before and pkgs.generation == 0
    assert run[_key("installed", missing)]["result"] is None
    assert run[_key("installed", missing)]["comment"] == (
        f"The following packages would be installed/updated: {missing}"
    )
    assert run[_key("latest", upgradable)]["changes"] == {
        upgradable: {"new": pkgs.candidate(upgradable), "old": before[upgradable]}
    }
    assert run[_key("purged", gone)]["changes"] == {gone: {"new": "purged", "old": ""}}
    assert run[_key("purged", gone)]["result"] is None
    assert run[_key("installed", kept)]["result"] is True


def test_managed_packages_reads_the_contract_key():
    assert managed_packages(
        {"pkgstate": {"packages": {"vim": {"policy": "latest"}}}}
    ) == {"vim": {"policy": "latest"}}
    assert managed_packages({"pkgstate": "junk"}) == {}
    assert managed_packages(None) == {}


# -- through the simulated functions -------------------------------------------------


def _pillar(entries):
    return {"pkgstate": {"packages": entries, "sources": [], "digest": "x"}}


def test_state_sls_pkgstate_fetches_the_pillar_and_applies_it():
    minion = FakeMinion()
    gone = minion.packages.names()[0]
    minion.master_pillar = _pillar(
        {gone: {"policy": "removed", "decided_by": "org:acme"}}
    )
    outcome = asyncio.run(
        execute(minion, runtime(), publication("state.sls", ["pkgstate"]))
    )
    assert len(minion.pillar_fetches) == 1
    assert outcome.retcode == 0 and outcome.out == "highstate"
    assert list(outcome.ret) == [_key("removed", gone)]
    assert gone not in minion.packages.names()


def test_highstate_adds_package_states_after_the_other_states():
    minion = FakeMinion()
    name = minion.packages.names()[1]
    minion.master_pillar = _pillar({name: {"policy": "purged"}})
    outcome = asyncio.run(
        execute(
            minion,
            runtime(),
            publication("state.apply", [{"test": True, "__kwarg__": True}]),
        )
    )
    chunk = outcome.ret[_key("purged", name)]
    assert chunk["result"] is None and chunk["__run_num__"] == 4  # after the 4 others
    assert name in minion.packages.names()


def test_every_state_run_compiles_the_pillar_unless_told_not_to():
    minion = FakeMinion()
    asyncio.run(execute(minion, runtime(), publication("state.sls", ["web"])))
    assert len(minion.pillar_fetches) == 1
    spared = runtime()
    spared.state_pillar = False
    asyncio.run(execute(minion, spared, publication("state.sls", ["web"])))
    assert len(minion.pillar_fetches) == 1


def test_a_failed_package_state_fails_the_run_with_retcode_2():
    minion = FakeMinion()
    missing = "saltfleet-no-such-package"
    minion.master_pillar = _pillar(
        {missing: {"policy": "installed", "op": "=", "version": "9.9", "hold": True}}
    )
    outcome = asyncio.run(
        execute(minion, runtime(), publication("state.sls", ["pkgstate"]))
    )
    assert (outcome.retcode, outcome.success, outcome.out) == (2, False, "highstate")
    failed = outcome.ret[_key("installed", missing)]
    assert failed["result"] is False and failed["changes"] == {}
    assert failed["comment"].endswith(f"found in the package db: {missing}")
    held = outcome.ret[f"pkg_|-pkgstate-held-{missing}_|-{missing}_|-held"]
    assert held["result"] is False and held["__state_ran__"] is False
    assert held["comment"] == (
        f"One or more requisite failed: pkgstate.pkgstate-installed-{missing}"
    )


def test_pkg_queries_follow_the_repositories():
    minion = FakeMinion()
    pkgs = minion.packages = PackageSet(minion.minion_id, "suse", 200)
    name = _with_update(pkgs)
    orphan = _orphan(pkgs)

    def call(fun, *args):
        return asyncio.run(execute(minion, runtime(), publication(fun, list(args)))).ret

    assert call("pkg.latest_version", name) == pkgs.candidate(name)
    assert call("pkg.latest_version", name, orphan) == {
        name: pkgs.candidate(name),
        orphan: "",
    }
    assert call("pkg.version", orphan) == pkgs.installed()[orphan]
    assert call("pkg.list_upgrades")[name] == pkgs.candidate(name)
    repo = call("pkg.list_repo_pkgs")
    assert orphan not in repo and repo[name] == pkgs.repo_versions(name)[::-1]
    assert set(call("pkg.list_repo_pkgs", "lib*")) <= {
        n for n in repo if n.startswith("lib")
    }


def test_exact_version_with_hold_adds_a_held_state_once(pkgs):
    name = pkgs.names()[8]
    entry = {
        name: {
            "policy": "installed",
            "op": "=",
            "version": pkgs.installed()[name],
            "hold": True,
        }
    }
    held_key = f"pkg_|-pkgstate-held-{name}_|-{name}_|-held"
    dry = apply_package_states(pkgs, entry, test=True)
    assert dry[held_key]["result"] is None and not pkgs.is_held(name)
    first = apply_package_states(pkgs, entry)
    assert first[held_key]["changes"] == {name: {"new": "hold", "old": ""}}
    assert first[held_key]["__run_num__"] == 1 and pkgs.is_held(name)
    again = apply_package_states(pkgs, entry)
    assert again[held_key]["changes"] == {}
    # a provider without holds: the pillar says why, no held state
    unsupported = dict(entry[name], hold="unsupported by pacman")
    assert list(apply_package_states(pkgs, {name: unsupported})) == [
        _key("installed", name)
    ]


def test_apt_refuses_a_missing_package_in_its_own_words():
    # apt has no pkg.check_db: the install runs and apt's error is the comment
    # (as a real Debian 3008 minion returns it, see test_sim_vs_real)
    pkgs = PackageSet("evil-0002", "deb", 50)
    run = apply_package_states(pkgs, {"nosuch": {"policy": "installed"}})
    assert run[_key("installed", "nosuch")]["comment"] == (
        "Problem encountered installing package(s). Additional info follows:"
        "\n\nerrors:\n    - E: Unable to locate package nosuch"
    )
