"""The micro-benchmark of one decision of the shipped criteria module.

``capacity.decide(job, ledger)`` for one job to the whole fleet, loaded
through Salt's loader as the queue manager loads it, and checked with
``check_decision`` as the queue manager checks it, against four ledgers.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import report
from harness.ratelimit import RateLimiting

#: percentiles the report's data file keeps per case
SUMMARY_PERCENTILES = (50, 90, 99, 100)


@dataclass
class DecideResult:
    """One ledger case: the decision taken and each call's time, in microseconds."""

    case: str
    decision: str
    samples_us: list[float]

    def summary(self) -> dict[str, Any]:
        """The case, its decision, how many calls and their percentiles."""
        return {
            "case": self.case,
            "decision": self.decision,
            "calls": len(self.samples_us),
            **{
                f"p{pct}_us": report.percentile(self.samples_us, pct)
                for pct in SUMMARY_PERCENTILES
            },
        }


def decide_benchmark(minions: int, calls: int) -> list[DecideResult]:
    """Time one decision of the ``capacity`` criteria module (loaded through
    Salt's loader, as the queue manager loads it) for a job to ``minions``."""
    import salt.ratelimit.criteria as criteria
    from salt.ratelimit.job import QueuedJob
    from salt.ratelimit.ledger import CapacityLedger

    from harness.fleet import minion_ids
    from harness.master import in_process_opts

    limits = RateLimiting()
    with tempfile.TemporaryDirectory(prefix="saltfleet-decide-") as tmp:
        decide = criteria.load_decide(in_process_opts(Path(tmp)), limits.criteria)
    ids = minion_ids("evil", minions)
    job = QueuedJob("20261122000000000000", {"fun": "state.apply"}, ids, time.time())

    def ledger(in_flight: int, saturated: int) -> CapacityLedger:
        state = CapacityLedger(limits.max_master_jobs, limits.max_minion_jobs)
        for n in range(in_flight):
            state.acquire(f"flight-{n}", ids, 0.0)
        for n in range(limits.max_minion_jobs):
            state.acquire(f"busy-{n}", ids[:saturated], 0.0)
        return state

    cases = [
        ("nothing in flight", ledger(0, 0)),
        ("one job to all in flight", ledger(1, 0)),
        ("master full", ledger(max(1, limits.max_master_jobs // minions), 0)),
        (f"{minions // 10} minions saturated", ledger(0, minions // 10)),
    ]
    results = []
    for case, state in cases:
        decision = criteria.check_decision(decide(job, state))
        samples = []
        for _ in range(calls):
            began = time.perf_counter_ns()
            criteria.check_decision(decide(job, state))
            samples.append((time.perf_counter_ns() - began) / 1000)
        label = decision.action + (
            f" (excluding {len(decision.exclude)})" if decision.exclude else ""
        )
        results.append(DecideResult(case, label, samples))
    return results
