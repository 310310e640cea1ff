"""The extension's database schema: ordered SQL migrations shipped in the package.

``saltext/pkgstate/migrations/NNNN_name.sql`` are applied in version order,
each once, in its own transaction, and recorded in ``pkgstate_schema``.
Applying again is a no-op; a migration that fails rolls back alone and
leaves the earlier ones and every row in place.

Two ways to run them:

.. code-block:: bash

    salt-run pkgstate.migrate                 # the database of the master config
    saltext-pkgstate-migrate "host=db.example.com dbname=salt user=salt_owner"

The second runs without a master, with a role that may create tables, so
that the master's own role needs none.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

import psycopg2
import psycopg2.extensions

from saltext.pkgstate.db import PkgStateStoreError

#: The table that records which migrations a database has.
VERSION_TABLE: Final = "pkgstate_schema"
_NAME_RE: Final = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")


class SchemaError(PkgStateStoreError):
    """A migration failed to apply (and was rolled back)."""


@dataclass(frozen=True)
class Migration:
    """One shipped migration: ``NNNN_name.sql`` and its SQL."""

    version: int
    name: str
    sql: str

    @property
    def filename(self) -> str:
        """``0002_package_states.sql``."""
        return f"{self.version:04d}_{self.name}.sql"


def shipped() -> list[Migration]:
    """The migrations in the package, in version order."""
    found = []
    for item in resources.files("saltext.pkgstate").joinpath("migrations").iterdir():
        match = _NAME_RE.match(item.name)
        if match:
            found.append(
                Migration(int(match["version"]), match["name"], item.read_text())
            )
    return sorted(found, key=lambda m: m.version)


def migrate(dsn: str, *, baseline: int = 0) -> list[Migration]:
    """Apply the migrations ``dsn`` lacks; return the ones applied now.

    ``baseline``: versions up to it are recorded as applied without running
    them, for a database that got this schema before the extension kept its
    own record (saltfleet's ``sql/0002``).
    """
    try:
        conn = psycopg2.connect(dsn, connect_timeout=10)
    except psycopg2.Error as exc:
        raise SchemaError(
            f"cannot connect to the package state database: {str(exc).strip()}"
        ) from None
    try:
        return apply_migrations(conn, shipped(), VERSION_TABLE, baseline=baseline)
    finally:
        conn.close()


def apply_migrations(
    conn: psycopg2.extensions.connection,
    migrations: Sequence[Migration],
    table: str,
    *,
    baseline: int = 0,
) -> list[Migration]:
    """Apply the ``migrations`` that ``table`` does not record, in order, each
    in its own transaction; return the ones applied now (``baseline``: as
    :func:`migrate`). A failure raises :class:`SchemaError` and rolls back
    that migration alone. For a schema of its own beside this one, with a
    record ``table`` of its own (saltfleet's ``sql/``)."""
    applied_now: list[Migration] = []
    with conn, conn.cursor() as cur:
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {table} ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur.execute(f"SELECT version FROM {table}")
        done = {row[0] for row in cur.fetchall()}
    for migration in sorted(migrations, key=lambda m: m.version):
        if migration.version in done:
            continue
        try:
            with conn, conn.cursor() as cur:
                if migration.version > baseline:
                    cur.execute(migration.sql)
                cur.execute(
                    f"INSERT INTO {table} (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
        except psycopg2.Error as exc:
            raise SchemaError(
                f"migration {migration.filename} failed and was rolled back: "
                f"{str(exc).strip()}"
            ) from None
        if migration.version > baseline:
            applied_now.append(migration)
    return applied_now


def main(argv: list[str] | None = None) -> int:
    """``saltext-pkgstate-migrate DSN``: apply the migrations, say which."""
    parser = argparse.ArgumentParser(
        prog="saltext-pkgstate-migrate",
        description="Create or update the saltext.pkgstate tables in PostgreSQL.",
    )
    parser.add_argument("dsn", help="a libpq connection string or URI")
    args = parser.parse_args(argv)
    try:
        applied = migrate(args.dsn)
    except SchemaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for migration in applied:
        print(f"applied {migration.filename}")
    if not applied:
        print("the schema is up to date")
    return 0


__all__ = [
    "VERSION_TABLE",
    "Migration",
    "SchemaError",
    "apply_migrations",
    "main",
    "migrate",
    "shipped",
]
