"""
A consumer of the master's events that stores each one in PostgreSQL at a
bounded rate, as SUSE Manager does.

SUSE Manager reads every Salt event from the master's bus and writes it to
its database before it processes it. When a storm of jobs brings returns
faster than it can store them, the events wait in its memory: the backlog
and the process grow. This engine is that consumer, for the storm benchmark;
the harness loads it (through ``engines_dirs``) only when a stack asks for
it (:class:`harness.consumer.ConsumerSettings`).

Three threads and one unbounded queue between them:

- the reader (the engine's own thread) takes every event off the master
  event bus and appends it to the queue, counting it ``received``;
- the writer stores at most ``rate`` events per second, one transaction per
  tick, in ``consumer_event``; a write that fails puts its events back at
  the head of the queue and is retried, so nothing is dropped;
- the sampler writes one ``consumer_sample`` row every ``sample_interval``
  seconds: events received, stored, waiting (the backlog: queued plus the
  batch being written), the engine's RSS and failed writes.

Once it reads the bus it fires ``saltfleet/consumer/<name>/start``. At
every sample ``received == stored + backlog``. The engine creates both
tables in the database it is pointed at when they are missing: it is a part
of the benchmark, not of the product.
"""

# No ``from __future__ import annotations``: Salt's loader runs this module
# without an entry in sys.modules, where dataclasses look string annotations up.
import contextlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

#: seconds between the writer's transactions
TICK = 0.1
#: seconds the writer waits after a failed write before it retries
RETRY_AFTER = 1.0
#: seconds the engine keeps trying to reach the database at start
CONNECT_FOR = 30.0

SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS consumer_event (
        id bigserial PRIMARY KEY,
        consumer text NOT NULL,
        tag text NOT NULL,
        data jsonb NOT NULL,
        received_at timestamptz NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS consumer_sample (
        id bigserial PRIMARY KEY,
        consumer text NOT NULL,
        at double precision NOT NULL,
        received bigint NOT NULL,
        stored bigint NOT NULL,
        backlog bigint NOT NULL,
        rss_kb bigint NOT NULL,
        write_errors bigint NOT NULL
    )
    """,
)


@dataclass(frozen=True)
class Received:
    """One event off the bus and when (wall clock) it was read."""

    tag: str
    data: Any
    at: float


@dataclass(frozen=True)
class Sample:
    """The consumer's counts at ``at`` (wall clock, epoch seconds): one
    ``consumer_sample`` row."""

    at: float
    received: int
    stored: int
    backlog: int
    rss_kb: int
    write_errors: int

    @property
    def unaccounted(self) -> int:
        """Events received that are neither stored nor waiting: lost (0
        unless the consumer is broken)."""
        return self.received - self.stored - self.backlog


class StoreError(Exception):
    """A write to the database failed; what was being written is kept."""


class EventStore(Protocol):
    """Where the writer stores events."""

    def write_events(self, batch: list[Received]) -> None:
        """Store ``batch`` in one transaction or raise :class:`StoreError`."""


class SampleStore(Protocol):
    """Where the sampler writes its samples."""

    def write_samples(self, samples: list[Sample]) -> None:
        """Store ``samples`` in one transaction or raise :class:`StoreError`."""


class EventQueue:
    """The unbounded queue between the reader and the writer, and the counts
    that prove no event was lost: ``received == stored + backlog``."""

    def __init__(self) -> None:
        self._items: deque[Received] = deque()
        self._lock = threading.Lock()
        self._writing = 0
        self.received = 0
        self.stored = 0
        self.write_errors = 0

    def put(self, item: Received) -> None:
        """Append an event the reader took off the bus."""
        with self._lock:
            self._items.append(item)
            self.received += 1

    def take(self, limit: int) -> list[Received]:
        """Up to ``limit`` of the oldest events, for one write; they count
        as backlog until :meth:`stored_batch` or :meth:`failed_batch`."""
        with self._lock:
            if self._writing:
                raise RuntimeError("the previous batch was neither stored nor failed")
            batch = [self._items.popleft() for _ in range(min(limit, len(self._items)))]
            self._writing = len(batch)
            return batch

    def stored_batch(self) -> None:
        """The batch :meth:`take` gave is in the database."""
        with self._lock:
            self.stored += self._writing
            self._writing = 0

    def failed_batch(self, batch: list[Received]) -> None:
        """The batch :meth:`take` gave was not stored: back to the head, in order."""
        with self._lock:
            self._items.extendleft(reversed(batch))
            self._writing = 0
            self.write_errors += 1

    def backlog(self) -> int:
        """Events received and not stored yet."""
        with self._lock:
            return len(self._items) + self._writing

    def counts(self) -> tuple[int, int, int, int]:
        """``(received, stored, backlog, write_errors)``, taken together."""
        with self._lock:
            return (
                self.received,
                self.stored,
                len(self._items) + self._writing,
                self.write_errors,
            )


class Pacer:
    """At most ``rate`` events per second: a token bucket refilled by the
    clock that holds at most one tick's worth (at least one event), so an
    idle consumer does not save up a burst."""

    def __init__(self, rate: float, tick: float, clock: Callable[[], float]) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be more than 0 events per second: {rate}")
        self.rate = rate
        self.clock = clock
        self._cap = max(1.0, rate * tick)
        self._tokens = 0.0
        self._last = clock()

    def allowance(self) -> int:
        """How many events may be stored now."""
        now = self.clock()
        self._tokens = min(self._cap, self._tokens + (now - self._last) * self.rate)
        self._last = now
        return int(self._tokens)

    def spend(self, count: int) -> None:
        """``count`` events were stored."""
        self._tokens -= count


def current_rss_kb() -> int:
    """Resident set size of this process (the engine's), KiB."""
    import psutil  # a harness dependency, installed beside the patched Salt

    return int(psutil.Process().memory_info().rss // 1024)


class Consumer:
    """The queue, the writer's pacing and the samples; the threads that drive
    them are :func:`start`'s. Clocks and stores are parameters so the logic
    runs without a master or a database."""

    def __init__(
        self,
        events: EventStore,
        samples: SampleStore,
        rate: float,
        *,
        tick: float = TICK,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        rss_kb: Callable[[], int] = current_rss_kb,
    ) -> None:
        self.queue = EventQueue()
        self.pacer = Pacer(rate, tick, clock)
        self.events = events
        self.samples = samples
        self.tick = tick
        self.clock = clock
        self.wall = wall
        self.rss_kb = rss_kb
        #: samples not written yet (a failed write keeps them for the next)
        self.unsent: list[Sample] = []

    def receive(self, tag: str, data: Any) -> None:
        """The reader got an event off the bus."""
        self.queue.put(Received(tag, data, self.wall()))

    def write_once(self) -> int:
        """Store what the pacer allows now; return how many events were
        stored, or -1 when the write failed (the events stay queued)."""
        allowed = self.pacer.allowance()
        if allowed <= 0:
            return 0
        batch = self.queue.take(allowed)
        if not batch:
            return 0
        try:
            self.events.write_events(batch)
        except StoreError:
            self.queue.failed_batch(batch)
            return -1
        self.queue.stored_batch()
        self.pacer.spend(len(batch))
        return len(batch)

    def sample(self) -> Sample:
        """Take a sample and write it with any earlier ones not written yet."""
        received, stored, backlog, errors = self.queue.counts()
        taken = Sample(self.wall(), received, stored, backlog, self.rss_kb(), errors)
        self.unsent.append(taken)
        try:
            self.samples.write_samples(self.unsent)
        except StoreError:
            return taken
        self.unsent = []
        return taken

    def run_writer(self, stop: threading.Event) -> None:
        """Write until ``stop`` is set: one batch per tick, a pause after a
        failed write."""
        failures = 0
        while not stop.is_set():
            began = self.clock()
            written = self.write_once()
            if written < 0:
                failures += 1
                if failures == 1 or failures % 60 == 0:
                    log.warning(
                        "saltfleet_consumer: storing events failed %d time(s); "
                        "%d events wait, none dropped",
                        failures,
                        self.queue.backlog(),
                    )
                stop.wait(RETRY_AFTER)
                continue
            stop.wait(max(0.0, self.tick - (self.clock() - began)))

    def run_sampler(self, stop: threading.Event, interval: float) -> None:
        """A sample every ``interval`` seconds until ``stop`` is set."""
        due = self.clock()
        while True:
            due += interval
            if stop.wait(max(0.0, due - self.clock())):
                return
            self.sample()


def event_text(data: Any) -> str:
    """``data`` as JSON for a ``jsonb`` column: what JSON lacks becomes its
    ``repr``, and NUL characters (which ``jsonb`` refuses) become U+FFFD."""
    text = json.dumps(data, default=repr)
    if "\\u0000" in text:
        text = json.dumps(_without_nul(json.loads(text)))
    return text


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


class PostgresStore:
    """Events and samples of the consumer ``name`` in PostgreSQL; one
    connection each, so use one store per thread."""

    def __init__(self, dsn: str, name: str) -> None:
        self.dsn = dsn
        self.name = name
        self._conn: Any = None

    def _connection(self) -> Any:
        import psycopg2

        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg2.connect(self.dsn, connect_timeout=5)
            except psycopg2.Error as exc:
                raise StoreError(f"cannot connect: {exc}".strip()) from exc
        return self._conn

    def _run(
        self,
        statement: str,
        rows: Iterable[tuple[Any, ...]],
        template: str | None = None,
    ) -> None:
        import psycopg2
        import psycopg2.extras

        conn = self._connection()
        try:
            with conn.cursor() as cur:
                psycopg2.extras.execute_values(
                    cur, statement, list(rows), template=template, page_size=1000
                )
            conn.commit()
        except psycopg2.Error as exc:
            self.close()
            raise StoreError(str(exc).strip()) from exc

    def create_tables(self) -> None:
        """Create the two tables when they are missing."""
        import psycopg2

        conn = self._connection()
        try:
            with conn.cursor() as cur:
                for statement in SCHEMA:
                    cur.execute(statement)
            conn.commit()
        except psycopg2.Error as exc:
            self.close()
            raise StoreError(str(exc).strip()) from exc

    def write_events(self, batch: list[Received]) -> None:
        """Store ``batch`` in one transaction."""
        self._run(
            "INSERT INTO consumer_event (consumer, tag, data, received_at) VALUES %s",
            ((self.name, item.tag, event_text(item.data), item.at) for item in batch),
            # received_at goes as epoch seconds
            "(%s, %s, %s::jsonb, to_timestamp(%s))",
        )

    def write_samples(self, samples: list[Sample]) -> None:
        """Store ``samples`` in one transaction."""
        self._run(
            "INSERT INTO consumer_sample (consumer, at, received, stored, backlog,"
            " rss_kb, write_errors) VALUES %s",
            (
                (
                    self.name,
                    s.at,
                    s.received,
                    s.stored,
                    s.backlog,
                    s.rss_kb,
                    s.write_errors,
                )
                for s in samples
            ),
        )

    def close(self) -> None:
        """Drop the connection; the next write opens a new one."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


def start_tag(name: str) -> str:
    """The event the consumer ``name`` fires once it reads the bus."""
    return f"saltfleet/consumer/{name}/start"


def _create_tables(store: PostgresStore) -> None:
    deadline = time.monotonic() + CONNECT_FOR
    while True:
        try:
            store.create_tables()
            return
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def start(
    dsn: str = "",
    rate: float = 150.0,
    name: str = "consumer",
    sample_interval: float = 1.0,
) -> None:
    """
    Consume the master's events until the master stops the engine.

    ``dsn`` is the PostgreSQL database (libpq connection string), ``rate``
    the events stored per second at most, ``name`` the consumer's name in
    both tables, ``sample_interval`` the seconds between samples.
    """
    import salt.utils.event

    if not dsn:
        raise ValueError("saltfleet_consumer needs dsn: a PostgreSQL connection string")
    if not float(sample_interval) > 0:
        raise ValueError(f"sample_interval must be more than 0: {sample_interval}")
    # Salt's loader injects __opts__ into the module's globals
    opts: dict[str, Any] = globals()["__opts__"]
    writer_store = PostgresStore(dsn, name)
    _create_tables(writer_store)
    consumer = Consumer(writer_store, PostgresStore(dsn, name), float(rate))
    stop = threading.Event()
    threads = [
        threading.Thread(
            target=consumer.run_writer,
            args=(stop,),
            name="consumer-writer",
            daemon=True,
        ),
        threading.Thread(
            target=consumer.run_sampler,
            args=(stop, float(sample_interval)),
            name="consumer-sampler",
            daemon=True,
        ),
    ]
    with salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True) as bus:
        bus.subscribe("")
        bus.connect_pub(timeout=30)
        for thread in threads:
            thread.start()
        # from here on no event is missed: the harness waits for this one
        bus.fire_event({"name": name, "rate": float(rate)}, start_tag(name))
        try:
            while True:
                event = bus.get_event(wait=1, full=True, auto_reconnect=True)
                if event is not None:
                    consumer.receive(event["tag"], event["data"])
        finally:
            stop.set()
