"""What a storm of the tour measured: its pings and its jobs' returns.

Plain data, apart from :mod:`tour.storm` that runs storms: the tour's context
keeps every storm's result for the scenarios after it and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ping:
    """One presence check during a storm: when, how long, how many answered."""

    at: float
    seconds: float
    asked: int
    answered: int


@dataclass
class StormResult:
    """What one storm did, seen from the master's event bus."""

    label: str
    jids: list[str]
    #: the minions every job targets
    targets: int
    #: returns received per job
    returns: dict[str, int]
    #: seconds from the first submission to each return, in arrival order
    return_times: list[float]
    seconds: float
    #: the most jobs one minion ever had waiting or running (its own count)
    peak_minion_jobs: int
    pings: list[Ping] = field(default_factory=list)
    #: rate-limiting outcomes of the storm's jobs (limiter on only)
    outcomes: dict[str, list[str]] = field(default_factory=dict)
    #: per job, the minions the limiter left out because they were at capacity
    excluded: dict[str, int] = field(default_factory=dict)

    def expected(self, jid: str) -> int:
        """Returns job ``jid`` should get: its targets minus the excluded."""
        return self.targets - self.excluded.get(jid, 0)

    @property
    def completed(self) -> int:
        """Jobs whose every expected return arrived."""
        return sum(self.returns.get(jid, 0) >= self.expected(jid) for jid in self.jids)

    @property
    def missing_returns(self) -> int:
        """Expected returns that did not arrive."""
        return sum(
            max(0, self.expected(jid) - self.returns.get(jid, 0)) for jid in self.jids
        )

    def ping_quantile(self, q: float) -> float:
        """The ``q`` quantile of presence-ping latency (0.0 without pings)."""
        values = sorted(p.seconds for p in self.pings)
        if not values:
            return 0.0
        return values[min(len(values) - 1, round(q * (len(values) - 1)))]

    @property
    def unanswered_pings(self) -> int:
        """Minions asked during the storm that did not answer in time."""
        return sum(p.asked - p.answered for p in self.pings)
