"""The benchmark's generated package states: deterministic, valid entries, and
applicable by the simulated minions they are meant for."""

from __future__ import annotations

from benchmarks.pkgstates.scenario import ALL_GROUP, build, changed_revision
from harness.fleet import PackageSet, apply_package_states, os_profile_for

IDS = [f"evil-{i:04d}" for i in range(1, 13)]


def _build():
    return build(IDS, packages=60, package_count=120, groups=4)


def test_states_at_every_scope_deterministically() -> None:
    scenario = _build()
    assert scenario == _build()
    scopes = [s.scope for s in scenario.states]
    assert scopes.count("org") == 1 and scopes.count("group") == 4
    assert scopes.count("grain") == 5 and scopes.count("minion") == len(IDS)
    assert scenario.groups[ALL_GROUP] == IDS
    assert (
        sorted(m for g, ms in scenario.groups.items() if g != ALL_GROUP for m in ms)
        == IDS
    )
    assert all(len(s.entries) == 60 for s in scenario.states)


def test_entries_parse_and_a_change_touches_a_tenth() -> None:
    from saltext.pkgstate.model import validate_revision

    scenario = _build()
    for spec in scenario.states:
        validate_revision(spec.entries)
    group = scenario.state(f"group-{ALL_GROUP}")
    changed = changed_revision(group)
    validate_revision(changed)
    assert 1 <= sum(a != b for a, b in zip(group.entries, changed, strict=True)) <= 6


def test_own_states_apply_without_failures_on_their_minion() -> None:
    from saltext.pkgstate.model import parse_entry

    scenario = _build()
    for minion in IDS:
        pkgs = PackageSet(minion, os_profile_for(minion).package_style, 120)
        entries = {
            e.name: e.as_dict()
            for e in map(parse_entry, scenario.state(f"minion:{minion}").entries)
        }
        run = apply_package_states(pkgs, entries)
        failed = [c["comment"] for c in run.values() if c["result"] is False]
        assert failed == []
