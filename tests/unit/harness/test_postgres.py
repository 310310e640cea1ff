"""The embedded PostgreSQL's install copies: one per build, reused across runs,
and copies of other builds removed once nothing runs from them."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness import postgres


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _fake_install(root: Path, content: bytes) -> Path:
    """A private (0700) directory holding a pginstall/bin with a postgres binary."""
    root.mkdir(mode=0o700)
    bin_dir = root / "pkg" / "pginstall" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "postgres").write_bytes(content)
    (bin_dir / "initdb").write_bytes(b"initdb")
    return bin_dir


def test_two_checkouts_of_one_build_share_one_copy(temp_dir: Path) -> None:
    first = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    second = postgres.reachable_install(_fake_install(temp_dir / "b", b"server-1"))
    assert first == second
    assert (first / "postgres").read_bytes() == b"server-1"
    assert len(list(temp_dir.glob(f"{postgres.COPY_PREFIX}*"))) == 1


def test_a_new_build_removes_the_unused_copy_of_the_old(temp_dir: Path) -> None:
    old = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    _age(old.parents[2])
    new = postgres.reachable_install(_fake_install(temp_dir / "b", b"server-2"))
    assert new != old
    assert not old.exists()
    assert [p.name for p in temp_dir.glob(f"{postgres.COPY_PREFIX}*")] == [
        new.parents[2].name
    ]


def test_a_copy_a_process_runs_from_is_kept(temp_dir: Path) -> None:
    stale = temp_dir / f"{postgres.COPY_PREFIX}0123456789ab"
    (stale / "bin").mkdir(parents=True)
    exe = stale / "bin" / "python"  # /proc shows a copy's path, not a link's
    exe.write_bytes(Path(sys.executable).resolve().read_bytes())
    exe.chmod(0o755)
    proc = subprocess.Popen(
        [str(exe), "-c", "import time; time.sleep(30)"],
        env={**os.environ, "PYTHONHOME": sys.base_prefix},
    )
    try:
        assert postgres.remove_stale_copies() == []
        assert stale.exists()
    finally:
        proc.kill()
        proc.wait()
    assert postgres.remove_stale_copies(fresh_grace=0) == [stale]


def _age(copy: Path, seconds: float = 120) -> None:
    """Make ``copy`` look made (or last reused) ``seconds`` ago."""
    then = copy.stat().st_mtime - seconds
    os.utime(copy, (then, then))


def test_a_copy_made_half_a_minute_ago_and_unused_goes(temp_dir: Path) -> None:
    # A stack whose commands all ran within a minute of its copy being made
    # (the README's by-hand block on a fast box) must not leave the copy
    # behind when it stops: only the start of a server needs the grace.
    copy = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    _age(copy.parents[2], seconds=30)
    assert postgres.remove_stale_copies() == [copy.parents[2]]


def test_a_stopped_stack_leaves_no_copy_but_a_fresh_one_stays(temp_dir: Path) -> None:
    # A copy just made or reused may be about to run a server (another test,
    # another checkout): it stays. Once older and unused, it goes: a run that
    # ended leaves nothing in the temp directory.
    copy = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    assert postgres.remove_stale_copies() == []
    _age(copy.parents[2])
    assert postgres.remove_stale_copies() == [copy.parents[2]]
    assert list(temp_dir.glob(f"*{postgres.COPY_PREFIX}*")) == []


def test_a_copy_being_reused_is_not_removed_under_it(temp_dir: Path) -> None:
    # Two xdist workers: one reusing the copy (about to run initdb from it)
    # while the other's stopped stack removes stale copies. The removal
    # must not judge the copy stale and delete it under the reuse.
    copy = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    _age(copy.parents[2])
    with postgres._copy_lock(copy.parents[2], fcntl.LOCK_SH) as held:
        assert held
        assert postgres.remove_stale_copies(fresh_grace=0) == []
        assert (copy / "initdb").exists()
    assert postgres.remove_stale_copies(fresh_grace=0) == [copy.parents[2]]


def test_a_copy_removed_before_its_reuse_is_made_again(temp_dir: Path) -> None:
    copy = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    _age(copy.parents[2])
    assert postgres.remove_stale_copies(fresh_grace=0) == [copy.parents[2]]
    again = postgres.reachable_install(_fake_install(temp_dir / "b", b"server-1"))
    assert again == copy
    assert (again / "initdb").read_bytes() == b"initdb"


def test_a_held_copy_stays_until_its_server_would_run(temp_dir: Path) -> None:
    # initdb may take longer than the grace on a loaded box: a stack holds
    # its copy from choosing it until its server runs from it.
    copy = postgres.reachable_install(_fake_install(temp_dir / "a", b"server-1"))
    held = postgres.hold_install(copy)
    assert held is not None
    try:
        _age(copy.parents[2])
        assert postgres.remove_stale_copies(fresh_grace=0) == []
    finally:
        os.close(held)
    assert postgres.remove_stale_copies(fresh_grace=0) == [copy.parents[2]]
    # an install that is not a copy needs no hold
    assert postgres.hold_install(temp_dir / "a" / "pkg" / "pginstall" / "bin") is None
