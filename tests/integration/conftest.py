"""Fixtures that start real servers for integration tests."""

from __future__ import annotations

import pytest

from harness import migrations
from harness.ports import free_port
from harness.postgres import EmbeddedPostgres


@pytest.fixture(scope="module")
def database(open_tmp_module):
    """An embedded PostgreSQL with ``sql/`` applied; its ConnectionInfo."""
    pg = EmbeddedPostgres(open_tmp_module / "pg", free_port())
    pg.start()
    try:
        migrations.apply(pg.connection)
        yield pg.connection
    finally:
        pg.stop()
