"""The patched postgres ext_pillar's kept connections (``postgres:pool_size``)
against a real server, called through Salt's loader in this process: off by
default, kept when configured, never ended by a forked child, replaced once
after a server restart, and a statement timeout is not retried."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.master import in_process_opts
from harness.postgres import EmbeddedPostgres

pytestmark = pytest.mark.integration

# The query answers with the server process that ran it: one per session.
PID_QUERY = {
    "query": "SELECT json_build_object('pid', pg_backend_pid()) AS data",
    "as_json": True,
}

Fetch = Callable[..., dict[str, Any]]


def _ext_pillar(tmp: Path, pg: EmbeddedPostgres, **postgres: Any) -> Fetch:
    """The postgres ext_pillar of a fresh loader, as a master worker has it,
    with the harness's ``postgres`` block updated with ``postgres`` (a key
    given as None is left out).

    Give each test its own ``application_name``: kept connections are pooled
    per process and set of options, and pytest runs the tests in one process.
    """
    import salt.loader

    block = {**pg.connection.salt_options(), **postgres}
    block = {key: value for key, value in block.items() if value is not None}
    opts = in_process_opts(tmp, postgres=block)
    fetch: Fetch = salt.loader.pillars(opts, {})["postgres"]
    return fetch


def _backend(fetch: Fetch) -> int:
    pid: int = fetch("m1", {}, PID_QUERY)["pid"]
    return pid


def test_without_pool_size_every_compile_connects(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    # the harness sets pool_size; a plain postgres block does not
    fetch = _ext_pillar(tmp_path, server, pool_size=None)
    assert _backend(fetch) != _backend(fetch)


def test_kept_connection_serves_later_compiles(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    first = _backend(_ext_pillar(tmp_path, server, application_name="pool-kept"))
    # a new loader, as for the next compile of a master worker
    again = _backend(_ext_pillar(tmp_path, server, application_name="pool-kept"))
    assert first == again


def test_forked_child_leaves_the_parents_session_alone(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    fetch = _ext_pillar(tmp_path, server, application_name="pool-fork")
    parent = _backend(fetch)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit code
        code = 1
        try:
            code = 0 if _backend(fetch) != parent else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    # 0: the child used a session of its own (2: it used the parent's)
    assert os.waitstatus_to_exitcode(status) == 0
    # had the child ended the inherited session, the parent would have had
    # to reconnect: a new server process
    assert _backend(fetch) == parent


def test_statement_timeout_fails_the_compile_and_is_not_retried(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    from salt.exceptions import SaltException

    admin = server.connection.connect()
    admin.autocommit = True
    try:
        # The timeout comes with the role: the ext_pillar passes no libpq
        # options (that is saltstack/salt#68831's), and a role of its own also
        # gives this test kept connections of its own (the pool is keyed by
        # every connect argument).
        with admin.cursor() as cur:
            cur.execute("CREATE SEQUENCE slow_runs")
            cur.execute("CREATE ROLE pool_timeout LOGIN")
            cur.execute("ALTER ROLE pool_timeout SET statement_timeout = 100")
            cur.execute("GRANT USAGE ON SEQUENCE slow_runs TO pool_timeout")
        fetch = _ext_pillar(tmp_path, server, user="pool_timeout")
        _backend(fetch)  # the next compile runs on a kept connection
        # sequences are not transactional: nextval counts every run
        slow = {
            "query": "SELECT json_build_object('run', nextval('slow_runs'),"
            " 'slept', pg_sleep(60)::text) AS data",
            "as_json": True,
        }
        with pytest.raises(SaltException) as excinfo:
            fetch("m1", {}, slow)
        assert str(excinfo.value) == "postgres query 1 of 1 failed; see the master log"
        with admin.cursor() as cur:
            cur.execute("SELECT last_value, is_called FROM slow_runs")
            assert cur.fetchone() == (1, True)
    finally:
        admin.close()


def test_server_restart_is_retried_once(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    fetch = _ext_pillar(tmp_path, server, application_name="pool-restart")
    before = _backend(fetch)
    server.stop()
    server.start()
    # the kept connection is dead; the compile succeeds on a new one
    assert _backend(fetch) != before
