"""The pillar file tree: written trees read back identically; bad files are
reported by name, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.pillar.files import PillarTreeError, read_tree, write_tree
from harness.pillar.generate import FleetShape, generate
from harness.pillar.model import (
    FleetPillars,
    Group,
    MinionMembership,
    PillarRow,
    merged_pillar,
)


def _fleet() -> FleetPillars:
    return generate(
        [f"web{n}.example.com" for n in range(12)], FleetShape(orgs=2, groups_per_org=3)
    )


def test_round_trip(tmp_path: Path) -> None:
    fleet = _fleet()
    write_tree(fleet, tmp_path / "tree")
    again = read_tree(tmp_path / "tree")
    assert again.minions == fleet.minions
    assert again.groups == fleet.groups
    key = lambda r: (r.scope, r.target or "", r.category)  # noqa: E731
    assert sorted(
        ((r.scope, r.target, r.category, r.data) for r in again.rows), key=str
    ) == sorted(((r.scope, r.target, r.category, r.data) for r in fleet.rows), key=str)
    assert all(key(r) for r in again.rows)


def test_reference_merge_order() -> None:
    fleet = FleetPillars(
        orgs=["acme"],
        groups=[Group("acme", "first"), Group("acme", "second")],
        minions={"m1": MinionMembership("acme", ["acme/first", "acme/second"])},
        rows=[
            PillarRow("minion", "m1", "own", {"who": "minion"}),
            PillarRow("group", "acme/second", "g", {"who": "second", "tune": {"b": 2}}),
            PillarRow("group", "acme/first", "g", {"who": "first", "tune": {"a": 1}}),
            PillarRow("org", "acme", "o", {"who": "org", "org_only": True}),
            PillarRow("global", None, "z", {"who": "global", "global_only": True}),
        ],
    )
    assert merged_pillar(fleet, "m1") == {
        "who": "minion",
        "tune": {"a": 1, "b": 2},
        "org_only": True,
        "global_only": True,
    }
    assert merged_pillar(fleet, "stranger") == {"who": "global", "global_only": True}


def _assert_refused(tree: Path, *messages: str) -> None:
    """read_tree refuses the tree and its one error names every problem."""
    with pytest.raises(PillarTreeError) as err:
        read_tree(tree)
    for message in messages:
        assert message in str(err.value)


def test_bad_files_are_all_named(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write_tree(_fleet(), tree)
    (tree / "global" / "broken.sls").write_text("key: [unclosed\n")
    (tree / "global" / "listy.sls").write_text("- a\n- b\n")
    (tree / "minion" / "ghost").mkdir()
    (tree / "minion" / "ghost" / "x.sls").write_text("a: 1\n")
    (tree / "org" / "notes.txt").write_text("hello\n")
    _assert_refused(
        tree,
        "global/broken.sls: cannot be read",
        "global/listy.sls: must hold a mapping, holds a list",
        "minion/ghost/x.sls: no minion 'ghost'",
        "org/notes.txt: not a pillar file",
        "nothing was written",
    )


def test_membership_errors(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "fleet.yaml").write_text(
        "orgs: [acme]\n"
        "groups: [{org: acme, name: web}, {org: nowhere, name: db}]\n"
        "minions:\n  m1: {org: acme, groups: [db]}\n  m2: {org: other}\n"
    )
    _assert_refused(
        tree,
        "needs a name and a known org",
        "minion m1 is in unknown group(s) acme/db",
        "minion m2 has unknown org 'other'",
    )


def test_missing_fleet_file(tmp_path: Path) -> None:
    with pytest.raises(PillarTreeError, match=r"fleet\.yaml: missing"):
        read_tree(tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("bad.sls", "a: 1\nb: [1, 2\nc: 3\n", "line 3, column 2"),
        ("tabs.sls", "a:\n\tb: 1\n", "line 2, column 1"),
        ("bad.json", '{"a": 1,\n "b": }\n', "line 2, column 7"),
    ],
)
def test_unreadable_files_name_line_and_column(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    tree = tmp_path / "tree"
    write_tree(_fleet(), tree)
    (tree / "global" / name).write_text(text)
    _assert_refused(tree, f"global/{name}: cannot be read: {where}: ")
