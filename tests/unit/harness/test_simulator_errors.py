"""A simulator error reaches a harness user as one ``error:`` line and exit 2.

Before, a bad fleet setting (``--processes`` above the minion count) or a
keys dir that cannot be created ended
``python -m harness up --minions ...`` in a traceback.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from evil_minions import ensure_keys
from harness import stack
from harness.cli import main
from harness.errors import HarnessError, SimulatorError, simulator_errors
from harness.fleet import FleetConfig


def test_a_keys_dir_that_cannot_be_created_is_a_simulator_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a directory cannot be made below a file, even by root
    with (
        pytest.raises(SimulatorError, match="cannot create keys dir") as info,
        simulator_errors(),
    ):
        ensure_keys(blocker / "keys", ["evil-0001"])
    assert isinstance(info.value, HarnessError)


def test_a_bad_fleet_setting_is_refused_before_anything_starts(tmp_path: Path) -> None:
    fleet = FleetConfig(count=3, processes=3)
    with pytest.raises(SimulatorError, match="--processes 3 is more than --count 2"):
        stack.fleet_stack(2, root=tmp_path / "stack", fleet=fleet)
    assert not (tmp_path / "stack").exists()


def test_up_reports_a_bad_fleet_setting_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(
        "harness.fleet.FleetConfig", functools.partial(FleetConfig, processes=3)
    )
    code = main(["up", "--root", str(tmp_path / "stack"), "--minions", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        "error: simulated minions: --processes 3 is more than --count 2:"
        " every process needs at least one minion"
    ]
    assert not (tmp_path / "stack" / "postgres").exists()
