"""``python -m harness pillar import``: dry run, import, verification, idempotency,
and bad trees that write nothing."""

from __future__ import annotations

import pytest

from harness.pillar.files import write_tree
from harness.pillar.generate import generate
from tests.conftest import query, run_cli

pytestmark = pytest.mark.integration


def _count(info, table: str) -> int:
    return int(query(info, f"SELECT count(*) FROM {table}")[0][0])


def test_import_round_trip(database, tmp_path) -> None:
    tree = tmp_path / "tree"
    fleet = generate([f"node{n}.example.com" for n in range(40)])
    write_tree(fleet, tree)

    dry = run_cli("pillar", "import", str(tree), "--dsn", database.dsn, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{len(fleet.rows)} rows to add" in dry.stdout
    assert "dry run: nothing was written" in dry.stdout
    assert _count(database, "salt_pillar") == 0

    first = run_cli("pillar", "import", str(tree), "--dsn", database.dsn)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "40 of 40 minions compile to the same pillar" in first.stdout
    assert _count(database, "salt_pillar") == len(fleet.rows)

    again = run_cli("pillar", "import", str(tree), "--dsn", database.dsn, "--no-verify")
    assert again.returncode == 0
    assert (
        f"0 rows to add, 0 to change, {len(fleet.rows)} unchanged, 0 membership"
        in again.stdout
    )

    # a changed file is an update, shown as such
    (tree / "global" / "salt.sls").write_text("motd: changed\n")
    changed = run_cli("pillar", "import", str(tree), "--dsn", database.dsn)
    assert changed.returncode == 0, changed.stdout
    assert "~ global [salt]" in changed.stdout
    assert _count(database, "salt_pillar") == len(fleet.rows)


def test_bad_tree_writes_nothing(database, tmp_path) -> None:
    tree = tmp_path / "tree"
    write_tree(generate(["fresh-1", "fresh-2"]), tree)
    (tree / "minion" / "fresh-1" / "broken.sls").write_text("a: [1,\n")
    before = _count(database, "salt_pillar"), _count(database, "server")
    result = run_cli("pillar", "import", str(tree), "--dsn", database.dsn)
    assert result.returncode == 2
    assert "minion/fresh-1/broken.sls: cannot be read" in result.stderr
    assert "Traceback" not in result.stderr
    assert (_count(database, "salt_pillar"), _count(database, "server")) == before


def test_import_without_a_database(tmp_path) -> None:
    result = run_cli(
        "pillar",
        "import",
        str(tmp_path),
        "--root",
        str(tmp_path / "none"),
        env={"SALTFLEET_PG_DSN": ""},
    )
    assert result.returncode == 2
    assert "no database given" in result.stderr
