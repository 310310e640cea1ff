"""Fixtures that start real servers for integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import migrations
from harness.fleet import FleetConfig
from harness.ports import free_port
from harness.postgres import EmbeddedPostgres
from harness.ratelimit import RateLimiting
from harness.stack import Stack, fleet_stack


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


def rate_limited_stack(
    minions: int, limits: RateLimiting, fleet: FleetConfig | None = None
) -> Any:
    """A module's ``stack`` fixture: ``minions`` simulated minions (``fleet``
    their knobs) on a master with ``limits``, for ``stack = rate_limited_stack(...)``."""

    @pytest.fixture(scope="module")
    def stack(open_tmp_module: Path) -> Iterator[Stack]:
        with fleet_stack(
            minions,
            root=open_tmp_module / "stack",
            fleet=fleet,
            master_opts=limits.master_options(),
        ) as running:
            yield running

    return stack
