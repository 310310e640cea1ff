"""sql/ migrations: ordered, recorded, idempotent, and a failure keeps what was there."""

from __future__ import annotations

import pytest

from harness import migrations
from harness.migrations import MigrationError
from tests.conftest import query

pytestmark = pytest.mark.integration


def test_apply_in_order_once(server, tmp_path) -> None:
    (tmp_path / "0002_fill.sql").write_text("INSERT INTO notes VALUES ('second');")
    (tmp_path / "0001_create.sql").write_text("CREATE TABLE notes (body text);")
    applied = migrations.apply(server.connection, tmp_path)
    assert [m.version for m in applied] == [1, 2]
    assert migrations.apply(server.connection, tmp_path) == []
    assert query(server.connection, "SELECT body FROM notes") == [("second",)]
    assert migrations.current_version(server.connection) == 2


def test_failed_migration_rolls_back_alone(server, tmp_path) -> None:
    (tmp_path / "0003_good.sql").write_text(
        "CREATE TABLE kept (x int); INSERT INTO kept VALUES (1);"
    )
    (tmp_path / "0004_bad.sql").write_text(
        "CREATE TABLE half (x int); SELECT no_such_column FROM kept;"
    )
    with pytest.raises(
        MigrationError, match=r"0004_bad\.sql failed and was rolled back"
    ):
        migrations.apply(server.connection, tmp_path)
    assert query(server.connection, "SELECT x FROM kept") == [(1,)]
    assert query(server.connection, "SELECT to_regclass('half') IS NULL") == [(True,)]


@pytest.mark.parametrize("name", ["1_short.sql", "0001-dash.sql", "0001_Upper.sql"])
def test_misnamed_migration(tmp_path, name) -> None:
    (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"NNNN_lowercase_name\.sql"):
        migrations.discover(tmp_path)
