"""Loopback ports: find free ones, and refuse taken ones with a clear error."""

from __future__ import annotations

import errno
import socket

from harness.errors import HarnessError

LOOPBACK = "127.0.0.1"


class PortInUseError(HarnessError):
    """A port the user asked for is already bound by something else."""


def free_port(host: str = LOOPBACK) -> int:
    """Return a port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ensure_free(port: int, what: str, host: str = LOOPBACK) -> int:
    """Return ``port`` if it can be bound on ``host``, else raise PortInUseError."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(
                    f"{what} port {port} on {host} is already in use; choose "
                    "another one or leave it out to get a free port"
                ) from None
            raise PortInUseError(f"cannot bind {what} port {port}: {exc}") from None
    return port


def pick_port(requested: int | None, what: str) -> int:
    """The requested port if free, or any free port when none was requested."""
    return free_port() if requested is None else ensure_free(requested, what)


def is_listening(port: int, host: str = LOOPBACK, timeout: float = 1.0) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
