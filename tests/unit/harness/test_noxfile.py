"""What the noxfile guarantees: the harness's exit codes reach the caller; our
pytest run leaves no temporary directory behind after a pass."""

from __future__ import annotations

import importlib.util
import shutil
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


class _InstallOnly:
    """A session under ``nox --install-only``: ``run`` is skipped, only
    ``run_install`` runs."""

    def __init__(self) -> None:
        self.posargs: list[str] = []
        self.installed: list[tuple[str, ...]] = []

    def run(self, *args: str, **kwargs: object) -> None:
        return None

    def run_install(self, *args: str, **kwargs: object) -> bool:
        self.installed.append(args)
        return True


def test_install_only_vendors_salt_so_its_wheel_can_be_built(noxfile) -> None:
    # a fresh clone's `nox -s tests --install-only` builds the wheel from
    # salt/src: vendoring it must not be skipped as a plain run would be
    session = _InstallOnly()
    noxfile._vendor(session)
    assert session.installed == [("python", "-m", "series", "vendor")]


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        self.lines.append(line)


def _temp_names(prefix: str) -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"{prefix}*")}


def test_a_passing_runs_basetemp_is_removed(noxfile) -> None:
    before = _temp_names("saltfleet-pytest-")
    with noxfile._own_basetemp(_Log()) as basetemp:
        (basetemp / "popen-gw0" / "keys0").mkdir(parents=True)
    assert not basetemp.exists()
    assert _temp_names("saltfleet-pytest-") == before


def test_a_failed_runs_basetemp_is_kept_and_named(noxfile) -> None:
    session = _Log()
    with pytest.raises(SystemExit), noxfile._own_basetemp(session) as basetemp:
        (basetemp / "test_it0").mkdir()
        raise SystemExit(1)
    try:
        assert (basetemp / "test_it0").is_dir()
        assert session.lines == [
            f"the failed tests' temporary directories are kept in {basetemp}"
        ]
    finally:
        shutil.rmtree(basetemp)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_stopped_or_empty_runs_basetemp_is_removed(noxfile, stop) -> None:
    session = _Log()
    with pytest.raises(stop), noxfile._own_basetemp(session) as basetemp:
        if stop is KeyboardInterrupt:
            (basetemp / "test_it0").mkdir()
        raise stop()
    assert not basetemp.exists()
    assert session.lines == []
