"""Locust's CSV files and the harness's samples, as a Markdown report.

Reading (:func:`read_locust`) and rendering (:func:`render`) are pure: a
test gives them files and values and checks the text. :func:`timeline_plot`
draws the PNG next to the report.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.load.failures import FailureKind, kind_of_error
from benchmarks.report import pyplot, table

AGGREGATED = "Aggregated"
#: failure kinds in the order the report lists them
KINDS = [kind.value for kind in FailureKind] + ["other"]


@dataclass(frozen=True)
class EndpointStats:
    """One row of locust's ``*_stats.csv``; times in milliseconds."""

    method: str
    name: str
    requests: int
    failures: int
    rps: float
    p50: float
    p95: float
    p99: float
    average_size: float


@dataclass(frozen=True)
class HistoryPoint:
    """One second of locust's ``*_stats_history.csv`` (aggregated row)."""

    t: float
    users: int
    rps: float
    failures_per_s: float
    p95: float | None


@dataclass
class LocustResult:
    """What one locust run measured."""

    endpoints: list[EndpointStats]
    total: EndpointStats | None
    failures: dict[str, int]
    failures_by_endpoint: dict[tuple[str, str], int]
    history: list[HistoryPoint]


@dataclass(frozen=True)
class ResourceSample:
    """One sample of the master's and salt-api's process trees and the fleet."""

    t: float
    master_cpu_pct: float
    master_pss_mb: float
    api_cpu_pct: float
    api_pss_mb: float
    returns_per_s: float


@dataclass(frozen=True)
class ApiCost:
    """The same async-job submissions through salt-api and through LocalClient."""

    submissions: int
    api_s: float
    local_s: float

    @property
    def ratio(self) -> float:
        """salt-api's time over LocalClient's for the same submissions."""
        return self.api_s / self.local_s if self.local_s else float("nan")


@dataclass
class VariantRun:
    """One stack, one locust run: the limiter ``off`` or ``on``."""

    name: str
    limiter: str
    locust: LocustResult
    samples: list[ResourceSample] = field(default_factory=list)
    cost: ApiCost | None = None
    html_report: str = ""


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:  # "N/A" before the first request
        return 0.0


def _endpoint(row: dict[str, str]) -> EndpointStats:
    return EndpointStats(
        method=row["Type"],
        name=row["Name"],
        requests=int(row["Request Count"]),
        failures=int(row["Failure Count"]),
        rps=_number(row["Requests/s"]),
        p50=_number(row["50%"]),
        p95=_number(row["95%"]),
        p99=_number(row["99%"]),
        average_size=_number(row["Average Content Size"]),
    )


def read_locust(prefix: Path) -> LocustResult:
    """Read ``PREFIX_stats.csv``, ``PREFIX_failures.csv`` and
    ``PREFIX_stats_history.csv`` as locust ``--csv PREFIX`` writes them."""
    stats = _rows(Path(f"{prefix}_stats.csv"))
    endpoints = [_endpoint(r) for r in stats if r["Name"] != AGGREGATED]
    total = next((_endpoint(r) for r in stats if r["Name"] == AGGREGATED), None)
    failures: dict[str, int] = {}
    by_endpoint: dict[tuple[str, str], int] = {}
    for row in _rows(Path(f"{prefix}_failures.csv")):
        kind = kind_of_error(row["Error"])
        count = int(row["Occurrences"])
        failures[kind] = failures.get(kind, 0) + count
        key = (row["Name"], kind)
        by_endpoint[key] = by_endpoint.get(key, 0) + count
    history = [
        HistoryPoint(
            t=float(r["Timestamp"]),
            users=int(r["User Count"]),
            rps=_number(r["Requests/s"]),
            failures_per_s=_number(r["Failures/s"]),
            p95=None if r["95%"] in ("N/A", "0") else float(r["95%"]),
        )
        for r in _rows(Path(f"{prefix}_stats_history.csv"))
        if r["Name"] == AGGREGATED
    ]
    return LocustResult(endpoints, total, failures, by_endpoint, history)


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _ms(value: float) -> str:
    return f"{value:.0f}"


def endpoints_table(runs: Sequence[VariantRun]) -> str:
    """Requests/s and p50/p95/p99 per endpoint, variants side by side."""
    names = sorted({e.name for run in runs for e in run.locust.endpoints})
    rows = []
    for name in names:
        for run in runs:
            found = [e for e in run.locust.endpoints if e.name == name]
            if not found:
                continue
            e = found[0]
            rows.append(
                [
                    f"`{name}`",
                    run.name,
                    e.requests,
                    f"{e.rps:.2f}",
                    _ms(e.p50),
                    _ms(e.p95),
                    _ms(e.p99),
                    e.failures,
                ]
            )
    headers = ["endpoint", "limiter", "requests", "req/s", "p50 ms", "p95 ms"]
    return table([*headers, "p99 ms", "failures"], rows)


