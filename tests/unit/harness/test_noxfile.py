"""What the noxfile guarantees: the harness's exit codes reach the caller."""

from __future__ import annotations

import importlib.util
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
