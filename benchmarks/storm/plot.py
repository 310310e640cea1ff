"""The storm's plots, one line per variant: the timeline (the panels over
time and the presence pings) as ``results/<name>-timeline.png``, and the
event consumer's backlog and memory as ``results/<name>-consumer.png``; with
more than one run, every run's headline measures as
``results/<name>-runs.png``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import report
from benchmarks.storm.accounting import PING_TIMEOUT, Sample, VariantResult, whole_runs
from benchmarks.storm.consumer import BOUND_S, ConsumerPoint

#: the panels over time: y label and the value of one sample (None: no point)
PANELS: Final[tuple[tuple[str, Callable[[Sample], float | None]], ...]] = (
    ("master PSS (MiB)", lambda s: s.master_pss_mb),
    ("jobs in flight", lambda s: s.in_flight),
    ("jobs queued", lambda s: max(0, s.queued)),
    ("points held (ledger)", lambda s: s.master_points),
    ("limiter budget (points)", lambda s: s.budget if s.budget > 0 else None),
    ("returns / s (bus)", lambda s: s.returns_per_s),
    ("returns / s, jobs whose\nsubmission failed (bus)", lambda s: s.unbooked_per_s),
    ("bus delay of returns (s)", lambda s: s.bus_delay_s),
    ("limiter: wait of returns\npast their run time (s)", lambda s: s.limiter_delay_s),
)


def timeline_plot(results: list[VariantResult], name: str) -> Path:
    """The panels and the pings, saved as ``results/<name>-timeline.png``."""
    plt = report.pyplot()

    fig, axes = plt.subplots(
        len(PANELS) + 1, 1, figsize=(9, 2 * (len(PANELS) + 1)), dpi=100, sharex=True
    )
    for ax, (title, value) in zip(axes[:-1], PANELS, strict=True):
        _panel(ax, title, value, results)
    _pings_panel(axes[-1], results)
    axes[0].legend()
    axes[0].set_title(
        "Storm of jobs to every minion: rate limiting "
        + " vs ".join(r.name for r in results)
    )
    return report.save_figure(fig, f"{name}-timeline")


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
            ax.plot(xs, ys, label=r.name, linewidth=1)
    ax.set_ylabel(title, fontsize=8)
    ax.grid(alpha=0.3)


def _pings_panel(ax: Any, results: list[VariantResult]) -> None:
    for r in results:
        if r.pings:
            ax.scatter(
                [p.t for p in r.pings],
                [PING_TIMEOUT if p.bus_s is None else p.bus_s for p in r.pings],
                s=4,
                label=r.name,
            )
    # a ping above this line was answered late, one on it never got every
    # return: the headline counts both as not answered
    ax.axhline(
        PING_TIMEOUT,
        color="grey",
        linestyle="--",
        linewidth=0.8,
        label=f"timeout ({PING_TIMEOUT} s)",
    )
    ax.set_ylabel("presence ping (s)", fontsize=8)
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_xlabel("seconds since the storm began")


#: the consumer's panels: y label and the value of one sample
CONSUMER_PANELS: Final[tuple[tuple[str, Callable[[ConsumerPoint], float]], ...]] = (
    ("consumer backlog (events)", lambda p: p.backlog),
    ("consumer RSS (MiB)", lambda p: p.rss_mb),
    ("events received (total)", lambda p: p.received),
    ("events stored (total)", lambda p: p.stored),
)


def consumer_plot(results: list[VariantResult], name: str) -> Path:
    """The consumer's backlog, memory and counts over time, saved as
    ``results/<name>-consumer.png``; the backlog panel marks the bound."""
    plt = report.pyplot()

    fig, axes = plt.subplots(
        len(CONSUMER_PANELS), 1, figsize=(9, 10), dpi=100, sharex=True
    )
    for ax, (title, value) in zip(axes, CONSUMER_PANELS, strict=True):
        for r in results:
            if r.consumer and r.consumer.points:
                points = r.consumer.points
                ax.plot(
                    [p.t for p in points],
                    [value(p) for p in points],
                    label=r.name,
                    linewidth=1,
                )
        ax.set_ylabel(title, fontsize=8)
        ax.grid(alpha=0.3)
    bound = next((r.consumer.bound for r in results if r.consumer), None)
    if bound is not None:
        axes[0].axhline(
            bound,
            color="grey",
            linestyle="--",
            linewidth=0.8,
            label=f"bound: {BOUND_S:g} s of the consumer's work",
        )
    axes[0].legend()
    axes[0].set_title(
        "Event consumer (stores every event at a bounded rate): rate limiting "
        + " vs ".join(r.name for r in results)
    )
    axes[-1].set_xlabel("seconds since the storm began")
    return report.save_figure(fig, f"{name}-consumer")


#: a headline measure: its name and its value in one run (None: not measured)
Measure = tuple[str, Callable[[VariantResult], float | None]]


def runs_plot(
    results: list[VariantResult], measures: Sequence[Measure], name: str
) -> Path:
    """One panel per measure, a dot per run of each variant labelled with
    its run and a bar at the variant's median, saved as
    ``results/<name>-runs.png``: the spread behind the headline's medians.
    Runs cut by ``--max-wait`` are left out, as the headline leaves them."""
    plt = report.pyplot()

    names = list(dict.fromkeys(r.name for r in results))
    columns = 2
    rows = -(-len(measures) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(9, 2.6 * rows), dpi=100, squeeze=False
    )
    flat = list(axes.flat)
    for ax, (title, value) in zip(flat, measures, strict=False):
        drawn = False
        for x, variant in enumerate(names):
            points = whole_runs(results, variant, value)
            if not points:
                continue
            drawn = True
            ax.scatter([x] * len(points), [v for _, v in points], s=18, zorder=3)
            for run, v in points:
                ax.annotate(
                    f"#{run}",
                    (x, v),
                    xytext=(5, 0),
                    textcoords="offset points",
                    fontsize=7,
                    va="center",
                )
            middle = report.median([v for _, v in points])
            ax.hlines(middle, x - 0.25, x + 0.25, color="black", linewidth=1.5)
        if not drawn:
            ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center")
            ax.set_yticks([])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_ylabel(title, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in flat[len(measures) :]:
        ax.set_visible(False)
    fig.suptitle("Storm headline measures, every run (bar: median)")
    return report.save_figure(fig, f"{name}-runs")
