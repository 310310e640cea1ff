"""CPU and memory of a process and every process below it (a master's tree)."""

from __future__ import annotations

import contextlib

import psutil


def processes(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and its live descendants; empty if it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its live descendants."""
    total = 0.0
    for proc in processes(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its live descendants, summed, in MiB."""
    total = 0
    for proc in processes(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += proc.memory_info().rss
    return total / 2**20
