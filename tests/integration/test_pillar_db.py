"""Pillars from PostgreSQL through a real master and a real minion."""

from __future__ import annotations

import pytest

from harness.pillar.model import (
    FleetPillars,
    Group,
    MinionMembership,
    PillarRow,
    merged_pillar,
)
from harness.pillar.store import store_fleet
from harness.pillar.variants import master_opts
from harness.stack import REAL_MINION_ID, Stack, StackSettings
from tests.conftest import query

pytestmark = pytest.mark.integration

ODD_ID = "o'brien%s;DROP TABLE salt_pillar;--"


def _fleet(minion_id: str) -> FleetPillars:
    """Two groups set the same keys; the later-created group wins."""
    return FleetPillars(
        orgs=["acme"],
        # created in this order, so "zeta" gets the lower id and loses
        groups=[Group("acme", "zeta"), Group("acme", "alpha")],
        minions={minion_id: MinionMembership("acme", ["acme/zeta", "acme/alpha"])},
        rows=[
            PillarRow(
                "global",
                None,
                "base",
                {"motd": "global", "ntp": ["pool"], "level": "global"},
            ),
            PillarRow("org", "acme", "org", {"ntp": ["ntp.acme"], "level": "org"}),
            PillarRow(
                "group",
                "acme/zeta",
                "grp",
                {"motd": "zeta", "tune": {"z": 1}, "level": "group"},
            ),
            PillarRow(
                "group", "acme/alpha", "grp", {"motd": "alpha", "tune": {"a": 1}}
            ),
            PillarRow("minion", minion_id, "own", {"level": "minion", "secret": "s3"}),
        ],
    )


def _write(stack: Stack, fleet: FleetPillars) -> None:
    assert stack.pg is not None
    store_fleet(stack.pg, fleet)


def _pillar(stack: Stack, minion_id: str) -> dict:
    ret = stack.cmd(minion_id, "pillar.items", ["unmask=True"], tgt_type="list")
    assert isinstance(ret[minion_id], dict), ret
    return ret[minion_id]


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    settings = StackSettings(
        root=open_tmp_module / "stack",
        master_opts=master_opts(
            "db-function", pillar_tree=None, extension_dir=open_tmp_module
        ),
    )
    with Stack(settings) as running:
        _write(running, _fleet(REAL_MINION_ID))
        yield running


def test_merge_precedence_and_group_order(stack: Stack) -> None:
    pillar = _pillar(stack, REAL_MINION_ID)
    assert pillar == merged_pillar(_fleet(REAL_MINION_ID), REAL_MINION_ID)
    assert pillar["level"] == "minion"
    assert pillar["ntp"] == ["ntp.acme"]  # org over global, lists replaced
    assert pillar["motd"] == "alpha"  # the group with the higher id wins
    assert pillar["tune"] == {"z": 1, "a": 1}


def test_database_down_is_a_pillar_error_then_recovers(stack: Stack) -> None:
    assert stack.postgres is not None
    stack.postgres.stop()
    try:
        broken = _pillar(stack, REAL_MINION_ID)
        assert "_errors" in broken
        assert any("ext_pillar postgres" in e for e in broken["_errors"])
        # the minion is not told where the database is
        assert stack.pg is not None
        assert not any(str(stack.pg.port) in e for e in broken["_errors"])
        assert "secret" not in broken and "level" not in broken
        # a highstate refuses to run on a failed pillar
        state = stack.cmd(REAL_MINION_ID, "state.highstate")[REAL_MINION_ID]
        assert isinstance(state, list) and any(
            "Pillar failed to render" in line for line in state
        )
    finally:
        stack.postgres.start()
    # the master was not restarted: its worker reconnects on the next compile
    assert _pillar(stack, REAL_MINION_ID)["secret"] == "s3"


def test_odd_minion_id_is_looked_up_literally(open_tmp) -> None:
    settings = StackSettings(
        root=open_tmp / "stack",
        minion_id=ODD_ID,
        master_opts=master_opts(
            "db-function", pillar_tree=None, extension_dir=open_tmp
        ),
    )
    with Stack(settings) as running:
        _write(running, _fleet(ODD_ID))
        pillar = _pillar(running, ODD_ID)
        assert pillar == merged_pillar(_fleet(ODD_ID), ODD_ID)
        assert running.pg is not None
        assert query(running.pg, "SELECT count(*) FROM salt_pillar") == [(5,)]


def test_query_error_is_a_pillar_error_not_an_empty_pillar(stack: Stack) -> None:
    assert stack.pg is not None
    conn = stack.pg.connect()
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(
                "ALTER FUNCTION salt_pillar_rows(text) RENAME TO salt_pillar_rows_away"
            )
        try:
            broken = _pillar(stack, REAL_MINION_ID)
        finally:
            with conn.cursor() as cur:
                cur.execute(
                    "ALTER FUNCTION salt_pillar_rows_away(text) RENAME TO salt_pillar_rows"
                )
    finally:
        conn.close()
    # the minion learns which query failed; the master log says why
    assert broken.get("_errors") == [
        "Failed to load ext_pillar postgres: postgres query 1 of 1 failed; "
        "see the master log"
    ]
    assert "secret" not in broken
    assert stack.master is not None
    master_log = stack.master.settings.log_file.read_text()
    assert "ext_pillar postgres: query 1 of 1 on" in master_log
    assert "does not exist" in master_log
    assert _pillar(stack, REAL_MINION_ID)["secret"] == "s3"


def _master_backends(stack: Stack) -> set[int]:
    assert stack.pg is not None
    rows = query(
        stack.pg,
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
        " AND datname = current_database() AND pid <> pg_backend_pid()",
    )
    return {row[0] for row in rows}


def test_master_keeps_its_connections(stack: Stack) -> None:
    for _ in range(8):
        assert _pillar(stack, REAL_MINION_ID)["level"] == "minion"
    first = _master_backends(stack)
    for _ in range(8):
        assert _pillar(stack, REAL_MINION_ID)["level"] == "minion"
    later = _master_backends(stack)
    # one per master worker at most, at least the one that served us, and
    # the same sessions serve the later compiles: none was replaced
    assert 1 <= len(later) <= stack.settings.worker_threads
    assert first <= later
