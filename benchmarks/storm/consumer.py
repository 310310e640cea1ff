"""The event consumer during one variant: its backlog and memory over the
storm, and whether the backlog stayed bounded.

The consumer (:mod:`harness.consumer`) stores every master event in
PostgreSQL at ``rate`` events per second at most; what it cannot store yet
waits in its memory. Its backlog is *bounded* during a storm when both hold:

- it never exceeds :data:`BOUND_S` seconds of the consumer's work
  (``rate x BOUND_S`` events), and
- it does not grow over the storm's second half: the least-squares trend of
  the samples taken then is at most :data:`TREND_SHARE` of the rate (in
  events per second).

The first catches a storm that floods it, the second one that is still
flooding it when it ends. Nothing here starts anything: it is all tested
with made-up samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from harness.consumer import ConsumerSample

#: seconds of the consumer's work its backlog may hold and still be bounded
BOUND_S: Final = 30.0
#: seconds after the storm's end a sample may be taken and still be its
#: end's: one sample interval
LATE_S: Final = 1.0
#: growth over the storm's second half still called flat, as a share of the
#: consumer's rate (events per second)
TREND_SHARE: Final = 0.05


@dataclass
class ConsumerPoint:
    """One sample, ``t`` seconds into the storm."""

    t: float
    received: int
    stored: int
    backlog: int
    rss_mb: float
    write_errors: int


@dataclass
class ConsumerRun:
    """What the consumer sampled during one variant's storm, and the events
    it had stored in its table when the storm ended."""

    rate: float
    points: list[ConsumerPoint] = field(default_factory=list)
    #: rows in ``consumer_event`` at the end; None: not counted
    rows_stored: int | None = None
    #: the storm's length, seconds: its second half is where the trend is taken
    storm_s: float = 0.0

    @classmethod
    def from_samples(
        cls,
        rate: float,
        samples: Sequence[ConsumerSample],
        started_at: float,
        storm_s: float,
        rows_stored: int | None = None,
    ) -> ConsumerRun:
        """The run from the engine's samples; ``started_at`` is the storm's
        start (epoch seconds). Samples before it are left out, and those
        taken more than :data:`LATE_S` after the storm's end (while the
        benchmark counted): the last one kept is the backlog at the end."""
        points = [
            ConsumerPoint(
                t=s.at - started_at,
                received=s.received,
                stored=s.stored,
                backlog=s.backlog,
                rss_mb=s.rss_kb / 1024,
                write_errors=s.write_errors,
            )
            for s in samples
            if started_at <= s.at <= started_at + storm_s + LATE_S
        ]
        return cls(rate, points, rows_stored, storm_s)

    @property
    def bound(self) -> float:
        """The most events a bounded backlog holds: BOUND_S s of work."""
        return self.rate * BOUND_S

    @property
    def flat_trend(self) -> float:
        """The most growth (events per second) still called flat."""
        return self.rate * TREND_SHARE

    @property
    def peak(self) -> ConsumerPoint | None:
        """The sample with the largest backlog (the first of equals)."""
        return max(self.points, key=lambda p: p.backlog, default=None)

    @property
    def final(self) -> ConsumerPoint | None:
        """The last sample."""
        return self.points[-1] if self.points else None

    @property
    def peak_rss_mb(self) -> float:
        """The consumer's highest RSS, MiB."""
        return max((p.rss_mb for p in self.points), default=0.0)

    @property
    def unaccounted(self) -> int:
        """Events received but neither stored nor waiting at the last sample."""
        last = self.final
        return last.received - last.stored - last.backlog if last else 0

    @property
    def missing_rows(self) -> int:
        """Events the last sample counts as stored that the table lacks
        (0 unless the consumer is broken; the rows were counted after it)."""
        last = self.final
        if last is None or self.rows_stored is None:
            return 0
        return max(0, last.stored - self.rows_stored)

    def trend(self) -> float | None:
        """The backlog's least-squares slope over the storm's second half,
        events per second; None with fewer than two samples there."""
        half = self.storm_s / 2
        points = [p for p in self.points if half <= p.t <= self.storm_s]
        return slope([(p.t, float(p.backlog)) for p in points])

    def event_rate(self) -> float | None:
        """Events per second the consumer received over the storm."""
        inside = [p for p in self.points if p.t <= self.storm_s]
        if len(inside) < 2 or inside[-1].t <= inside[0].t:
            return None
        return (inside[-1].received - inside[0].received) / (inside[-1].t - inside[0].t)

    def storm_needed_s(self) -> float | None:
        """How long the storm would have had to last for the consumer to
        end it with no more than :attr:`bound` events waiting, having
        received what it received; None without samples."""
        if not self.points:
            return None
        received = self.points[-1].received - self.points[0].received
        return max(0.0, received - self.bound) / self.rate

    def bounded(self) -> bool | None:
        """Whether the backlog stayed bounded (see the module); None without
        samples."""
        peak = self.peak
        if peak is None:
            return None
        trend = self.trend()
        return peak.backlog <= self.bound and (
            trend is None or trend <= self.flat_trend
        )


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of ``(x, y)`` points; None with fewer than two
    distinct x."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