def failures_table(runs: Sequence[VariantRun]) -> str:
    """Failures by kind, one column per variant; kinds never seen left out."""
    seen = [k for k in KINDS if any(run.locust.failures.get(k) for run in runs)]
    if not seen:
        return "No request failed."
    rows = [[k, *(run.locust.failures.get(k, 0) for run in runs)] for k in seen]
    return table(["kind", *(run.name for run in runs)], rows)


def failures_by_endpoint_table(runs: Sequence[VariantRun]) -> str:
    """Failures per endpoint and kind; empty when nothing failed."""
    rows = [
        [f"`{name}`", kind, run.name, count]
        for run in runs
        for (name, kind), count in sorted(run.locust.failures_by_endpoint.items())
    ]
    return table(["endpoint", "kind", "limiter", "failures"], rows) if rows else ""


def _peak(values: Sequence[float]) -> float:
    return max(values, default=0.0)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def resources_table(runs: Sequence[VariantRun]) -> str:
    """CPU (mean / peak, % of one core), peak PSS and the fleet's returns/s."""
    rows = []
    for run in runs:
        s = run.samples
        master_cpu = [x.master_cpu_pct for x in s]
        api_cpu = [x.api_cpu_pct for x in s]
        returns = [x.returns_per_s for x in s]
        rows.append(
            [
                run.name,
                f"{_mean(master_cpu):.0f} / {_peak(master_cpu):.0f}",
                f"{_peak([x.master_pss_mb for x in s]):.0f}",
                f"{_mean(api_cpu):.0f} / {_peak(api_cpu):.0f}",
                f"{_peak([x.api_pss_mb for x in s]):.0f}",
                f"{_mean(returns):.1f} / {_peak(returns):.1f}",
                len(s),
            ]
        )
    headers = [
        "limiter",
        "master CPU % mean / peak",
        "master PSS MiB peak",
        "salt-api CPU % mean / peak",
        "salt-api PSS MiB peak",
        "fleet returns/s mean / peak",
    ]
    return table([*headers, "samples"], rows)


def cost_table(runs: Sequence[VariantRun]) -> str:
    """The salt-api vs LocalClient submissions, one row per variant."""
    rows = []
    for run in runs:
        c = run.cost
        if c is None:
            continue
        rows.append(
            [
                run.name,
                c.submissions,
                f"{c.api_s:.2f}",
                f"{c.local_s:.2f}",
                f"{c.api_s / c.submissions * 1000:.1f}",
                f"{c.local_s / c.submissions * 1000:.1f}",
                f"{c.ratio:.2f}",
            ]
        )
    if not rows:
        return "Not measured in this run."
    headers = ["limiter", "submissions", "salt-api s", "LocalClient s"]
    return table([*headers, "salt-api ms/job", "LocalClient ms/job", "ratio"], rows)


@dataclass(frozen=True)
class ReportContext:
    """What the report says about how it was made."""

    title: str
    command: str
    environment: str
    setup: list[str]
    plot: str | None = None


PRESENCE = "local test.ping [presence]"
#: the issue's goals for the limiter-on run: failures other than its own 503
#: at most this share of all requests ...
OTHER_FAILURES_MAX = 0.01
#: ... and presence checks answered in full within their timeout, at least
PRESENCE_ANSWERED_MIN = 0.99


def goal_lines(runs: Sequence[VariantRun]) -> list[str]:
    """The goals of the limiter-on run, off's numbers beside them. No goal
    divides one variant's response time by another's: a check that failed
    has the time of its timeout, not of an answer."""
    by_name = {run.name: run for run in runs}
    on, off = by_name.get("on"), by_name.get("off")
    if on is None:
        return ["- the goals are the limiter-on run's: run it (--variants on or both)"]
    return [_failures_goal(on, off), _presence_goal(on, off)]


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "-"


def _other_failures(run: VariantRun) -> tuple[int, int, str]:
    """Failures other than ``overloaded``, all requests, and the kinds."""
    other = {k: n for k, n in run.locust.failures.items() if k != "overloaded"}
    total = run.locust.total.requests if run.locust.total else 0
    total = total or sum(e.requests for e in run.locust.endpoints)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(other.items())) or "none"
    return sum(other.values()), total, kinds


def _failures_goal(on: VariantRun, off: VariantRun | None) -> str:
    failed, total, kinds = _other_failures(on)
    if not total:
        return "- failures other than the limiter's 503: no requests, not measured"
    share = failed / total
    verdict = (
        "met"
        if share <= OTHER_FAILURES_MAX
        else f"missed by {100 * (share - OTHER_FAILURES_MAX):.2f} points"
    )
    line = (
        f"- failures other than the limiter's own 503 with the limiter on: "
        f"{failed} of {total} requests ({_percent(failed, total)}: {kinds}), "
        f"goal <= {100 * OTHER_FAILURES_MAX:g} %: {verdict}"
    )
    if off is not None:
        off_failed, off_total, off_kinds = _other_failures(off)
        line += (
            f" (off: {off_failed} of {off_total}, {_percent(off_failed, off_total)}: "
            f"{off_kinds})"
        )
    return line


