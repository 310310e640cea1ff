"""Which states reach a minion, decided without the database: organization,
groups, grain matches, minion lists and the minion's own state."""

from __future__ import annotations

from saltext.pkgstate.model import compile_grain_match, validate_revision
from saltext.pkgstate.resolve import Reach, StateRevision, decided_by, resolve


def _rev(state: str, *entries: str) -> StateRevision:
    return StateRevision(state, 1, {e.name: e for e in validate_revision(entries)})


def _reach() -> Reach:
    reach = Reach()
    reach.add_org(1, "acme", 10, _rev("base", "nginx", "curl", "vim"))
    reach.add_group(7, "acme/edge", 11, _rev("edge", "nginx>=1.22"))
    reach.add_group(3, "acme/web", 12, _rev("web", "nginx>=1.20", "curl@latest"))
    reach.add_grain(
        compile_grain_match("G@os_family:Debian"), 13, _rev("debian", "vim@purged")
    )
    reach.add_minion("m1", 14, _rev("canary", "curl@removed"))
    reach.add_own("m1", _rev("minion:m1", "zsh"))
    return reach


def test_a_member_of_everything_gets_every_scope_in_order() -> None:
    sources = _reach().sources(
        "m1", org_id=1, group_ids=[3, 7], grains={"os_family": "Debian"}
    )
    assert decided_by(resolve(sources)) == {
        "nginx": "edge",  # the higher group id wins, whatever the assignment ids
        "curl": "canary",
        "vim": "debian",
        "zsh": "minion:m1",
    }


def test_a_minion_outside_the_directory_gets_grain_list_and_own_states() -> None:
    sources = _reach().sources(
        "m1", org_id=None, group_ids=(), grains={"os_family": "Debian"}
    )
    assert [(s.scope.value, s.target) for s in sources] == [
        ("grain", "G@os_family:Debian"),
        ("minion", "m1"),
        ("own", "m1"),
    ]


def test_without_grains_no_grain_match_applies() -> None:
    sources = _reach().sources("m2", org_id=1, group_ids=[3], grains=None)
    assert decided_by(resolve(sources)) == {
        "nginx": "web",
        "curl": "web",
        "vim": "base",
    }
