"""CPU and memory (PSS) of a process and every process below it (a master's tree)."""

from __future__ import annotations

import contextlib
import re
from typing import Final

import psutil

_WORKER = re.compile(r"^MWorker-(?P<pool>.+)-\d+$")
#: how :func:`role` names the MWorkers of a pool: ``MWorker default``
WORKER_ROLE_PREFIX: Final = "MWorker "


def processes(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and its live descendants; empty if it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its live descendants, and of the
    descendants they waited for after those exited (a worker that died
    and was reaped keeps counting)."""
    total = 0.0
    for proc in processes(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
            total += times.children_user + times.children_system
    return total


def role(cmdline: list[str]) -> str:
    """What a Salt daemon's process does, from its command line: Salt puts
    the process's name after the options (``... -l warning MWorker-default-0``);
    the workers of one pool are one role (``MWorker default``)."""
    words = cmdline[cmdline.index("-l") + 2 :] if "-l" in cmdline else []
    name = words[-1] if words else "main"
    worker = _WORKER.match(name)
    return WORKER_ROLE_PREFIX + worker["pool"] if worker else name


def pss_by_role(pid: int) -> dict[str, float]:
    """Proportional set size in MiB of a process and its descendants, summed
    per :func:`role`.

    PSS, not RSS: a master's processes are forked from one parent and share
    its pages copy-on-write, so summed RSS counts every shared page once per
    process; PSS divides a shared page among the processes that map it, so
    the sum is what the tree costs the machine (``/proc/PID/smaps_rollup``)."""
    totals: dict[str, float] = {}
    for proc in processes(pid):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            name = role(proc.cmdline())
            pss = proc.memory_full_info().pss
            totals[name] = totals.get(name, 0.0) + pss / 2**20
    return totals


def cpu_by_role(pid: int) -> dict[str, float]:
    """User + system CPU seconds of a process and its descendants, summed
    per :func:`role`."""
    totals: dict[str, float] = {}
    for proc in processes(pid):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            name = role(proc.cmdline())
            times = proc.cpu_times()
            totals[name] = totals.get(name, 0.0) + times.user + times.system
    return totals
