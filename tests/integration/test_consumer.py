"""The event consumer engine on a real master, storing into real PostgreSQL.

The storm reads its backlog from what this engine writes; here a burst of
events is fired on the master's bus and must all land in ``consumer_event``,
no faster than the consumer's rate, with every sample accounting for every
event received.
"""

from __future__ import annotations

import time

import pytest

from harness.consumer import ConsumerSettings, read_samples, stored_events
from harness.stack import Stack, StackSettings
from tests.conftest import query

pytestmark = pytest.mark.integration

RATE = 20.0
BURST = 60
TAG = "saltfleet/consumer-test"


def _fire(stack: Stack, count: int) -> None:
    import salt.config
    import salt.utils.event

    assert stack.master is not None
    opts = salt.config.client_config(str(stack.master.settings.conf_file))
    with salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=False) as bus:
        for i in range(count):
            assert bus.fire_event({"i": i, "out": "a\x00b"}, f"{TAG}/{i}")


def _rows(stack: Stack) -> list[tuple[str, dict, float]]:
    assert stack.pg is not None
    rows = query(
        stack.pg,
        "SELECT tag, data, extract(epoch FROM stored_at) FROM consumer_event"
        " WHERE consumer = 'it' AND tag LIKE %s ORDER BY id",
        (f"{TAG}/%",),
    )
    return [(tag, data, float(at)) for tag, data, at in rows]


def test_a_burst_is_stored_whole_at_the_consumers_rate(open_tmp) -> None:
    settings = StackSettings(
        root=open_tmp,
        real_minion=False,
        consumer=ConsumerSettings(rate=RATE, name="it"),
    )
    with Stack(settings) as stack:
        assert stack.pg is not None
        _fire(stack, BURST)
        deadline = time.monotonic() + 60
        while len(_rows(stack)) < BURST and time.monotonic() < deadline:
            time.sleep(0.5)
        rows = _rows(stack)
        time.sleep(1.5)  # one more sample after the last event was stored
        samples = read_samples(stack.pg, "it")
        total = stored_events(stack.pg, "it")

    assert [tag for tag, _, _ in rows] == [f"{TAG}/{i}" for i in range(BURST)]
    assert rows[0][1] == {"i": 0, "out": "a\ufffdb", "_stamp": rows[0][1]["_stamp"]}
    # one tick's worth (2 events) may go at once, the rest at RATE per second
    assert rows[-1][2] - rows[0][2] >= (BURST - 2) / RATE - 0.2
    assert samples, "the consumer wrote no sample"
    assert all(s.unaccounted == 0 for s in samples)
    assert samples[-1].stored <= total
    assert samples[-1].received >= BURST and samples[-1].rss_kb > 0
    assert max(s.backlog for s in samples) > 0  # the burst did wait
