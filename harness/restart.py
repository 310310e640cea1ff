"""Keep a detached stack's record true when its master restarts.

``python -m harness up`` records every process it started in ``stack.json``.
A master restarted afterwards (by ``python -m harness restart master``, or by
hand with ``salt-master -c <conf_dir> -d``) has a new pid; without this
module ``status`` would call it NOT RUNNING and ``down`` would leave it
running. The master writes its pid to the ``pidfile`` of its configuration:
:func:`adopt_restarted_master` follows it, and :func:`restart_master` stops
the recorded master by pid, applies new options if given and starts it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import yaml

from harness import progress
from harness.errors import HarnessError
from harness.processes import ManagedProcess, ProcessRecord, stop_process_tree
from harness.yamlfile import describe_error

if TYPE_CHECKING:
    from harness.stack import StackState

MASTER_NAME = "salt-master"
RESTART_TIMEOUT = 120.0
#: how long a restart waits for the minions to answer again
RECONNECT_TIMEOUT = 90.0
#: seconds between the lines that say how many minions answered again
PROGRESS_EVERY = progress.INTERVAL


def _master_config(state: StackState) -> tuple[Path, dict[str, Any]]:
    path = Path(state.master_conf_dir) / "master"
    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise HarnessError(
            f"cannot read the master configuration {path}: {exc}"
        ) from None
    if not isinstance(config, dict):
        raise HarnessError(f"{path} does not hold a master configuration")
    return path, config


def _master_index(state: StackState) -> int:
    for index, record in enumerate(state.processes):
        if record.name == MASTER_NAME:
            return index
    raise HarnessError(f"the stack in {state.root} has no recorded salt-master")


def _pid_from_file(path: Path) -> psutil.Process | None:
    try:
        proc = psutil.Process(int(path.read_text().strip()))
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except (OSError, ValueError, psutil.Error):
        return None


def adopt_restarted_master(state: StackState) -> str | None:
    """If the recorded master is gone but its pidfile names a live salt-master,
    record that one instead (and save); return a note saying so, else None."""
    index = _master_index(state)
    record = state.processes[index]
    if record.process() is not None:
        return None
    _, config = _master_config(state)
    proc = _pid_from_file(Path(config.get("pidfile", "")))
    if proc is None or "salt-master" not in " ".join(proc.cmdline()):
        return None
    state.processes[index] = ProcessRecord(
        record.name,
        proc.pid,
        proc.create_time(),
        record.log_path,
        record.stop_signal,
        list(proc.cmdline()),
    )
    state.save()
    return f"salt-master was restarted outside the harness: now pid {proc.pid}"


def restart_master(
    state: StackState,
    options: Mapping[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[int, list[str]]:
    """Stop the stack's master by pid, merge ``options`` into its configuration,
    start it again, record the new pid and wait for the minions to answer
    again; return the pid and the minions still silent. ``say`` hears how
    many answered, every 10 s while some are silent."""
    adopt_restarted_master(state)
    index = _master_index(state)
    record = state.processes[index]
    conf_path, config = _master_config(state)
    argv = record.argv or _default_argv(state)
    if record.process() is not None:
        stop_process_tree(record.pid, record.stop_signal)
    if options:
        config.update(options)
        conf_path.write_text(yaml.safe_dump(config, default_flow_style=False))
    process = ManagedProcess(
        MASTER_NAME, argv, Path(record.log_path), stop_signal=record.stop_signal
    )
    process.start()
    state.processes[index] = process.record()
    state.save()
    port = int(config.get("ret_port", state.ret_port))
    from harness.ports import is_listening

    process.wait_until(
        lambda: (
            is_listening(port) and _pid_from_file(Path(config["pidfile"])) is not None
        ),
        timeout=RESTART_TIMEOUT,
        what=f"listening on ret_port {port}",
    )
    accepted_dir = Path(config["pki_dir"]) / "minions"
    accepted = (
        sorted(p.name for p in accepted_dir.iterdir()) if accepted_dir.is_dir() else []
    )
    return process.pid, wait_for_minions(conf_path, accepted, RECONNECT_TIMEOUT, say)


def wait_for_minions(
    conf_path: Path,
    minions: list[str],
    timeout: float,
    say: Callable[[str], None] | None = None,
) -> list[str]:
    """Wait until each of ``minions`` answers a ping of the master configured
    in ``conf_path`` (after a restart they sign in anew); return those still
    silent after ``timeout``. ``say`` hears how many answered, every 10 s
    while some are silent.

    A master just started on a busy machine may refuse a publication or not
    answer it within the client's wait, and a LocalClient sends a publication
    once: it is asked again until the deadline.
    """
    import salt.client
    import salt.exceptions

    started = told = time.monotonic()
    deadline = started + timeout
    silent = list(minions)
    while silent and time.monotonic() < deadline:
        if say is not None and time.monotonic() - told >= PROGRESS_EVERY:
            told = time.monotonic()
            say(
                f"  {len(minions) - len(silent)} of {len(minions)} minions answer "
                f"again, {told - started:.0f}s ..."
            )
        client = salt.client.LocalClient(c_path=str(conf_path))
        try:
            answered = client.cmd(silent, "test.ping", tgt_type="list", timeout=5)
        except (
            salt.exceptions.SaltClientError,
            salt.exceptions.SaltReqTimeoutError,
        ):
            answered = {}
            time.sleep(1)
        finally:
            client.destroy()
        silent = [m for m in silent if answered.get(m) is not True]
    return silent


def _default_argv(state: StackState) -> list[str]:
    from harness.master import salt_script

    return [salt_script("salt-master"), "-c", state.master_conf_dir, "-l", "warning"]


def load_options(path: Path) -> dict[str, Any]:
    """Master options from a YAML file holding one mapping; a clear error if not."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise HarnessError(
            f"cannot read master options {path}: {exc.strerror}"
        ) from None
    except yaml.YAMLError as exc:
        raise HarnessError(f"{path} is not valid YAML: {describe_error(exc)}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise HarnessError(
            f"{path} must hold a mapping of master options (e.g. 'timeout: 10')"
        )
    return data
