"""Daemons the harness starts: started in their own session, stopped by pid.

Every process the harness starts is a :class:`ManagedProcess`. Stopping one
signals its pid, waits, and then kills whatever is left of its process group
and of the descendants seen while it ran, so a daemon that forks workers
(salt-master, PostgreSQL) leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.errors import HarnessError

LOG_TAIL_LINES = 25


class StartupError(HarnessError):
    """A daemon did not come up; the message carries its log tail."""


@dataclass
class ProcessRecord:
    """What is needed to find and stop a process later, from another run."""

    name: str
    pid: int
    create_time: float
    log_path: str
    stop_signal: int = signal.SIGTERM
    #: the command line, so the process can be started again (``restart``)
    argv: list[str] = field(default_factory=list)

    def process(self) -> psutil.Process | None:
        """The live process, or None if it ended (or its pid was reused)."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 0.5:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.NoSuchProcess:
            return None


@dataclass
class ManagedProcess:
    """One daemon: its command line, log file and lifecycle."""

    name: str
    argv: Sequence[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    user: str | int | None = None
    stop_signal: int = signal.SIGTERM
    _popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _seen: dict[int, psutil.Process] = field(default_factory=dict, repr=False)

    def start(self) -> None:
        """Start the process in its own process group, output into its log."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log, signals_deferred():
            try:
                self._popen = subprocess.Popen(
                    list(self.argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    user=self.user,
                    start_new_session=True,
                )
            except OSError as exc:
                raise StartupError(
                    f"cannot start {self.name} ({self.argv[0]}): {exc}"
                ) from None

    @property
    def pid(self) -> int:
        """The process id; a HarnessError if it was never started."""
        if self._popen is None:
            raise HarnessError(f"{self.name} was never started")
        return self._popen.pid

    def record(self) -> ProcessRecord:
        """What ``down`` needs to stop this process later by pid."""
        return ProcessRecord(
            self.name,
            self.pid,
            psutil.Process(self.pid).create_time(),
            str(self.log_path),
            int(self.stop_signal),
            list(self.argv),
        )

    def running(self) -> bool:
        """True while the process has not exited."""
        return self._popen is not None and self._popen.poll() is None

    def returncode(self) -> int | None:
        """The exit code, or None while running or never started."""
        return None if self._popen is None else self._popen.poll()

    def remember_descendants(self) -> None:
        """Note the current children so a later stop can reap them by pid."""
        if not self.running():
            return
        try:
            for child in psutil.Process(self.pid).children(recursive=True):
                self._seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            pass

    def seen_pids(self) -> list[int]:
        """Descendants noted by :meth:`remember_descendants`."""
        return list(self._seen)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` of the process's log, indented."""
        return log_tail(self.log_path, lines)

    def fail(self, reason: str, daemon_log: Path | None = None) -> StartupError:
        """A StartupError for this process, with its log tails attached.

        ``daemon_log`` is the log file the daemon writes itself (Salt's do);
        its output captured by the harness usually only holds a banner.
        """
        tails = f"Last lines of {self.log_path}:\n{self.log_tail()}"
        if daemon_log is not None:
            tails = f"Last lines of {daemon_log}:\n{log_tail(daemon_log)}\nand of {self.log_path}:\n{self.log_tail()}"
        return StartupError(f"{self.name} {reason}. {tails}")

    def wait_until(
        self,
        ready: Callable[[], bool],
        *,
        timeout: float,
        what: str,
        interval: float = 0.2,
    ) -> None:
        """Poll ``ready`` until true; fail early if the process exits."""
        deadline = time.monotonic() + timeout
        while True:
            if ready():
                return
            if not self.running():
                raise self.fail(f"exited with code {self.returncode()} before {what}")
            if time.monotonic() > deadline:
                raise self.fail(f"did not report {what} within {timeout:.0f}s")
            time.sleep(interval)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the process and every descendant seen; safe if never started."""
        if self._popen is None:
            return
        self.remember_descendants()
        stop_process_tree(
            self.pid, self.stop_signal, timeout, list(self._seen.values())
        )
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=1)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C / SIGTERM until the block is done.

    A KeyboardInterrupt raised inside ``Popen`` after the fork would lose the
    child's pid, and a daemon nobody knows of cannot be stopped. The same
    holds for a stop: a second Ctrl-C that cut it short would leave what it
    had not stopped yet running (a PostgreSQL server as ``nobody``, say). Handlers
    are process-wide and only the main thread may set them; elsewhere the
    block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for signum in caught:
            signal.raise_signal(signum)


def stop_process_tree(
    pid: int,
    sig: int = signal.SIGTERM,
    timeout: float = 15.0,
    known: Sequence[psutil.Process] = (),
) -> None:
    """Signal ``pid``, wait up to ``timeout``, then SIGKILL what remains.

    "What remains" is the process itself, its process group (it leads one:
    started with ``start_new_session``) and every descendant seen now or
    listed in ``known``.
    """
    procs: dict[int, psutil.Process] = {p.pid: p for p in known}
    try:
        leader = psutil.Process(pid)
        procs[pid] = leader
        for child in leader.children(recursive=True):
            procs[child.pid] = child
        leader.send_signal(sig)
    except psutil.NoSuchProcess:
        pass
    _, alive = psutil.wait_procs(list(procs.values()), timeout=timeout)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    # also wait for group members forked after we looked (SIGKILLed just now)
    psutil.wait_procs([*alive, *_group_members(pid)], timeout=5)


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
    return members


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` of ``path``, indented, or a note that there are none."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    tail = text.rstrip().splitlines()[-lines:]
    return "\n".join(f"    {line}" for line in tail) or "(log is empty)"


def remove_tree(
    root: Path,
    say: Callable[[str], None] = print,
    settle_s: float = 2.0,
) -> None:
    """Remove ``root``, a stopped stack's directory, and make sure it stays gone.

    Load runs left an empty ``<root>/master/cache/master`` behind now and
    then: something of the stopped stack made it again after the removal.
    The directory is removed once more when it comes back within
    ``settle_s``, and what is still using it is named, so that the process
    that writes after its stop can be found.
    """
    shutil.rmtree(root, ignore_errors=True)
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if not root.exists():
            continue
        found = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        users = _processes_using(root)
        say(
            f"{root} came back after its removal ({', '.join(found) or 'empty'}); "
            f"processes using it: {', '.join(users) or 'none left'}"
        )
        shutil.rmtree(root, ignore_errors=True)


def _processes_using(root: Path) -> list[str]:
    """``name[pid]`` of the processes whose working directory or open files
    are below ``root``."""
    prefix = str(root) + os.sep
    users = []
    for proc in psutil.process_iter(["pid", "name"]):
        with contextlib.suppress(psutil.Error):
            paths = [proc.cwd(), *(f.path for f in proc.open_files())]
            if any(p.startswith(prefix) for p in paths):
                users.append(f"{proc.info['name']}[{proc.info['pid']}]")
    return users
