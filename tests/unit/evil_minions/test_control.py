"""The control socket protocol, over a real unix socket: JSON lines in, JSON
lines out, fleet-wide answers assembled by the client functions."""

from __future__ import annotations

import asyncio
import threading

import pytest

from evil_minions.control import (
    ControlError,
    ControlServer,
    fire_beacons,
    process_status,
    request,
    set_slowdown,
    socket_path,
)


class FakeWorker:
    """Answers like a FleetWorker that owns ``ids``."""

    def __init__(self, ids):
        self.ids = ids
        self.slowdown = 1.0

    async def handle(self, req):
        if req["op"] == "beacon":
            wanted = (
                self.ids
                if req["ids"] is None
                else [i for i in req["ids"] if i in self.ids]
            )
            return {
                "ok": True,
                "fired": [i for i in wanted if i != "evil-0003"],
                "failed": [i for i in wanted if i == "evil-0003"],
            }
        if req["op"] == "slowdown":
            self.slowdown = req["factor"]
            return {"ok": True}
        if req["op"] == "status":
            return {"ok": True, "status": {"minions": len(self.ids)}}
        raise RuntimeError("boom")


@pytest.fixture
def fleet(tmp_path):
    """Two workers serving control sockets in tmp_path from a background loop."""
    loop = asyncio.new_event_loop()
    workers = [FakeWorker(["evil-0001", "evil-0002"]), FakeWorker(["evil-0003"])]
    servers = [
        ControlServer(socket_path(tmp_path, i), w.handle) for i, w in enumerate(workers)
    ]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(5)
    yield tmp_path, workers
    for server in servers:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_fire_beacons_over_all_workers(fleet):
    run_dir, _ = fleet
    report = fire_beacons(run_dir, ["evil-0001", "evil-0003", "ghost"])
    assert report.fired == ["evil-0001"]
    assert report.failed == ["evil-0003"]
    assert report.unknown == ["ghost"]
    everyone = fire_beacons(run_dir, None)
    assert everyone.fired == ["evil-0001", "evil-0002"] and everyone.unknown == []


def test_slowdown_and_status(fleet):
    run_dir, workers = fleet
    set_slowdown(run_dir, 3.0)
    assert [w.slowdown for w in workers] == [3.0, 3.0]
    assert process_status(run_dir) == [{"minions": 2}, {"minions": 1}]
    with pytest.raises(ControlError, match="must be > 0"):
        set_slowdown(run_dir, 0)


def test_handler_errors_and_bad_requests_become_error_replies(fleet):
    run_dir, _ = fleet
    assert request(run_dir, {"op": "explode"})[0] == {
        "ok": False,
        "error": "RuntimeError: boom",
    }
    assert request(run_dir, {"no": "op"})[0]["ok"] is False


def test_no_fleet(tmp_path):
    with pytest.raises(ControlError, match="no fleet is running"):
        request(tmp_path, {"op": "status"})
