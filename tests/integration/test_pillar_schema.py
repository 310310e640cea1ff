"""The pillar schema refuses what would make a merge ambiguous, and the
lookup function returns a minion's rows in merge order."""

from __future__ import annotations

import psycopg2
import pytest
from psycopg2.extras import Json

pytestmark = pytest.mark.integration


@pytest.fixture
def cur(database):
    conn = database.connect()
    try:
        with conn.cursor() as cursor:
            yield cursor
    finally:
        conn.rollback()  # every test leaves the database as it found it
        conn.close()


@pytest.fixture
def minion(cur):
    """Org 'o', groups g_late (created second) and g_early, server 'm1' in both."""
    cur.execute("INSERT INTO organization (name) VALUES ('o') RETURNING id")
    org = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO server_group (org_id, name) VALUES (%s, 'g_early') RETURNING id",
        (org,),
    )
    early = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO server_group (org_id, name) VALUES (%s, 'g_late') RETURNING id",
        (org,),
    )
    late = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO server (org_id, minion_id) VALUES (%s, 'm1') RETURNING id", (org,)
    )
    server = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO server_group_member VALUES (%s, %s), (%s, %s)",
        (server, late, server, early),
    )
    return {"org": org, "early": early, "late": late, "server": server}


def _insert(cur, category, data, **target):
    columns = ["category", "pillar", *target]
    cur.execute(
        f"INSERT INTO salt_pillar ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
        [category, Json(data), *target.values()],
    )


def test_rows_in_merge_order(cur, minion) -> None:
    _insert(cur, "z", {"scope": "minion"}, server_id=minion["server"])
    _insert(cur, "a", {"scope": "late"}, group_id=minion["late"])
    _insert(cur, "a", {"scope": "early"}, group_id=minion["early"])
    _insert(cur, "a", {"scope": "org"}, org_id=minion["org"])
    _insert(cur, "b", {"scope": "global-b"})
    _insert(cur, "a", {"scope": "global-a"})
    cur.execute("SELECT pillar->>'scope' FROM salt_pillar_rows('m1')")
    assert [r[0] for r in cur.fetchall()] == [
        "global-a",
        "global-b",
        "org",
        "early",
        "late",
        "minion",
    ]
    cur.execute("SELECT pillar->>'scope' FROM salt_pillar_rows('unknown')")
    assert [r[0] for r in cur.fetchall()] == ["global-a", "global-b"]


def test_global_rows_unique_per_category(cur) -> None:
    _insert(cur, "ntp", {"a": 1})
    with pytest.raises(psycopg2.errors.UniqueViolation):
        _insert(cur, "ntp", {"a": 2})


def test_one_target_at_most(cur, minion) -> None:
    with pytest.raises(psycopg2.errors.CheckViolation, match="salt_pillar_one_target"):
        _insert(cur, "x", {"a": 1}, server_id=minion["server"], org_id=minion["org"])


def test_pillar_must_be_an_object(cur) -> None:
    with pytest.raises(psycopg2.errors.CheckViolation, match="salt_pillar_is_object"):
        _insert(cur, "x", [1, 2])


def test_deleting_a_server_deletes_its_rows(cur, minion) -> None:
    _insert(cur, "own", {"a": 1}, server_id=minion["server"])
    cur.execute("DELETE FROM server WHERE id = %s", (minion["server"],))
    cur.execute(
        "SELECT count(*) FROM salt_pillar WHERE server_id = %s", (minion["server"],)
    )
    assert cur.fetchone()[0] == 0
