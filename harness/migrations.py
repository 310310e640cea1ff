"""Apply the ordered SQL migrations of ``sql/`` to a database, once each,
then those the saltext-pkgstate extension ships.

A migration is a file ``sql/NNNN_name.sql``. Applied versions are recorded in
``saltfleet_schema``; re-applying is a no-op, and a migration that fails rolls
back alone, leaving the earlier ones and all data in place. The extension
keeps its own record (``saltext.pkgstate.schema``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from saltext.pkgstate import schema as pkgstate_schema

from harness.errors import HarnessError
from harness.postgres import ConnectionInfo

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
_NAME_RE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
#: sql/0002 of databases made before the extension shipped its schema: the
#: extension's 0001 and 0002, which then exist already
_PKGSTATE_WAS_OURS = (2, "package_states")
_PKGSTATE_BASELINE = 2
#: the table that records which of ``sql/`` a database has
VERSION_TABLE = "saltfleet_schema"


class MigrationError(HarnessError):
    """A migration file is misnamed, or failed to apply."""


@dataclass(frozen=True)
class Migration:
    """One numbered schema migration file (``NNNN_name.sql``)."""

    version: int
    name: str
    path: Path


def discover(sql_dir: Path = SQL_DIR) -> list[Migration]:
    """The migrations in ``sql_dir``, ordered; bad names and duplicates fail."""
    found: dict[int, Migration] = {}
    for path in sorted(sql_dir.glob("*.sql")):
        match = _NAME_RE.match(path.name)
        if not match:
            raise MigrationError(
                f"{path}: migration files are named NNNN_lowercase_name.sql"
            )
        version = int(match["version"])
        if version in found:
            raise MigrationError(
                f"{path} and {found[version].path} share version {version:04d}"
            )
        found[version] = Migration(version, match["name"], path)
    return [found[v] for v in sorted(found)]


def apply(info: ConnectionInfo, sql_dir: Path = SQL_DIR) -> list[Migration]:
    """Apply the migrations not yet recorded, then the package state
    extension's; return the ones of ``sql_dir`` applied now."""
    migrations = {m.version: m for m in discover(sql_dir)}
    conn = info.connect()
    try:
        # the extension's way of applying numbered SQL files, on our own record
        applied_now = pkgstate_schema.apply_migrations(
            conn,
            [
                pkgstate_schema.Migration(m.version, m.name, m.path.read_text())
                for m in migrations.values()
            ],
            VERSION_TABLE,
        )
        with conn, conn.cursor() as cur:
            cur.execute(
                f"SELECT 1 FROM {VERSION_TABLE} WHERE version = %s AND name = %s",
                _PKGSTATE_WAS_OURS,
            )
            pkgstate_was_ours = cur.fetchone() is not None
    except pkgstate_schema.SchemaError as exc:
        raise MigrationError(str(exc)) from None
    finally:
        conn.close()
    baseline = _PKGSTATE_BASELINE if pkgstate_was_ours else 0
    try:
        pkgstate_schema.migrate(info.dsn, baseline=baseline)
    except pkgstate_schema.SchemaError as exc:
        raise MigrationError(f"saltext-pkgstate: {exc}") from None
    return [migrations[m.version] for m in applied_now]


def current_version(info: ConnectionInfo) -> int:
    """The highest applied migration version, 0 when none is."""
    conn = info.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", (VERSION_TABLE,))
            if not cur.fetchone()[0]:
                return 0
            cur.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}")
            return int(cur.fetchone()[0])
    finally:
        conn.close()
