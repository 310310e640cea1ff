"""The tour's plots (matplotlib, Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tour.storm_result import StormResult

COLOURS = {"off": "tab:red", "on": "tab:blue"}


def _figure() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    return fig, ax


def _finish(fig: Any, ax: Any, path: Path, *, ylabel: str, title: str) -> Path:
    """Label the axes of a storm plot, save it as ``path``, close it."""
    import matplotlib.pyplot as plt

    ax.set_xlabel("seconds since the storm began")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def ping_latency(path: Path, storms: list[StormResult]) -> Path:
    """Presence-ping latency over the storm, one line per storm."""
    fig, ax = _figure()
    for storm in storms:
        ax.plot(
            [p.at for p in storm.pings],
            [p.seconds for p in storm.pings],
            marker="o",
            markersize=3,
            color=COLOURS.get(storm.label),
            label=f"limiter {storm.label}",
        )
    return _finish(
        fig,
        ax,
        path,
        ylabel="test.ping latency (s)",
        title="Presence pings during the storm",
    )


def returns_over_time(path: Path, storms: list[StormResult]) -> Path:
    """Job returns received over the storm, cumulative, one line per storm."""
    fig, ax = _figure()
    for storm in storms:
        times = sorted(storm.return_times)
        ax.step(
            times,
            range(1, len(times) + 1),
            where="post",
            color=COLOURS.get(storm.label),
            label=f"limiter {storm.label}",
        )
    total = storms[0].targets * len(storms[0].jids) if storms else 0
    ax.axhline(total, color="grey", linestyle=":", label="every return")
    return _finish(
        fig, ax, path, ylabel="returns received", title="Job returns during the storm"
    )
