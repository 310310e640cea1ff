"""The fleet seam: a stack of simulated minions is described by one typed
FleetConfig, handed to the simulator as a file, with keys made ready once."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from evil_minions.supervisor import FleetSupervisor
from harness.fleet import DEFAULT_KEYS_DIR, FleetConfig, SimulatedFleet, cache_keys
from harness.master import MasterSettings
from harness.processes import ProcessRecord
from harness.stack import Stack, StackSettings, StackState, fleet_stack


def test_fleet_stack_is_unstarted_and_takes_the_count_it_is_given(
    tmp_path: Path,
) -> None:
    stack = fleet_stack(
        3,
        root=tmp_path / "stack",
        fleet=FleetConfig(processes=2, startup_pillar=False),
        pillar_files={"top.sls": "base: {}\n"},
        master_opts={"timeout": 30},
    )
    assert stack.master is None and stack.fleet is None
    assert stack.settings.real_minion is False
    fleet = stack.settings.fleet
    assert fleet is not None
    assert (fleet.count, fleet.processes, fleet.startup_pillar) == (3, 2, False)
    assert stack.settings.pillar_files == {"top.sls": "base: {}\n"}
    assert stack.settings.master_opts == {"timeout": 30}


def _fleet(tmp_path: Path, config: FleetConfig) -> SimulatedFleet:
    master = SimpleNamespace(
        settings=MasterSettings(root=tmp_path / "m", publish_port=14505, ret_port=14506)
    )
    return SimulatedFleet(tmp_path / "fleet", master, config, progress=None)  # type: ignore[arg-type]


def test_the_simulator_is_started_from_the_config_file_with_keys_ready(
    tmp_path: Path,
) -> None:
    fleet = _fleet(tmp_path, FleetConfig(count=2))
    argv = list(fleet.process.argv)
    assert argv[-4:] == ["run", "--config", str(fleet.config_file), "--keys-ready"]
    assert fleet.config.keys_dir == str(DEFAULT_KEYS_DIR)
    assert fleet.config.ret_port == 14506 and fleet.config.publish_port == 14505
    own = _fleet(tmp_path, FleetConfig(count=2, keys_dir=str(tmp_path / "k")))
    assert own.config.keys_dir == str(tmp_path / "k")


def test_cached_keys_are_what_the_supervisor_would_make(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    ids = cache_keys(2, fleet=FleetConfig(keys_dir=str(keys)), progress=None)
    assert ids == ["evil-0001", "evil-0002"]
    assert all((keys / mid / "minion.pub").is_file() for mid in ids)


def test_a_supervisor_told_keys_are_ready_makes_none(tmp_path: Path) -> None:
    cfg = FleetConfig(
        count=1, keys_dir=str(tmp_path / "keys"), run_dir=str(tmp_path / "run")
    )
    assert FleetSupervisor(cfg, keys_ready=True).prepare() == ["evil-0001"]
    assert not (tmp_path / "keys").exists()


class _Part:
    """A started part whose stop the test watches (the first one is hit by
    a Ctrl-C while it stops)."""

    def __init__(self, stopped: list[str], name: str, interrupt: bool) -> None:
        self.stopped, self.name, self.interrupt = stopped, name, interrupt

    def stop(self) -> None:
        if self.interrupt:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a handler would have run by now
        self.stopped.append(self.name)


def test_ctrl_c_during_a_stop_arrives_after_every_part_stopped(tmp_path) -> None:
    stack = Stack(StackSettings(root=tmp_path))
    stopped: list[str] = []
    # stopped in reverse order: the fleet first, hit by the Ctrl-C
    stack.master = _Part(stopped, "master", interrupt=False)  # type: ignore[assignment]
    stack.fleet = _Part(stopped, "fleet", interrupt=True)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        stack.stop()
    assert stopped == ["fleet", "master"]


def test_ctrl_c_during_down_arrives_after_every_process_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``down`` of a detached stack: two recorded processes (this one, so
    # that they count as alive); the first stop is hit by a Ctrl-C
    me = psutil.Process()
    records = [
        ProcessRecord(name, me.pid, me.create_time(), str(tmp_path / f"{name}.log"))
        for name in ("postgres", "master")
    ]
    state = StackState(str(tmp_path), "", 0, 0, "", records, owns_root=False)
    state.save()
    stopped: list[str] = []

    def stop_tree(pid: int, stop_signal: int) -> None:
        if not stopped:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a handler would have run by now
        stopped.append(str(pid))

    monkeypatch.setattr("harness.stack.stop_process_tree", stop_tree)
    monkeypatch.setattr("harness.stack.remove_stale_copies", lambda: None)
    with pytest.raises(KeyboardInterrupt):
        state.stop()
    assert stopped == [str(me.pid)] * 2
    assert not (tmp_path / "stack.json").exists()
