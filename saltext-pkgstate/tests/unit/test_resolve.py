"""Precedence: org < group (by id) < grain match < minion list < own state."""

from __future__ import annotations

from saltext.pkgstate.model import parse_entry, validate_revision
from saltext.pkgstate.resolve import (
    Scope,
    Source,
    StateRevision,
    decided_by,
    digest_of,
    hold_value,
    resolve,
)


def _rev(state: str, *entries: str, number: int = 1) -> StateRevision:
    return StateRevision(state, number, {e.name: e for e in validate_revision(entries)})


ORG = Source(Scope.ORG, "acme", (1,), _rev("base", "nginx", "curl", "vim", "zsh"))
GROUP_LOW = Source(Scope.GROUP, "acme/web", (3, 9), _rev("web", "nginx>=1.20", "curl"))
GROUP_HIGH = Source(Scope.GROUP, "acme/edge", (7, 2), _rev("edge", "nginx=1.22"))
GRAIN = Source(
    Scope.GRAIN, "G@os:Ubuntu", (4,), _rev("ubuntu", "curl@latest", "vim@purged")
)
LISTED = Source(Scope.MINION, "m1", (5,), _rev("pinned", "vim@removed"))
OWN = Source(Scope.OWN, "m1", (0,), _rev("minion:m1", "zsh@absent<5", number=4))


def test_each_scope_overrides_the_one_before() -> None:
    result = resolve([OWN, LISTED, GRAIN, GROUP_HIGH, GROUP_LOW, ORG])
    assert decided_by(result) == {
        "nginx": "edge",  # higher group id beats lower
        "curl": "ubuntu",  # grain match beats groups
        "vim": "pinned",  # minion list beats grain match
        "zsh": "minion:m1",  # own state beats everything
    }
    assert result["packages"]["zsh"] == {
        "policy": "absent",
        "op": "<",
        "version": "5",
        "decided_by": "minion:m1",
    }
    assert [s["state"] for s in result["sources"]] == [
        "base",
        "web",
        "edge",
        "ubuntu",
        "pinned",
        "minion:m1",
    ]
    assert result["sources"][-1] == {
        "state": "minion:m1",
        "scope": "own",
        "target": "m1",
        "revision": 4,
    }


def test_group_order_is_by_group_id_not_input_order() -> None:
    low_first = resolve([GROUP_HIGH, GROUP_LOW])
    assert low_first["packages"]["nginx"]["decided_by"] == "edge"


def test_grain_matches_order_by_assignment_id() -> None:
    a = Source(Scope.GRAIN, "os:*", (10,), _rev("late", "curl@removed"))
    b = Source(Scope.GRAIN, "os:U*", (11,), _rev("later", "curl=7.0"))
    assert decided_by(resolve([b, a])) == {"curl": "later"}


def test_state_reached_twice_counts_at_its_most_specific_scope() -> None:
    shared = _rev("shared", "curl@purged")
    result = resolve(
        [
            Source(Scope.ORG, "acme", (1,), shared),
            Source(Scope.GROUP, "acme/web", (3, 4), _rev("web", "curl")),
            Source(Scope.MINION, "m1", (6,), shared),
        ]
    )
    assert result["packages"]["curl"]["policy"] == "purged"
    assert [s["scope"] for s in result["sources"]] == ["group", "minion"]


def test_no_sources_is_empty_and_has_a_digest() -> None:
    result = resolve([])
    assert result["packages"] == {}
    assert result["sources"] == []
    assert result["digest"] == digest_of({})


def test_digest_is_what_digest_of_computes() -> None:
    result = resolve([ORG, GROUP_LOW, GRAIN], hold=True)
    assert result["digest"] == digest_of(result["packages"])


def test_digest_ignores_which_state_decided() -> None:
    one = resolve([Source(Scope.ORG, "acme", (1,), _rev("a", "curl>=7"))])
    two = resolve([Source(Scope.ORG, "acme", (1,), _rev("b", "curl>=7"))])
    assert one["digest"] == two["digest"]
    three = resolve([Source(Scope.ORG, "acme", (1,), _rev("b", "curl>7"))])
    assert three["digest"] != one["digest"]


def test_exact_versions_report_hold_support() -> None:
    rev = _rev("s", "nginx=1.2", "curl>=7")
    supported = resolve([Source(Scope.OWN, "m", (0,), rev)], hold=True)
    assert supported["packages"]["nginx"]["hold"] is True
    assert "hold" not in supported["packages"]["curl"]
    unsupported = resolve(
        [Source(Scope.OWN, "m", (0,), rev)], hold=hold_value({"os_family": "Arch"})
    )
    assert unsupported["packages"]["nginx"]["hold"] == "unsupported by pacman"


def test_hold_value_by_provider() -> None:
    assert hold_value({"os_family": "Debian"}) is True
    assert hold_value({"os_family": "RedHat"}) is True
    assert hold_value({"os_family": "Suse"}) is True
    assert hold_value({"os_family": "FreeBSD"}) == "unsupported by pkgng"
    assert hold_value(None) == "unsupported by unknown"


def test_rows_and_entries_give_the_same_revision() -> None:
    from_entries = _rev("s", "nginx>=1", "curl", "bash=2")
    from_rows = StateRevision(
        "s",
        1,
        rows=[
            ("nginx", "installed", ">=", "1"),
            ("curl", "installed", None, None),
            ("bash", "installed", "=", "2"),
        ],
    )
    assert from_rows.packages == from_entries.packages
    assert from_rows.lines == from_entries.lines
    assert from_rows.packages_for(True) == from_entries.packages_for(True)
    assert from_entries.packages["nginx"] == {
        **parse_entry("nginx>=1").as_dict(),
        "decided_by": "s",
    }
