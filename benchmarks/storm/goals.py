"""The issue's goals for the storm, each with its verdict."""

from __future__ import annotations

from typing import Any, Final

from benchmarks import report
from benchmarks.storm.accounting import VariantResult
from benchmarks.storm.decide import DecideResult
from harness.ratelimit import RateLimiting

#: goals with the limiter on
GOAL_PING_P99_S: Final = 2.0
GOAL_DECIDE_US: Final = 50.0


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def goal_lines(
    results: list[VariantResult],
    limits: RateLimiting,
    decisions: list[DecideResult],
) -> list[Any]:
    """The issue's goals for the limiter-on variant, each with its verdict."""
    lines: list[Any] = [
        "## Goals (limiter on)",
        "",
    ]
    on = next((r for r in results if r.name == "on"), None)
    if on is not None:
        lost = on.missing_returns
        rss = [s.master_rss_mb for s in on.samples]
        lines += [
            f"- no minion over its capacity: at most {on.peak_minion_jobs} jobs "
            f"on one minion <= {limits.max_minion_jobs} (the queue manager's "
            f"ledger: at most {on.max_minion_points} points on one minion): "
            + _verdict(on.peak_minion_jobs <= limits.max_minion_jobs),
            f"- bounded master RSS: peak {on.peak_rss_mb:.0f} MiB, at end "
            f"{rss[-1] if rss else 0:.0f} MiB (see the plot)",
            (
                f"- returns lost for published jobs: not known, the run was cut "
                f"with {lost} returns missing"
                if on.cut
                else f"- returns lost for published jobs: {lost}: "
                + _verdict(lost == 0)
            ),
            (
                f"- presence ping p99 {on.ping_p99:.2f} s <= {GOAL_PING_P99_S:g} s: "
                + _verdict(on.ping_p99 <= GOAL_PING_P99_S)
                if on.pings
                else "- presence ping: none was sent, the storm ended too soon"
            ),
        ]
    worst = max(report.percentile(d.samples_us, 99) for d in decisions)
    lines.append(
        f"- one decision: worst p99 {worst:.1f} us <= {GOAL_DECIDE_US:g} us: "
        + _verdict(worst <= GOAL_DECIDE_US)
    )
    return lines