def _presence(run: VariantRun) -> EndpointStats | None:
    return next((e for e in run.locust.endpoints if e.name == PRESENCE), None)


def _presence_words(stats: EndpointStats) -> str:
    answered = stats.requests - stats.failures
    return (
        f"{answered} of {stats.requests} ({_percent(answered, stats.requests)}; "
        f"every request p50 / p99 {stats.p50:.0f} / {stats.p99:.0f} ms)"
    )


def _presence_goal(on: VariantRun, off: VariantRun | None) -> str:
    stats = _presence(on)
    if stats is None or not stats.requests:
        return "- presence checks answered: no presence checks with the limiter on"
    share = (stats.requests - stats.failures) / stats.requests
    verdict = (
        "met"
        if share >= PRESENCE_ANSWERED_MIN
        else f"missed by {100 * (PRESENCE_ANSWERED_MIN - share):.2f} points"
    )
    off_stats = _presence(off) if off is not None else None
    return (
        "- presence checks answered in full within their timeout with the "
        f"limiter on: {_presence_words(stats)}, goal >= "
        f"{100 * PRESENCE_ANSWERED_MIN:g} %: {verdict}"
        + (f" (off: {_presence_words(off_stats)})" if off_stats else "")
        + "; a failed check's time is that of its time-out or error, so the "
        "p99s are not compared as a ratio"
    )


def render(context: ReportContext, runs: Sequence[VariantRun]) -> str:
    """The whole Markdown report."""
    parts = [
        f"# {context.title}",
        f"Regenerate: `{context.command}`",
        context.environment,
        "## Setup",
        "\n".join(f"- {line}" for line in context.setup),
        "## Requests per endpoint",
        "Response times from locust (ms, client side, including salt-api). "
        "`/events [window]` is one bounded read of the event stream: its "
        "time is the window, its size column in locust's CSV the events read.",
        endpoints_table(runs),
        "## Failures by kind",
        "`overloaded` is the master refusing a job for load "
        '(`SaltMasterOverloadedError`, HTTP 503 "Salt master overloaded, retry '
        'later"), counted apart from `timeout` (504 or no answer in time) and '
        "`server_error` (500); `incomplete` is a 200 in which some targeted "
        "minions did not return.",
        failures_table(runs),
    ]
    by_endpoint = failures_by_endpoint_table(runs)
    if by_endpoint:
        parts.append(by_endpoint)
    parts += [
        "## Master and salt-api",
        "Sampled once a second over each process tree (CPU in % of one core).",
        resources_table(runs),
    ]
    if context.plot:
        parts.append(f"![timeline]({context.plot})")
    parts += [
        "## Cost of salt-api",
        "The same `local_async test.ping` submissions to one minion, one "
        "after the other: through salt-api (HTTP, token auth, JSON) and "
        "through `LocalClient.run_job` in the harness; ratio = salt-api / "
        "LocalClient.",
        cost_table(runs),
    ]
    parts += ["## Goals", "\n".join(goal_lines(runs))]
    reports = [f"`{run.html_report}`" for run in runs if run.html_report]
    if reports:
        parts.append("Locust's own HTML reports: " + ", ".join(reports) + ".")
    return "\n\n".join(parts) + "\n"


def timeline_plot(runs: Sequence[VariantRun], path: Path) -> Path:
    """Users and req/s, failures/s, master + salt-api CPU and the fleet's
    returns/s over time, one line per variant."""
    plt = pyplot()

    fig, axes = plt.subplots(4, 1, figsize=(9, 11), dpi=100, sharex=True)
    for index, run in enumerate(runs):
        color = f"C{index}"  # one colour per variant in every panel
        h = run.locust.history
        start = h[0].t if h else 0.0
        seconds = [p.t - start for p in h]
        axes[0].plot(
            seconds, [p.rps for p in h], color=color, label=f"{run.name} req/s"
        )
        axes[0].plot(
            seconds, [p.users for p in h], "--", color=color, label=f"{run.name} users"
        )
        axes[1].plot(
            seconds, [p.failures_per_s for p in h], color=color, label=run.name
        )
        ts = [s.t for s in run.samples]
        axes[2].plot(
            ts,
            [s.master_cpu_pct for s in run.samples],
            color=color,
            label=f"{run.name} master",
        )
        axes[2].plot(
            ts,
            [s.api_cpu_pct for s in run.samples],
            ":",
            color=color,
            label=f"{run.name} salt-api",
        )
        axes[3].plot(
            ts, [s.returns_per_s for s in run.samples], color=color, label=run.name
        )
    titles = [
        "requests/s and users",
        "failures/s",
        "CPU % (of one core)",
        "fleet returns/s",
    ]
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    axes[-1].set_xlabel("seconds since the load started")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
