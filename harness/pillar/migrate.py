"""Migrate file pillars into PostgreSQL: plan, import in one transaction, verify.

``python -m harness pillar import TREE`` reads the tree (every bad file is
reported by name and nothing is written), shows what would change, writes it
all in one transaction unless ``--dry-run``, then compiles every minion's
pillar from the files and from the database through Salt's own pillar
compiler and reports each difference. Re-running changes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.pillar.compile import database_compiler, file_compiler
from harness.pillar.files import read_tree
from harness.pillar.model import FleetPillars, PillarRow
from harness.pillar.store import PillarStore
from harness.pillar.variants import FUNCTION_QUERY
from harness.postgres import ConnectionInfo


@dataclass
class Plan:
    """What an import would change."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    memberships: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the import would change nothing."""
        return not (self.added or self.changed or self.memberships)

    def render(self) -> str:
        """One line per change (``+`` add, ``~`` change, ``@`` membership) and a total."""
        lines = [f"+ {label}" for label in self.added]
        lines += [f"~ {label}" for label in self.changed]
        lines += [f"@ {m}" for m in self.memberships]
        lines.append(
            f"{len(self.added)} rows to add, {len(self.changed)} to change, "
            f"{self.unchanged} unchanged, {len(self.memberships)} membership changes"
        )
        return "\n".join(lines)


def _row_key(row: PillarRow) -> tuple[str, str | None, str]:
    return (row.scope, row.target, row.category)


def plan(current: FleetPillars, wanted: FleetPillars) -> Plan:
    """Compare what the database holds with what the tree says."""
    result = Plan()
    have = {_row_key(r): r.data for r in current.rows}
    for row in wanted.rows:
        before = have.get(_row_key(row))
        if before is None:
            result.added.append(row.label)
        elif before != row.data:
            result.changed.append(row.label)
        else:
            result.unchanged += 1
    for minion_id, minion in wanted.minions.items():
        now = current.minions.get(minion_id)
        if (
            now is None
            or now.org != minion.org
            or sorted(now.groups) != sorted(minion.groups)
        ):
            result.memberships.append(
                f"{minion_id}: org {minion.org}, groups {minion.groups}"
            )
    return result


def import_tree(
    info: ConnectionInfo, tree: Path, *, dry_run: bool
) -> tuple[FleetPillars, Plan]:
    """Read ``tree``, plan, and (unless ``dry_run``) write it in one transaction."""
    wanted = read_tree(tree)
    conn = info.connect()
    try:
        store = PillarStore(conn)
        with store.transaction() as cur:
            changes = plan(store.load(cur), wanted)
            if not dry_run and not changes.empty:
                store.write(cur, wanted)
            if dry_run:
                conn.rollback()
    finally:
        conn.close()
    return wanted, changes


@dataclass(frozen=True)
class Difference:
    """A minion whose pillar differs between the file tree and the database."""

    minion_id: str
    files: Any
    database: Any


def verify(
    info: ConnectionInfo,
    tree: Path,
    fleet: FleetPillars,
    progress: Callable[[int, int], None] | None = None,
) -> list[Difference]:
    """Compile every minion's pillar from files and from the database; differences."""
    from_files = file_compiler(tree)
    from_db = database_compiler(
        info, [{"postgres": [{"query": FUNCTION_QUERY, "as_json": True}]}]
    )
    differences = []
    try:
        for done, minion_id in enumerate(fleet.minions, 1):
            a, b = from_files.compile(minion_id), from_db.compile(minion_id)
            if a != b:
                differences.append(Difference(minion_id, a, b))
            if progress is not None:
                progress(done, len(fleet.minions))
    finally:
        from_files.close()
        from_db.close()
    return differences


def progress_line(done: int, total: int) -> None:
    """Print verification progress on one updating stderr line."""
    if done == total or done % 50 == 0:
        print(
            f"\rverified {done}/{total} minions",
            end="" if done < total else "\n",
            file=sys.stderr,
            flush=True,
        )
