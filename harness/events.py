"""Events from the master, as the harness sees them.

:class:`EventListener` is a loopback TCP server that the master's
``saltfleet_events`` engine (``harness/salt_ext/engines``) connects to and
streams every bus event into. The harness waits on it for start-up events
(``salt/master/<id>/start``, ``salt/minion/<id>/start``) instead of sleeping.
"""

from __future__ import annotations

import fnmatch
import json
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.ports import LOOPBACK

ENGINE_DIR = Path(__file__).resolve().parent / "salt_ext" / "engines"
ENGINE_NAME = "saltfleet_events"


@dataclass(frozen=True)
class Event:
    """One master event as the engine forwarded it."""

    tag: str
    data: dict[str, Any]
    received: float

    @property
    def fired_at(self) -> float | None:
        """When the master fired the event onto its bus (its ``_stamp``, on
        the wall clock), before the forwarder and the listener handled it;
        None without a readable stamp."""
        stamp = self.data.get("_stamp")
        if not isinstance(stamp, str):
            return None
        try:
            fired = datetime.fromisoformat(stamp)
        except ValueError:
            return None
        if fired.tzinfo is None:  # Salt stamps UTC without saying so
            fired = fired.replace(tzinfo=UTC)
        return fired.timestamp()

    @property
    def fired_at_or_received(self) -> float:
        """:attr:`fired_at`, or when the listener got the event without a
        readable stamp (the forwarder lags the bus by seconds on a busy
        master, so a stamp is preferred)."""
        fired = self.fired_at
        return self.received if fired is None else fired


class EventListener:
    """Collects forwarded master events; thread-safe waits by tag pattern."""

    def __init__(self, host: str = LOOPBACK) -> None:
        self._events: list[Event] = []
        self._cond = threading.Condition()
        listener = self

        class _Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for raw in self.rfile:
                    try:
                        item = json.loads(raw)
                    except ValueError:
                        continue
                    listener._add(
                        Event(item["tag"], item.get("data") or {}, time.time())
                    )

        self._server = socketserver.ThreadingTCPServer((host, 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="event-listener", daemon=True
        )

    @property
    def port(self) -> int:
        """The loopback port the master's engine connects to."""
        return int(self._server.server_address[1])

    def engine_config(self) -> dict[str, Any]:
        """The master config that makes the master stream its events here."""
        return {
            "engines_dirs": [str(ENGINE_DIR)],
            "engines": [{ENGINE_NAME: {"host": LOOPBACK, "port": self.port}}],
        }

    def start(self) -> None:
        """Accept connections in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting and close the server socket."""
        self._server.shutdown()
        self._server.server_close()

    def _add(self, event: Event) -> None:
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    def mark(self) -> int:
        """A position; ``wait_for(..., since=mark)`` ignores earlier events."""
        with self._cond:
            return len(self._events)

    def since(self, index: int) -> tuple[list[Event], int]:
        """Every event after position ``index``, and the position after them."""
        with self._cond:
            return self._events[index:], len(self._events)

    def matching(self, pattern: str, since: int = 0) -> list[Event]:
        """Events from position ``since`` (see :meth:`mark`) whose tag matches the glob."""
        with self._cond:
            return [
                e for e in self._events[since:] if fnmatch.fnmatchcase(e.tag, pattern)
            ]

    def wait_for(
        self,
        pattern: str,
        *,
        timeout: float,
        since: int = 0,
        alive: Callable[[], bool] | None = None,
    ) -> Event | None:
        """The first event matching ``pattern`` after ``since``, or None on
        timeout or as soon as ``alive`` returns False."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self._events[since:]:
                    if fnmatch.fnmatchcase(event.tag, pattern):
                        return event
                since = len(self._events)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (alive is not None and not alive()):
                    return None
                self._cond.wait(min(remaining, 0.5))
