"""The event consumer: the engine's queue, pacing and samples, and how the
harness turns it on and reads it back.

The engine stands for SUSE Manager in the storm: if it dropped events or
stored faster than its rate, the storm's consumer backlog would be fiction.
Its logic runs here with a fake clock and fake stores; the real engine
against a real master and PostgreSQL is tests/integration/test_consumer.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.consumer import (
    ENGINE_NAME,
    ConsumerSample,
    ConsumerSettings,
    samples_from_rows,
)
from harness.errors import HarnessError
from harness.events import ENGINE_DIR
from harness.master import MasterSettings, render_config
from harness.postgres import ConnectionInfo
from harness.salt_ext.engines.saltfleet_consumer import (
    Consumer,
    Received,
    Sample,
    StoreError,
    event_text,
)
from tests.conftest import FakeClock


class FakeStore:
    """Keeps what it was given; fails while ``failing`` is set."""

    def __init__(self) -> None:
        self.events: list[Received] = []
        self.samples: list[Sample] = []
        self.failing = False

    def write_events(self, batch: list[Received]) -> None:
        if self.failing:
            raise StoreError("database went away")
        self.events.extend(batch)

    def write_samples(self, samples: list[Sample]) -> None:
        if self.failing:
            raise StoreError("database went away")
        self.samples.extend(samples)


def _consumer(rate: float = 150.0) -> tuple[Consumer, FakeStore, FakeClock]:
    clock, store = FakeClock(), FakeStore()
    consumer = Consumer(
        store, store, rate, tick=0.1, clock=clock, wall=clock, rss_kb=lambda: 2048
    )
    return consumer, store, clock


def _run_for(consumer: Consumer, clock: FakeClock, seconds: float) -> int:
    """Drive the writer one tick at a time, as its thread does."""
    stored = 0
    for _ in range(round(seconds / 0.1)):
        clock.now += 0.1
        stored += max(0, consumer.write_once())
    return stored


def test_a_flood_is_stored_at_the_rate_and_the_rest_waits_in_memory() -> None:
    consumer, store, clock = _consumer(rate=150.0)
    for i in range(5000):
        consumer.receive(f"salt/job/{i}/ret/m", {"i": i})

    stored = _run_for(consumer, clock, 10.0)

    assert stored == 1500
    assert [e.data["i"] for e in store.events] == list(range(1500))  # in order
    sample = consumer.sample()
    assert (sample.received, sample.stored, sample.backlog) == (5000, 1500, 3500)


def test_an_idle_consumer_saves_up_no_burst() -> None:
    consumer, _store, clock = _consumer(rate=150.0)
    clock.now += 60  # a minute without events
    for i in range(1000):
        consumer.receive("tag", {"i": i})
    clock.now += 0.1
    assert consumer.write_once() == 15  # one tick's worth, not 60 s of it


def test_a_rate_below_one_event_per_tick_still_stores() -> None:
    consumer, _store, clock = _consumer(rate=2.0)
    for i in range(10):
        consumer.receive("tag", {"i": i})
    assert _run_for(consumer, clock, 2.0) == 4


def test_a_failed_write_keeps_its_events_at_the_head_and_counts_the_failure() -> None:
    consumer, store, clock = _consumer(rate=150.0)
    for i in range(20):
        consumer.receive("tag", {"i": i})
    store.failing = True
    clock.now += 0.1
    assert consumer.write_once() == -1
    failed = consumer.sample()  # not written either: kept for later
    assert (failed.received, failed.stored, failed.backlog) == (20, 0, 20)
    assert failed.write_errors == 1

    store.failing = False
    _run_for(consumer, clock, 0.2)
    assert [e.data["i"] for e in store.events] == list(range(20))
    later = consumer.sample()
    assert (later.stored, later.backlog) == (20, 0)
    # the sample taken while the store failed was written with the next one
    assert [s.at for s in store.samples] == [failed.at, later.at]


def test_every_sample_accounts_for_every_event_received() -> None:
    consumer, store, clock = _consumer(rate=50.0)
    for round_ in range(30):
        for i in range(7):
            consumer.receive("tag", {"round": round_, "i": i})
        store.failing = round_ % 4 == 0
        _run_for(consumer, clock, 0.3)
        sample = consumer.sample()
        assert sample.received == sample.stored + sample.backlog
    assert consumer.sample().rss_kb == 2048


def test_event_data_becomes_json_postgres_accepts() -> None:
    text = event_text({"out": "a\x00b", "when": Path("/x"), "list": ["\x00"]})
    data = json.loads(text)
    assert data == {"out": "a\ufffdb", "when": repr(Path("/x")), "list": ["\ufffd"]}
    assert "\\u0000" not in text
    assert json.loads(event_text({"plain": 1})) == {"plain": 1}


def test_a_rate_that_is_no_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="rate must be more than 0"):
        Consumer(FakeStore(), FakeStore(), 0.0)


# -- the harness's side ------------------------------------------------------


def _info() -> ConnectionInfo:
    return ConnectionInfo("127.0.0.1", 5432, "postgres", "", "saltfleet")


class _Forwarder:
    """What render_config asks of an EventListener (a real one needs its
    server thread running to be stopped)."""

    def engine_config(self) -> dict[str, object]:
        return {
            "engines_dirs": [str(ENGINE_DIR)],
            "engines": [{"saltfleet_events": {"host": "127.0.0.1", "port": 1}}],
        }


def test_the_consumer_engine_joins_the_masters_engines_pointed_at_its_database(
    tmp_path: Path,
) -> None:
    settings = MasterSettings(
        root=tmp_path,
        publish_port=14505,
        ret_port=14506,
        postgres=_info(),
        consumer=ConsumerSettings(rate=80, name="storm-on"),
    )
    opts = render_config(settings, _Forwarder())  # type: ignore[arg-type]
    names = [next(iter(engine)) for engine in opts["engines"]]
    assert names == ["saltfleet_events", ENGINE_NAME]  # the forwarder stays
    assert opts["engines"][1][ENGINE_NAME] == {
        "dsn": _info().dsn,
        "rate": 80,
        "name": "storm-on",
        "sample_interval": 1.0,
    }
    assert opts["engines_dirs"] == [str(ENGINE_DIR)]
    assert (ENGINE_DIR / f"{ENGINE_NAME}.py").is_file()


def test_a_consumer_without_a_database_or_with_a_bad_setting_is_refused(
    tmp_path: Path,
) -> None:
    settings = MasterSettings(
        root=tmp_path, publish_port=1, ret_port=2, consumer=ConsumerSettings()
    )
    with pytest.raises(HarnessError, match="stores events in PostgreSQL"):
        render_config(settings, None)
    with pytest.raises(HarnessError, match="rate must be more than 0"):
        ConsumerSettings(rate=0)
    with pytest.raises(HarnessError, match="rate must be more than 0"):
        ConsumerSettings(rate=float("nan"))
    with pytest.raises(HarnessError, match="sample interval"):
        ConsumerSettings(sample_interval=-1)


def test_sample_rows_are_read_oldest_first_and_say_what_is_unaccounted() -> None:
    rows = [
        (1002.0, 30, 20, 10, 4096, 0),
        (1001.0, 10, 10, 0, 2048, 0),
        (1003.5, 40, 25, 12, 8192, 1),
    ]
    samples = samples_from_rows(rows)
    assert [s.at for s in samples] == [1001.0, 1002.0, 1003.5]
    assert samples[0] == ConsumerSample(1001.0, 10, 10, 0, 2048, 0)
    assert [s.unaccounted for s in samples] == [0, 0, 3]
