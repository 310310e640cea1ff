"""
The jobs a simulated minion is running: the truth behind ``saltutil.running``.

A real minion writes one file per running job into its ``proc`` directory;
``saltutil.running`` lists those files and ``saltutil.find_job`` reads one.
:class:`JobTracker` keeps the same records in memory. A job is recorded only
once it holds one of the minion's job slots, so jobs waiting behind
``max_concurrent_jobs`` are not "running", as queued jobs on a real minion are
not.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any


class JobTracker:
    """In-flight jobs and job slots of one minion."""

    __slots__ = ("_limit", "_running", "_slots", "in_flight", "peak", "waiting")

    def __init__(self, max_concurrent: int = 0) -> None:
        self._running: dict[str, dict[str, Any]] = {}
        self._limit = max_concurrent
        # Created on first use: most fleets run without a limit and a
        # semaphore per idle minion would be wasted memory.
        self._slots: asyncio.Semaphore | None = None
        #: jobs currently waiting for a slot
        self.waiting = 0
        #: non-exempt jobs waiting or running now, and the most there ever were
        self.in_flight = 0
        self.peak = 0

    @contextlib.asynccontextmanager
    async def slot(self, *, exempt: bool = False) -> AsyncIterator[None]:
        """Hold one job slot for the duration of the block (no-op when unlimited or exempt).

        Non-exempt jobs are counted in :attr:`in_flight` (waiting or running)
        and its high-water mark :attr:`peak`: what a master's rate limiter
        must keep at or below its per-minion capacity.
        """
        if exempt:
            yield
            return
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self._limit <= 0:
                yield
                return
            if self._slots is None:
                self._slots = asyncio.Semaphore(self._limit)
            self.waiting += 1
            try:
                await self._slots.acquire()
            finally:
                self.waiting -= 1
            try:
                yield
            finally:
                self._slots.release()
        finally:
            self.in_flight -= 1

    def start(self, publication: Mapping[str, Any]) -> dict[str, Any]:
        """Record a job as running; returns its proc record (``pid`` + the publication)."""
        record: dict[str, Any] = {"pid": os.getpid()}
        record.update(publication)
        self._running[str(publication["jid"])] = record
        return record

    def finish(self, jid: str) -> None:
        """Forget a job that has returned."""
        self._running.pop(str(jid), None)

    def running(self) -> list[dict[str, Any]]:
        """``saltutil.running``: the proc records of all running jobs."""
        return [dict(record) for record in self._running.values()]

    def find(self, jid: str) -> dict[str, Any]:
        """``saltutil.find_job``: the proc record of ``jid`` or ``{}``."""
        record = self._running.get(str(jid))
        return dict(record) if record else {}

    def running_states(self, exclude_jid: str) -> list[dict[str, Any]]:
        """Running ``state.*`` jobs other than ``exclude_jid`` (for the state run lock)."""
        return [
            dict(record)
            for jid, record in self._running.items()
            if jid != str(exclude_jid)
            and str(record.get("fun", "")).startswith("state.")
        ]

    def __len__(self) -> int:
        return len(self._running)
