"""The embedded PostgreSQL: restartable, and usable from private directories as root."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness.ports import free_port
from harness.postgres import EmbeddedPostgres, check_reachable

pytestmark = pytest.mark.integration


def test_restart_keeps_data(open_tmp) -> None:
    pg = EmbeddedPostgres(open_tmp / "pg", free_port())
    pg.start()
    try:
        conn = pg.connection.connect()
        with conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)")
        conn.close()
        pg.stop()
        assert not pg.process.running()
        pg.start()
        conn = pg.connection.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT x FROM kept")
            assert cur.fetchall() == [(7,)]
        conn.close()
    finally:
        pg.stop()
        pg.cleanup()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as nobody")
def test_private_root_directory_as_root() -> None:
    private = Path(tempfile.mkdtemp(prefix="saltfleet-private-"))  # 0700
    pg = EmbeddedPostgres(private / "pg", free_port())
    try:
        pg.start()
        assert pg.relocated
        assert check_reachable(pg.connection)
    finally:
        pg.stop()
        pg.cleanup()
        private.rmdir()
    assert not pg.base_dir.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as nobody")
def test_binaries_in_a_private_directory_as_root(open_tmp, monkeypatch) -> None:
    """A wheel installed under a 0700 checkout is copied where nobody can run it."""
    import shutil
    import subprocess

    from harness.postgres import UNPRIVILEGED_USER, find_bin_dir

    bin_dir = find_bin_dir()
    # The copy goes into a temp directory of this test's own: the shared one
    # in /tmp belongs to the stacks other tests start (and stop) meanwhile,
    # and a copy made here would stay there when this test runs alone.
    monkeypatch.setattr(tempfile, "tempdir", str(open_tmp))
    install, package = bin_dir.parent, bin_dir.parent.parent
    private = Path(tempfile.mkdtemp(prefix="saltfleet-private-"))  # 0700
    try:
        site = private / "site-packages"
        shutil.copytree(install, site / package.name / install.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, site / libs.name, symlinks=True)
        from harness.postgres import reachable_install

        usable = reachable_install(site / package.name / install.name / bin_dir.name)
        assert not str(usable).startswith(str(private))
        assert usable.is_relative_to(open_tmp)
        out = subprocess.run(
            [str(usable / "initdb"), "--version"],
            user=UNPRIVILEGED_USER,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "initdb (PostgreSQL)" in out.stdout
    finally:
        shutil.rmtree(private)
