"""
Control of a running fleet: fire beacons, change package sets, change the slowdown.

Every worker process listens on a unix socket ``<run_dir>/control-<k>.sock``
and speaks JSON lines: one request object per line, one reply object per line.
Requests (``op`` selects the operation):

``{"op": "status"}``
    the worker's counters (see :class:`evil_minions.status.ProcessStats`).
``{"op": "beacon", "ids": ["evil-0001"] | null, "change_packages": true, "packages": 3}``
    the named minions of this worker (all of them for ``null``) change
    ``packages`` packages of their set (unless ``change_packages`` is false)
    and fire ``salt/beacon/<id>/pkgset/changed`` to the master, as Uyuni's
    ``pkgset`` beacon does after a package manager transaction. Reply:
    ``{"ok": true, "fired": [...], "failed": [...]}``.
``{"op": "slowdown", "factor": 2.0}``
    multiply every latency and state duration by ``factor`` from now on.

Replies carry ``"ok": false, "error": "..."`` for bad requests. The functions
below are the client side; the CLI ``python -m evil_minions beacon`` uses them.

.. code-block:: python

    from evil_minions import control

    report = control.fire_beacons("/tmp/em-run", ["evil-0001", "evil-0002"])
    report.fired  # ['evil-0001', 'evil-0002']
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from evil_minions.errors import EvilMinionsError

log = logging.getLogger(__name__)

SOCKET_GLOB: Final = "control-*.sock"
_MAX_LINE: Final = 16 * 1024 * 1024

Handler = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]


class ControlError(EvilMinionsError):
    """The fleet could not be reached or refused a request; the message says why."""


def socket_path(run_dir: str | os.PathLike[str], index: int) -> Path:
    """The control socket of worker ``index``."""
    return Path(run_dir) / f"control-{index}.sock"


# -- server (inside a worker) ---------------------------------------------------


class ControlServer:
    """Serves JSON-lines requests on a unix socket with ``handler``."""

    def __init__(self, path: str | os.PathLike[str], handler: Handler) -> None:
        self.path = Path(path)
        self._handler = handler
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        """Listen; a stale socket file from a dead run is replaced."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.path), limit=_MAX_LINE
        )

    async def close(self) -> None:
        """Stop listening and remove the socket file."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while line := await reader.readline():
                reply = await self._dispatch(line)
                writer.write(json.dumps(reply, default=str).encode("utf-8") + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def _dispatch(self, line: bytes) -> Mapping[str, Any]:
        try:
            request = json.loads(line)
        except ValueError as exc:
            return {"ok": False, "error": f"request is not JSON: {exc}"}
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            return {
                "ok": False,
                "error": 'request must be an object with an "op" string',
            }
        try:
            return await self._handler(request)
        except Exception as exc:
            log.exception("control request %r failed", request)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


# -- client ---------------------------------------------------------------------


def control_sockets(run_dir: str | os.PathLike[str]) -> list[Path]:
    """The control sockets of the fleet running in ``run_dir``."""
    return sorted(Path(run_dir).glob(SOCKET_GLOB))


def request(
    run_dir: str | os.PathLike[str],
    payload: Mapping[str, Any],
    *,
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """
    Send ``payload`` to every worker of the fleet; return their replies in process order.

    Raises :class:`ControlError` if no worker is listening in ``run_dir`` or
    one cannot be reached.
    """
    sockets = control_sockets(run_dir)
    if not sockets:
        raise ControlError(f"no fleet is running in {run_dir}: no {SOCKET_GLOB} there")
    data = json.dumps(dict(payload)).encode("utf-8") + b"\n"
    replies = []
    for path in sockets:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout)
                conn.connect(str(path))
                conn.sendall(data)
                replies.append(json.loads(_read_line(conn)))
        except (OSError, ValueError) as exc:
            raise ControlError(f"cannot talk to {path}: {exc}") from exc
    return replies


def _read_line(conn: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


@dataclasses.dataclass(frozen=True)
class BeaconReport:
    """Outcome of :func:`fire_beacons` over the whole fleet."""

    fired: list[str]
    failed: list[str]
    unknown: list[str]


def fire_beacons(
    run_dir: str | os.PathLike[str],
    ids: Sequence[str] | None = None,
    *,
    change_packages: bool = True,
    packages: int = 3,
    timeout: float = 120.0,
) -> BeaconReport:
    """
    Make the minions ``ids`` (every minion for ``None``) fire ``salt/beacon/<id>/pkgset/changed``.

    Unless ``change_packages`` is false each of them first changes
    ``packages`` packages of its ``pkg.list_pkgs`` set. Returns when every
    event was delivered to the master (or failed). Ids no worker knows are
    reported in ``unknown``.
    """
    payload: dict[str, Any] = {
        "op": "beacon", "ids": list(ids) if ids is not None else None,
        "change_packages": change_packages, "packages": packages,
    }  # fmt: skip
    replies = request(run_dir, payload, timeout=timeout)
    _raise_on_error(replies)
    fired = sorted(i for r in replies for i in r.get("fired", []))
    failed = sorted(i for r in replies for i in r.get("failed", []))
    known = set(fired) | set(failed)
    unknown = sorted(set(ids) - known) if ids is not None else []
    return BeaconReport(fired, failed, unknown)


def set_slowdown(run_dir: str | os.PathLike[str], factor: float) -> None:
    """Change the global slowdown factor of every worker."""
    if factor <= 0:
        raise ControlError(f"invalid slowdown {factor}: must be > 0")
    _raise_on_error(request(run_dir, {"op": "slowdown", "factor": factor}))


def process_status(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Live counters straight from every worker (fresher than ``status.json``)."""
    replies = request(run_dir, {"op": "status"})
    _raise_on_error(replies)
    return [r["status"] for r in replies]


def _raise_on_error(replies: Iterable[Mapping[str, Any]]) -> None:
    errors = [str(r.get("error")) for r in replies if not r.get("ok")]
    if errors:
        raise ControlError("; ".join(errors))
