"""``python -m harness.pgtest`` without starting a server."""

from __future__ import annotations

import sys

import pytest

from harness import pgtest


def test_a_dsn_already_set_is_used_and_no_server_started(monkeypatch) -> None:
    monkeypatch.setenv(pgtest.DSN_VARIABLE, "host=db.example.com dbname=salt")

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("a server was started")

    monkeypatch.setattr(pgtest, "EmbeddedPostgres", no_server)
    check = (
        "import os, sys; "
        f"sys.exit(5 if os.environ['{pgtest.DSN_VARIABLE}'].startswith('host=db') else 1)"
    )
    assert pgtest.main(["--", sys.executable, "-c", check]) == 5


@pytest.mark.parametrize("argv", [[], ["--"], ["true"]])
def test_usage(argv, capsys) -> None:
    assert pgtest.main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        "error: usage: python -m harness.pgtest -- COMMAND [ARG ...]"
    )
