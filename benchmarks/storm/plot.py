"""The storm's timeline: six panels over time and the presence pings, one
line per variant, as ``results/<name>-timeline.png``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from benchmarks import report
from benchmarks.storm.accounting import Sample, VariantResult
from benchmarks.storm.goals import GOAL_PING_P99_S

#: the panels over time: y label and the value of one sample (None: no point)
PANELS: Final[tuple[tuple[str, Callable[[Sample], float | None]], ...]] = (
    ("master RSS (MiB)", lambda s: s.master_rss_mb),
    ("jobs in flight", lambda s: s.in_flight),
    ("jobs queued", lambda s: max(0, s.queued)),
    ("points held (ledger)", lambda s: s.master_points),
    ("returns / s (bus)", lambda s: s.returns_per_s),
    ("bus delay of returns (s)", lambda s: s.bus_delay_s),
)


def timeline_plot(results: list[VariantResult], name: str) -> Path:
    """The panels and the pings, saved as ``results/<name>-timeline.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(PANELS) + 1, 1, figsize=(9, 16), dpi=100, sharex=True)
    for ax, (title, value) in zip(axes[:-1], PANELS, strict=True):
        _panel(ax, title, value, results)
    _pings_panel(axes[-1], results)
    axes[0].legend()
    axes[0].set_title(
        "Storm of jobs to every minion: rate limiting "
        + " vs ".join(r.name for r in results)
    )
    fig.tight_layout()
    report.RESULTS.mkdir(parents=True, exist_ok=True)
    path = report.RESULTS / f"{name}-timeline.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _panel(
    ax: Any,
    title: str,
    value: Callable[[Sample], float | None],
    results: list[VariantResult],
) -> None:
    for r in results:
        points = [(s.t, value(s)) for s in r.samples if value(s) is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, label=f"limiter {r.name}", linewidth=1)
    ax.set_ylabel(title, fontsize=8)
    ax.grid(alpha=0.3)


def _pings_panel(ax: Any, results: list[VariantResult]) -> None:
    for r in results:
        if r.pings:
            ax.scatter(
                [p.t for p in r.pings],
                [p.seconds for p in r.pings],
                s=4,
                label=f"limiter {r.name}",
            )
    ax.axhline(GOAL_PING_P99_S, color="grey", linestyle="--", linewidth=0.8)
    ax.set_ylabel("presence ping (s)", fontsize=8)
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_xlabel("seconds since the storm began")
