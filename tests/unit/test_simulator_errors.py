"""A simulator error reaches a harness user as one ``error:`` line and exit 2.

Before, a bad fleet setting (an unknown FleetConfig field, ``--processes``
above the minion count) or a keys dir that cannot be created ended
``python -m harness up --minions ...`` in a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evil_minions import ensure_keys
from harness import stack
from harness.cli import main
from harness.errors import HarnessError, SimulatorError, simulator_errors


def test_a_keys_dir_that_cannot_be_created_is_a_simulator_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a directory cannot be made below a file, even by root
    with (
        pytest.raises(SimulatorError, match="cannot create keys dir") as info,
        simulator_errors(),
    ):
        ensure_keys(blocker / "keys", ["evil-0001"])
    assert isinstance(info.value, HarnessError)


@pytest.mark.parametrize(
    ("fleet", "message"),
    [
        ({"procs": 2}, "unknown fleet setting procs: use "),
        ({"processes": 3}, "--processes 3 is more than --count 2"),
    ],
)
def test_bad_fleet_settings_are_refused_before_anything_starts(
    tmp_path: Path, fleet: dict[str, object], message: str
) -> None:
    settings = stack.StackSettings(
        root=tmp_path / "stack", simulated_minions=2, simulated_config=fleet
    )
    with pytest.raises(SimulatorError, match=message):
        stack.Stack(settings).start()
    assert not (tmp_path / "stack" / "postgres").exists()


def test_up_reports_a_bad_fleet_setting_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from_env = stack.StackSettings.from_env

    def with_bad_fleet(**overrides: object) -> stack.StackSettings:
        return from_env(**overrides, simulated_config={"processes": 3})

    monkeypatch.setattr(stack.StackSettings, "from_env", with_bad_fleet)
    code = main(["up", "--root", str(tmp_path / "stack"), "--minions", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        "error: simulated minions: --processes 3 is more than --count 2:"
        " every process needs at least one minion"
    ]
