"""Read and write a :class:`~harness.pillar.model.FleetPillars` in the PostgreSQL
schema of ``sql/0001_pillar_store.sql``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg2.extensions
from psycopg2.extensions import cursor as Cursor
from psycopg2.extras import Json

from harness import migrations
from harness.pillar.model import FleetPillars, Group, MinionMembership, PillarRow
from harness.ports import free_port
from harness.postgres import ConnectionInfo, EmbeddedPostgres


class PillarStore:
    """All statements the harness runs against the pillar schema.

    Methods take a cursor so that callers decide the transaction: the
    migration writes everything in one.
    """

    def __init__(self, conn: psycopg2.extensions.connection) -> None:
        self.conn = conn

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """A cursor in one transaction: committed on success, rolled back on error."""
        with self.conn, self.conn.cursor() as cur:
            yield cur

    # -- reading -----------------------------------------------------------
    def load(self, cur: Cursor) -> FleetPillars:
        """Read the whole pillar store."""
        fleet = FleetPillars()
        cur.execute("SELECT id, name FROM organization ORDER BY id")
        org_names = {oid: name for oid, name in cur.fetchall()}
        fleet.orgs = list(org_names.values())
        cur.execute("SELECT id, org_id, name FROM server_group ORDER BY id")
        group_keys = {}
        for gid, org_id, name in cur.fetchall():
            group = Group(org_names[org_id], name)
            fleet.groups.append(group)
            group_keys[gid] = group.key
        cur.execute("SELECT id, org_id, minion_id FROM server ORDER BY minion_id")
        server_ids = {}
        for sid, org_id, minion_id in cur.fetchall():
            fleet.minions[minion_id] = MinionMembership(org_names[org_id])
            server_ids[sid] = minion_id
        cur.execute(
            "SELECT server_id, group_id FROM server_group_member ORDER BY group_id"
        )
        for sid, gid in cur.fetchall():
            fleet.minions[server_ids[sid]].groups.append(group_keys[gid])
        cur.execute(
            "SELECT server_id, group_id, org_id, category, pillar FROM salt_pillar ORDER BY id"
        )
        for sid, gid, oid, category, data in cur.fetchall():
            if sid is not None:
                row = PillarRow("minion", server_ids[sid], category, data)
            elif gid is not None:
                row = PillarRow("group", group_keys[gid], category, data)
            elif oid is not None:
                row = PillarRow("org", org_names[oid], category, data)
            else:
                row = PillarRow("global", None, category, data)
            fleet.rows.append(row)
        return fleet

    # -- writing -----------------------------------------------------------
    def ensure_org(self, cur: Cursor, name: str) -> int:
        """The id of organization ``name``, created if missing."""
        cur.execute(
            "INSERT INTO organization (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
            (name,),
        )
        cur.execute("SELECT id FROM organization WHERE name = %s", (name,))
        return int(cur.fetchone()[0])

    def ensure_group(self, cur: Cursor, group: Group) -> int:
        """The id of ``group`` (and its organization), created if missing."""
        org_id = self.ensure_org(cur, group.org)
        cur.execute(
            "INSERT INTO server_group (org_id, name) VALUES (%s, %s) "
            "ON CONFLICT (org_id, name) DO NOTHING",
            (org_id, group.name),
        )
        cur.execute(
            "SELECT id FROM server_group WHERE org_id = %s AND name = %s",
            (org_id, group.name),
        )
        return int(cur.fetchone()[0])

    def ensure_server(self, cur: Cursor, minion_id: str, org: str) -> int:
        """The id of minion ``minion_id`` in organization ``org``, created or moved."""
        org_id = self.ensure_org(cur, org)
        cur.execute(
            "INSERT INTO server (org_id, minion_id) VALUES (%s, %s) "
            "ON CONFLICT (minion_id) DO UPDATE SET org_id = EXCLUDED.org_id",
            (org_id, minion_id),
        )
        cur.execute("SELECT id FROM server WHERE minion_id = %s", (minion_id,))
        return int(cur.fetchone()[0])

    def set_membership(self, cur: Cursor, server_id: int, group_ids: list[int]) -> None:
        """Make the server's groups exactly ``group_ids``."""
        cur.execute(
            "DELETE FROM server_group_member WHERE server_id = %s AND NOT group_id = ANY(%s)",
            (server_id, group_ids),
        )
        for gid in group_ids:
            cur.execute(
                "INSERT INTO server_group_member (server_id, group_id) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (server_id, gid),
            )

    def upsert_row(self, cur: Cursor, row: PillarRow, target_id: int | None) -> None:
        """Insert ``row`` at its scope and target, or replace its data."""
        column = {
            "global": None,
            "org": "org_id",
            "group": "group_id",
            "minion": "server_id",
        }[row.scope]
        params: list[Any]
        if column is None:
            where, params = (
                "server_id IS NULL AND group_id IS NULL AND org_id IS NULL AND category = %s",
                [row.category],
            )
        else:
            where, params = (
                f"{column} = %s AND category = %s",
                [target_id, row.category],
            )
        cur.execute(
            f"UPDATE salt_pillar SET pillar = %s WHERE {where}",
            [Json(row.data), *params],
        )
        if cur.rowcount == 0:
            columns = ["category", "pillar"] + ([column] if column else [])
            values: list[Any] = [row.category, Json(row.data)] + (
                [target_id] if column else []
            )
            placeholders = ", ".join(["%s"] * len(values))
            cur.execute(
                f"INSERT INTO salt_pillar ({', '.join(columns)}) VALUES ({placeholders})",
                values,
            )

    def write(self, cur: Cursor, fleet: FleetPillars) -> None:
        """Make the database hold ``fleet`` (adds and updates; removes nothing)."""
        org_ids = {name: self.ensure_org(cur, name) for name in fleet.orgs}
        group_ids = {g.key: self.ensure_group(cur, g) for g in fleet.groups}
        server_ids = {}
        for minion_id, minion in fleet.minions.items():
            server_ids[minion_id] = self.ensure_server(cur, minion_id, minion.org)
            self.set_membership(
                cur, server_ids[minion_id], [group_ids[k] for k in minion.groups]
            )
        targets: dict[str, dict[str, int]] = {
            "org": org_ids,
            "group": group_ids,
            "minion": server_ids,
        }
        for row in fleet.rows:
            target_id = (
                None if row.scope == "global" else targets[row.scope][row.target or ""]
            )
            self.upsert_row(cur, row, target_id)


def store_fleet(info: ConnectionInfo, fleet: FleetPillars) -> None:
    """Write ``fleet`` into the database at ``info`` in one transaction."""
    conn = info.connect()
    try:
        store = PillarStore(conn)
        with store.transaction() as cur:
            store.write(cur, fleet)
    finally:
        conn.close()


@contextmanager
def fleet_database(workdir: Path, fleet: FleetPillars) -> Iterator[EmbeddedPostgres]:
    """An embedded PostgreSQL in ``workdir`` with the schema and ``fleet``'s
    pillars; stopped and removed on exit, also on errors."""
    pg = EmbeddedPostgres(workdir, free_port())
    pg.start()
    try:
        migrations.apply(pg.connection)
        store_fleet(pg.connection, fleet)
        yield pg
    finally:
        pg.stop()
        pg.cleanup()
