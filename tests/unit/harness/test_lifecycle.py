"""What ``down`` and ``down --purge`` keep and remove, and where a stack lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from harness.errors import HarnessError
from harness.processes import ProcessRecord
from harness.stack import STATE_FILE, StackState, purge_root
from tests.conftest import STACK_ROOT_ENV


def _stopped_stack(root: Path) -> Path:
    for part in ("postgres/data", "master/conf", "minion/etc"):
        (root / part).mkdir(parents=True)
    (root / "postgres" / "data" / "PG_VERSION").write_text("16\n")
    (root / "master" / "conf" / "master").write_text(
        f"pidfile: {root / 'master' / 'salt-master.pid'}\n"
    )
    return root


def _record(root: Path) -> None:
    """A stack record whose processes all ended (pid 0 is never a child's)."""
    master = ProcessRecord("salt-master", 0, 0.0, str(root / "master.log"))
    conf = str(root / "master" / "conf")
    StackState(str(root), conf, 1, 2, "dbname=x", [master], False).save()


def test_down_keeps_the_data_and_says_how_to_remove_it(tmp_path, capsys) -> None:
    root = _stopped_stack(tmp_path / "stack")
    _record(root)
    assert cli.main(["down", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "nothing was running" in out
    assert "down --purge" in out
    assert not (root / STATE_FILE).exists()
    assert (root / "postgres" / "data" / "PG_VERSION").exists()


def test_down_purge_removes_the_data(tmp_path, capsys) -> None:
    root = _stopped_stack(tmp_path / "stack")
    _record(root)
    assert cli.main(["down", "--purge", "--root", str(root)]) == 0
    assert "the next `up` starts fresh" in capsys.readouterr().out
    assert not root.exists()


def test_purge_of_a_stopped_stack_without_record(tmp_path) -> None:
    root = _stopped_stack(tmp_path / "stack")
    assert cli.main(["down", "--purge", "--root", str(root)]) == 0
    assert not root.exists()


def test_purge_refuses_a_directory_that_is_not_only_a_stack(tmp_path) -> None:
    root = _stopped_stack(tmp_path / "stack")
    (root / "notes.txt").write_text("mine\n")
    with pytest.raises(HarnessError, match=r"holds more than a stack \(notes.txt\)"):
        purge_root(root)
    assert (root / "notes.txt").exists()


def test_the_stack_root_comes_from_the_environment(tmp_path, monkeypatch) -> None:
    # tests point every command at a root of their own, never the user's
    monkeypatch.setenv(cli.ROOT_ENV, str(tmp_path / "mine"))
    args = cli.build_parser().parse_args(["status"])
    assert args.root == tmp_path / "mine"
    monkeypatch.delenv(cli.ROOT_ENV)
    assert cli.build_parser().parse_args(["status"]).root == cli.DEFAULT_ROOT


def test_hints_name_a_command_that_works_from_the_readme_setup(tmp_path, capsys):
    assert cli.main(["status", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nox -s harness -- up" in err
    assert "python -m harness" not in err


def test_tests_never_find_the_users_stack() -> None:
    # tests/conftest.py points commands run without --root at the tests' own
    assert STACK_ROOT_ENV == cli.ROOT_ENV
    assert cli.default_root() != cli.DEFAULT_ROOT
    assert cli.default_root().name == "tests-stack"
