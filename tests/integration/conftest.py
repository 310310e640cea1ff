"""Fixtures that start real servers for integration tests."""

from __future__ import annotations

import pytest

from harness import migrations
from harness.ports import free_port
from harness.postgres import EmbeddedPostgres


@pytest.fixture(scope="module")
def server(open_tmp_module):
    """An embedded PostgreSQL server of the module's own, with no schema."""
    pg = EmbeddedPostgres(open_tmp_module / "pg", free_port())
    pg.start()
    try:
        yield pg
    finally:
        pg.stop()


@pytest.fixture(scope="module")
def database(server):
    """The module's embedded PostgreSQL with ``sql/`` applied; its ConnectionInfo."""
    migrations.apply(server.connection)
    return server.connection
