"""
``FleetSupervisor``: the process the user starts; it owns the worker processes.

It prepares keys (:func:`evil_minions.keys.prepare_keys`: generating missing
ones with a progress display, optionally seeding them into a master's
``pki_dir``) unless its caller did that already (``keys_ready``, as the
harness does), starts one worker process per
``--processes`` (``python -m evil_minions worker``), shows start-up progress
on stderr, and keeps ``<run_dir>/status.json`` current.

Output contract for callers such as the harness:

- when every minion is authenticated and connected, one line on stdout:
  ``evil_minions READY authenticated=N/N connected=N elapsed=S`` (and
  ``"ready": true`` in ``status.json``);
- on SIGTERM or SIGINT it stops every worker (SIGTERM, then SIGKILL after a
  grace period), prints ``evil_minions SUMMARY ...`` on stdout and exits 0;
- SIGUSR1 prints the same summary line at once and keeps running;
- if a worker dies on its own, it stops the others, prints the summary and
  exits 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Final, TextIO

import evil_minions
from evil_minions.config import FleetConfig, split_evenly
from evil_minions.control import control_sockets, socket_path
from evil_minions.errors import EvilMinionsError
from evil_minions.fleet import write_fleet_file
from evil_minions.keys import prepare_keys, run_pki_dirs
from evil_minions.replay import ReplayStore
from evil_minions.status import (
    STATUS_FILE,
    aggregate,
    format_progress,
    format_summary,
    read_process_stats,
    write_json_atomic,
)

_POLL: Final = 0.5
_PROGRESS_EVERY: Final = 5.0
_STOP_GRACE: Final = 20.0
#: sun_path of a unix socket address holds 108 bytes including the final NUL.
_MAX_UNIX_PATH: Final = 108


class FleetError(EvilMinionsError):
    """The fleet cannot start; the message says what to fix."""


class FleetSupervisor:
    """Starts, watches and stops the worker processes of one fleet."""

    def __init__(
        self,
        cfg: FleetConfig,
        *,
        seed_master_pki: str | None = None,
        keys_ready: bool = False,
        duration: float = 0.0,
        stdout: TextIO = sys.stdout,
        stderr: TextIO = sys.stderr,
    ) -> None:
        self.cfg = cfg
        self.run_dir = cfg.effective_run_dir
        self.seed_master_pki = seed_master_pki
        self.keys_ready = keys_ready
        self.duration = duration
        self.out = stdout
        self.err = stderr
        self._workers: list[subprocess.Popen[bytes]] = []
        self._stop_requested = False
        self._summary_requested = False
        self._started_at = time.time()
        self._ready_reported = False
        self._ready_after: float | None = None
        self._last_progress = 0.0

    # -- preparation ----------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Check the run dir, prepare the keys unless they are ready; return
        the minion ids."""
        run_dir = Path(self.run_dir)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FleetError(f"cannot create run dir {run_dir}: {exc}") from exc
        longest = socket_path(run_dir.resolve(), self.cfg.processes - 1)
        if len(str(longest).encode()) >= _MAX_UNIX_PATH:
            raise FleetError(
                f"run dir {run_dir} is too long for the control sockets "
                f"({longest} exceeds {_MAX_UNIX_PATH - 1} bytes): use a shorter --run-dir"
            )
        if any(_socket_alive(path) for path in control_sockets(run_dir)):
            raise FleetError(
                f"a fleet is already running in {run_dir}: stop it or use another --run-dir"
            )
        # Files of an earlier run would be mistaken for this run's.
        stale_files = [
            *run_dir.glob("status-*.json"),
            *run_dir.glob("worker-*.log"),
            *run_dir.glob("worker-*.out"),
            run_dir / STATUS_FILE,
        ]
        for stale in stale_files:
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        if self.cfg.replay_file:
            try:
                ReplayStore.load(self.cfg.replay_file)
            except Exception as exc:
                raise FleetError(str(exc)) from exc
        if not self.keys_ready:
            written = prepare_keys(
                self.cfg,
                master_pki_dir=self.seed_master_pki,
                progress=self._key_progress,
            )
            if self.seed_master_pki:
                self._say(
                    f"seeded {written} new keys into {self.seed_master_pki}/minions",
                    err=True,
                )
        return self.cfg.minion_ids()

    def _key_progress(self, done: int, total: int) -> None:
        if done == total and self._last_progress == 0.0:
            return  # every key was cached: nothing to report
        now = time.monotonic()
        if done == total or now - self._last_progress >= 1.0:
            self._last_progress = now
            self._progress(f"keys: {done}/{total} ready", final=done == total)

    # -- run ----------------------------------------------------------------------------------

    def run(self) -> int:
        """Start the fleet and supervise it until stopped; returns the exit code."""
        ids = self.prepare()
        run_pki_dirs(self.cfg.keys_dir, self.run_dir, ids)
        self._install_signal_handlers()
        self._started_at = time.time()
        write_fleet_file(
            self.run_dir,
            self.cfg,
            split_evenly(ids, self.cfg.processes),
            self._started_at,
        )
        for index in range(self.cfg.processes):
            self._workers.append(self._spawn(index))
        exit_code = self._watch()
        self._stop_workers()
        final = self._publish_status("failed" if exit_code else "stopped")
        self._say(f"evil_minions SUMMARY {format_summary(final)}")
        return exit_code

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        # Workers must import this very package, wherever the caller's cwd is.
        package_parent = str(Path(evil_minions.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_parent, env.get("PYTHONPATH")) if p
        )
        log_path = Path(self.run_dir) / f"worker-{index}.out"
        with open(log_path, "wb") as output:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "evil_minions",
                    "worker",
                    "--run-dir",
                    self.run_dir,
                    "--index",
                    str(index),
                ],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def _watch(self) -> int:
        deadline = time.monotonic() + self.duration if self.duration > 0 else None
        while not self._stop_requested:
            dead = [
                (i, w.returncode)
                for i, w in enumerate(self._workers)
                if w.poll() is not None
            ]
            if dead:
                index, code = dead[0]
                self._say(
                    f"evil_minions: worker {index} exited with code {code}; "
                    f"see {Path(self.run_dir) / f'worker-{index}.log'} and worker-{index}.out",
                    err=True,
                )
                return 1
            status = self._publish_status("starting")
            self._report(status)
            if self._summary_requested:
                self._summary_requested = False
                self._say(f"evil_minions SUMMARY {format_summary(status)}")
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
        return 0

    def _report(self, status: dict[str, object]) -> None:
        if self._ready_reported:
            return
        if status["ready"]:
            self._ready_reported = True
            self._progress(format_progress(status), final=True)
            self._say(
                f"evil_minions READY authenticated={status['authenticated']}/{status['count']} "
                f"connected={status['connected']} elapsed={status['elapsed']}s"
            )
            return
        now = time.monotonic()
        if self.err.isatty() or now - self._last_progress >= _PROGRESS_EVERY:
            self._last_progress = now
            self._progress(format_progress(status))

    def _publish_status(self, state: str) -> dict[str, object]:
        status = aggregate(
            read_process_stats(self.run_dir),
            count=self.cfg.count,
            processes=self.cfg.processes,
            started_at=self._started_at,
            state=state,
        )
        if status["ready"] and self._ready_after is None:
            self._ready_after = float(status["elapsed"])
        if self._ready_after is not None:
            # Readiness is sticky: a later failure is reported by counters
            # and state, not by un-readying the fleet.
            status["ready"] = True
            status["ready_after"] = self._ready_after
            if state == "starting":
                status["state"] = "ready"
        try:
            write_json_atomic(Path(self.run_dir) / STATUS_FILE, status)
        except OSError as exc:
            self._say(f"evil_minions: cannot write status: {exc}", err=True)
        return status

    # -- stopping -------------------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGUSR1, self._on_summary_signal)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_requested = True

    def _on_summary_signal(self, signum: int, frame: FrameType | None) -> None:
        self._summary_requested = True

    def _stop_workers(self) -> None:
        """SIGTERM every worker, SIGKILL whatever is left after the grace period."""
        # Ignore further Ctrl-C while cleaning up so a second one cannot leave
        # orphans behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for worker in self._workers:
            if worker.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE
        for worker in self._workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._say(
                    f"evil_minions: worker pid {worker.pid} did not stop, killing it",
                    err=True,
                )
                worker.kill()
                worker.wait()

    # -- output ---------------------------------------------------------------------------

    def _say(self, line: str, *, err: bool = False) -> None:
        stream = self.err if err else self.out
        print(line, file=stream, flush=True)

    def _progress(self, line: str, *, final: bool = False) -> None:
        if self.err.isatty():
            end = "\n" if final else ""
            print(f"\r\033[K{line}", end=end, file=self.err, flush=True)
        else:
            print(line, file=self.err, flush=True)


def _socket_alive(path: Path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(1.0)
        try:
            conn.connect(str(path))
        except OSError:
            return False
    return True
