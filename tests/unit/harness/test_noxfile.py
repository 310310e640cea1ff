"""What the noxfile guarantees: the harness's exit codes and a clean /tmp."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from types import ModuleType

import nox.command
import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def noxfile() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "saltfleet_noxfile", ROOT / "noxfile.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Session:
    def __init__(self, code: int | None) -> None:
        self.code = code

    def run(self, *args: str, **kwargs: object) -> bool:
        if self.code is None:
            return True
        raise nox.command.CommandFailed("Returned code", return_code=self.code)


@pytest.mark.parametrize("code", [2, 69, 75])
def test_a_failed_commands_code_becomes_nox_s(noxfile, code) -> None:
    with pytest.raises(SystemExit) as exited:
        noxfile._run(_Session(code), "python", "-m", "harness")
    assert exited.value.code == code


def test_upstream_suites_trees_it_made_are_removed(noxfile, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "salt-temp-state-tree").mkdir()  # there before: someone's
    (tmp_path / "other").mkdir()
    with noxfile._removing_new_temp(noxfile.SALT_TEST_TEMP):
        (tmp_path / "salt-temp-pillar-tree" / "base").mkdir(parents=True)
        (tmp_path / "salt-tests-tmpdir-0").mkdir()
        (tmp_path / "unrelated").mkdir()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "other",
        "salt-temp-state-tree",
        "unrelated",
    ]
