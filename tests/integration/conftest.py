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


def small_fleet_limits(
    minions: int, *, spare: int, max_queue: int, long_running: int = 60
) -> RateLimiting:
    """Limits for a test fleet of ``minions``: a job to ``*`` takes
    ``minions`` of the master's ``minions + spare`` points, a minion holds at
    most 2, the queue takes ``max_queue`` jobs, maintenance runs every 5 s."""
    return RateLimiting(
        max_master_jobs=minions + spare,
        max_minion_jobs=2,
        max_queue=max_queue,
        maintenance_interval=5,
        long_running=long_running,
    )


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
