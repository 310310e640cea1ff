"""The stack applies saltext-pkgstate's own schema after sql/, also to a
database made when the package state tables were sql/0002."""

from __future__ import annotations

import pytest
from saltext.pkgstate.store import PackageStateStore

from harness import migrations
from tests.conftest import query

pytestmark = pytest.mark.integration


def test_a_database_from_before_the_move_keeps_its_package_states(server) -> None:
    info = server.connection
    migrations.apply(info)
    with PackageStateStore(info.dsn) as store:
        store.save_revision("minion:web1", ["nginx"])
    # what sql/0001 and the former sql/0002 left behind
    query(info, "DROP TABLE pkgstate_schema")
    query(info, "INSERT INTO saltfleet_schema VALUES (2, 'package_states')")

    migrations.apply(info)

    assert query(info, "SELECT version FROM pkgstate_schema ORDER BY 1") == [
        (1,),
        (2,),
    ]
    with PackageStateStore(info.dsn) as store:
        assert [str(e) for e in store.show("minion:web1").entries] == ["nginx"]
