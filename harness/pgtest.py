"""Run a command with a throwaway PostgreSQL for Salt's postgres functional tests.

``python -m harness.pgtest -- CMD ...`` starts an embedded PostgreSQL (run as
``nobody`` when this runs as root: ``initdb`` refuses root), runs CMD with
``SALT_TEST_POSTGRES_DSN`` naming the server, then stops the server and
removes its data, whatever CMD did. The postgres ext_pillar's functional tests
in Salt's layout (``tests/pytests/functional/pillar/test_postgres.py``,
patches 0005 and 0006) skip without a server; this is how ``nox -s tests``
gives them one. An ``SALT_TEST_POSTGRES_DSN`` already set is kept, and no
server is started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from harness.entrypoint import run_harness_cli
from harness.errors import HarnessError
from harness.ports import free_port
from harness.postgres import (
    EmbeddedPostgres,
    open_temp_directory,
    remove_stale_copies,
)
from harness.processes import signals_deferred
from harness.progress import ticking_stdout

DSN_VARIABLE = "SALT_TEST_POSTGRES_DSN"
# How long an interrupted command may take to clean up before it is killed
STOP_TIMEOUT = 30


def _call(command: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Run ``command``; on Ctrl-C or SIGTERM, stop it with SIGTERM first.

    SIGTERM, not ``subprocess.call``'s SIGKILL: the command (e.g.
    ``series.timing_reruns``) then removes what it made in the temp directory.
    """
    proc = subprocess.Popen(list(command), env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def run_with_server(command: Sequence[str]) -> int:
    """Run ``command`` with :data:`DSN_VARIABLE` set; its exit code."""
    if os.environ.get(DSN_VARIABLE):
        return _call(command)
    with open_temp_directory("saltfleet-pgtest-") as base:
        server = EmbeddedPostgres(base / "pg", free_port())
        print(f"pgtest: starting PostgreSQL on port {server.port}", flush=True)
        with ticking_stdout("pgtest: starting PostgreSQL"):  # initdb: ~10 s
            server.start()
        print("pgtest: PostgreSQL is up; running the tests", flush=True)
        try:
            env = dict(os.environ, **{DSN_VARIABLE: server.connection.dsn})
            return _call(command, env)
        finally:
            # a second Ctrl-C or SIGTERM waits until the server is stopped
            with signals_deferred():
                server.stop()
                server.cleanup()
                # the PostgreSQL install copied for an unprivileged server,
                # once no server runs from it (a stack's stop does the same)
                remove_stale_copies()


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] != ["--"] or len(args) < 2:
        raise HarnessError("usage: python -m harness.pgtest -- COMMAND [ARG ...]")
    return run_with_server(args[1:])


def main(argv: Sequence[str] | None = None) -> int:
    """``-- COMMAND [ARG ...]``: exits with COMMAND's code, 2 for a bad command line.

    Ctrl-C or SIGTERM kills COMMAND, then stops the server (exit 130).
    """
    return run_harness_cli(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
