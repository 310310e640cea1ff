"""Fixtures of the extension's tests: real PostgreSQL databases.

Functional and integration tests get a database of their own per module,
created empty and dropped afterwards, on:

- the server ``$SALTEXT_PKGSTATE_TEST_DSN`` names (its role must be allowed
  to create databases), or else
- an embedded PostgreSQL started for the module, as the saltfleet checkout
  starts one (``harness.postgres``), stopped by pid afterwards.

Without either the tests that need a database are skipped, saying so. The
integration tests that drive a whole master and minion use the saltfleet
harness's stack, and are skipped, saying so, where it is not installed.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extensions
import pytest

from saltext.pkgstate import schema

DSN_ENV = "SALTEXT_PKGSTATE_TEST_DSN"
TEMP_PREFIX = "saltext-pkgstate-test-"


@dataclass(frozen=True)
class TestDatabase:
    """One test module's database."""

    __test__ = False  # not a test class, despite its name

    dsn: str

    def connect(self) -> psycopg2.extensions.connection:
        """A new connection to it."""
        return psycopg2.connect(self.dsn, connect_timeout=10)


@contextlib.contextmanager
def _embedded_server() -> Iterator[str]:
    try:
        from harness.ports import free_port
        from harness.postgres import EmbeddedPostgres, open_temp_directory
    except ImportError:
        pytest.skip(
            f"no PostgreSQL for the functional tests: set {DSN_ENV}, or run them "
            "in the saltfleet checkout (nox -s tests)"
        )
    with open_temp_directory(TEMP_PREFIX) as root:
        server = EmbeddedPostgres(root / "pg", free_port())
        server.start()
        try:
            yield server.connection.dsn
        finally:
            server.stop()


@pytest.fixture(scope="module")
def open_tmp_module() -> Iterator[Path]:
    """A directory of the module's own that an unprivileged PostgreSQL can
    enter (a stack of the saltfleet harness puts its database there; pytest's
    tmp_path lives under a 0700 directory)."""
    postgres = pytest.importorskip(
        "harness.postgres", reason="needs the saltfleet harness (nox -s tests)"
    )
    with postgres.open_temp_directory(TEMP_PREFIX) as root:
        yield root


@contextlib.contextmanager
def _fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"pkgstate_test_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(server_dsn, connect_timeout=10)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
        try:
            params = psycopg2.extensions.parse_dsn(server_dsn)
            yield psycopg2.extensions.make_dsn(**{**params, "dbname": name})
        finally:
            with admin.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        admin.close()


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[str]:
    """The DSN of a PostgreSQL server the module may create databases on."""
    dsn = os.environ.get(DSN_ENV)
    if dsn:
        yield dsn
        return
    with _embedded_server() as embedded:
        yield embedded


@pytest.fixture(scope="module")
def empty_database(postgres_server: str) -> Iterator[TestDatabase]:
    """A database of the module's own, with no table at all."""
    with _fresh_database(postgres_server) as dsn:
        yield TestDatabase(dsn)


@pytest.fixture(scope="module")
def database(empty_database: TestDatabase) -> TestDatabase:
    """The module's database with the extension's schema, and nothing else."""
    schema.migrate(empty_database.dsn)
    return empty_database


@pytest.fixture
def fresh_database(postgres_server: str) -> Iterator[TestDatabase]:
    """A database of the test's own, with no table at all."""
    with _fresh_database(postgres_server) as dsn:
        yield TestDatabase(dsn)


def _add_org(
    database: Any, org: str, members: Mapping[str, Sequence[str]]
) -> dict[str, int]:
    """Organization ``org`` with its minions (``members``: minion id -> its
    group names), each group made on its first mention; the groups' ids."""
    groups: dict[str, int] = {}
    conn = database.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "INSERT INTO organization (name) VALUES (%s) RETURNING id", (org,)
            )
            org_id = cur.fetchone()[0]
            for minion, names in members.items():
                cur.execute(
                    "INSERT INTO server (org_id, minion_id) VALUES (%s, %s)"
                    " RETURNING id",
                    (org_id, minion),
                )
                server_id = cur.fetchone()[0]
                for name in names:
                    if name not in groups:
                        cur.execute(
                            "INSERT INTO server_group (org_id, name) VALUES (%s, %s)"
                            " RETURNING id",
                            (org_id, name),
                        )
                        groups[name] = cur.fetchone()[0]
                    cur.execute(
                        "INSERT INTO server_group_member (server_id, group_id)"
                        " VALUES (%s, %s)",
                        (server_id, groups[name]),
                    )
    finally:
        conn.close()
    return groups


@pytest.fixture(scope="session")
def add_org() -> Callable[[Any, str, Mapping[str, Sequence[str]]], dict[str, int]]:
    """Adds an organization with minions in groups to a database (anything
    with ``connect()``) the way a SUSE Manager-like directory holds them."""
    return _add_org
