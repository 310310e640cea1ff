"""
Forward the master's event bus to the saltfleet harness.

This engine is loaded by a harness-started master only (through
``engines_dirs``). It connects to the harness's listener on loopback, then
subscribes to the master event bus, fires ``salt/master/<id>/start`` on it
(upstream's master fires no start event of its own) and forwards every event
it sees, its own start event included, as one JSON line each. Because the
listener exists before the master starts, no event is missed.

When the harness goes away (``python -m harness up`` returns), forwarding
stops quietly and resumes if a listener comes back.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import salt.utils.event

log = logging.getLogger(__name__)

RECONNECT_INTERVAL = 2.0


def _connect(host: str, port: int) -> socket.socket | None:
    try:
        return socket.create_connection((host, port), timeout=5)
    except OSError:
        return None


def start(host: str = "127.0.0.1", port: int = 0) -> None:
    """
    Run the forwarder until the master stops it.
    """
    # Salt's loader injects __opts__ into the module's globals
    opts: dict[str, Any] = globals()["__opts__"]
    conn = None
    deadline = time.monotonic() + 30
    while conn is None and time.monotonic() < deadline:
        conn = _connect(host, port)
        if conn is None:
            time.sleep(0.2)
    last_attempt = time.monotonic()
    with salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True) as bus:
        bus.subscribe("")
        bus.connect_pub(timeout=30)
        bus.fire_event({"id": opts["id"]}, "salt/master/{}/start".format(opts["id"]))
        while True:
            event = bus.get_event(wait=1, full=True, auto_reconnect=True)
            if event is None:
                continue
            if conn is None and time.monotonic() - last_attempt > RECONNECT_INTERVAL:
                conn = _connect(host, port)
                last_attempt = time.monotonic()
            if conn is None:
                continue
            line = json.dumps(
                {"tag": event["tag"], "data": event["data"]}, default=repr
            )
            try:
                conn.sendall(line.encode() + b"\n")
            except OSError:
                log.debug("saltfleet harness listener went away")
                conn.close()
                conn = None
