"""A consumer of the master's events that stores each in PostgreSQL at a
bounded rate, as SUSE Manager does: the load the rate limiter exists for.

The consumer is the ``saltfleet_consumer`` master engine
(``harness/salt_ext/engines``). This module is the harness's side of it:

- :class:`ConsumerSettings` turns it on (``StackSettings.consumer``) and
  renders its entry in the master's ``engines``, pointed at the stack's
  database;
- :func:`read_samples` reads what it sampled once a second (events received,
  stored, waiting, its RSS) and :func:`stored_events` counts the events it
  stored.

.. code-block:: python

    with Stack(StackSettings(consumer=ConsumerSettings(rate=150))) as stack:
        ...
        samples = read_samples(stack.pg, "consumer")
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from harness.errors import HarnessError
from harness.salt_ext.engines.saltfleet_consumer import Sample as ConsumerSample
from harness.salt_ext.engines.saltfleet_consumer import start_tag

if TYPE_CHECKING:
    from harness.postgres import ConnectionInfo

ENGINE_NAME: Final = "saltfleet_consumer"

__all__ = [
    "ENGINE_NAME",
    "ConsumerSample",
    "ConsumerSettings",
    "read_samples",
    "samples_from_rows",
    "stored_events",
]


@dataclass(frozen=True)
class ConsumerSettings:
    """How the consumer engine runs: ``rate`` events stored per second at
    most, a sample every ``sample_interval`` seconds, its rows in both tables
    under ``name``."""

    rate: float = 150.0
    name: str = "consumer"
    sample_interval: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate) and self.rate > 0):
            raise HarnessError(
                f"consumer rate must be more than 0 events per second: {self.rate}"
            )
        if not (math.isfinite(self.sample_interval) and self.sample_interval > 0):
            raise HarnessError(
                "consumer sample interval must be more than 0 seconds: "
                f"{self.sample_interval}"
            )
        if not self.name:
            raise HarnessError("consumer name must not be empty")

    @property
    def start_tag(self) -> str:
        """The event the engine fires once it reads the bus."""
        return start_tag(self.name)

    def engine(self, dsn: str) -> dict[str, Any]:
        """The consumer's item of the master's ``engines`` list."""
        return {
            ENGINE_NAME: {
                "dsn": dsn,
                "rate": self.rate,
                "name": self.name,
                "sample_interval": self.sample_interval,
            }
        }


def samples_from_rows(rows: Iterable[Sequence[Any]]) -> list[ConsumerSample]:
    """``consumer_sample`` rows ``(at, received, stored, backlog, rss_kb,
    write_errors)`` as samples, oldest first."""
    samples = [
        ConsumerSample(
            float(at), int(received), int(stored), int(backlog), int(rss), int(errors)
        )
        for at, received, stored, backlog, rss, errors in rows
    ]
    return sorted(samples, key=lambda s: s.at)


def read_samples(
    info: ConnectionInfo, name: str, since: float = 0.0
) -> list[ConsumerSample]:
    """The samples of consumer ``name`` taken at or after ``since`` (epoch
    seconds), oldest first; none when the consumer never wrote one."""
    with _cursor(info) as cur:
        if not _table_exists(cur, "consumer_sample"):
            return []
        cur.execute(
            "SELECT at, received, stored, backlog, rss_kb, write_errors "
            "FROM consumer_sample WHERE consumer = %s AND at >= %s ORDER BY at",
            (name, since),
        )
        return samples_from_rows(cur.fetchall())


def stored_events(info: ConnectionInfo, name: str) -> int:
    """Events consumer ``name`` stored in ``consumer_event``."""
    with _cursor(info) as cur:
        if not _table_exists(cur, "consumer_event"):
            return 0
        cur.execute("SELECT count(*) FROM consumer_event WHERE consumer = %s", (name,))
        return int(cur.fetchone()[0])


@contextlib.contextmanager
def _cursor(info: ConnectionInfo) -> Iterator[Any]:
    """A cursor on a connection of its own, closed after the block."""
    conn = info.connect()
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


def _table_exists(cur: Any, table: str) -> bool:
    cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
    return bool(cur.fetchone()[0])
