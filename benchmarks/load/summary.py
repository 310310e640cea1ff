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

from benchmarks.hostspeed import probe_cell, probe_words
from benchmarks.load.failures import FailureKind, kind_of_error
from benchmarks.report import median, pyplot, shown_path, table
from harness.ratelimit import LimiterState

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
    #: the limiter-on master's queue manager (None: no limiter)
    limiter: LimiterState | None = None


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
    #: why the cost was not measured when it was asked for (the master did
    #: not answer salt-api's login after the load, say); the run still counts
    cost_error: str = ""
    html_report: str = ""
    #: which run of the load this is, from 1
    run: int = 1
    #: :func:`benchmarks.hostspeed.cpu_probe_ms` on the idle box before the
    #: run's stack started and after it stopped (0: not taken)
    cpu_probe_before_ms: float = 0.0
    cpu_probe_after_ms: float = 0.0

    @property
    def label(self) -> str:
        """The variant and its run, as the report's rows name them."""
        return f"{self.name} #{self.run}"


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
                    run.label,
                    e.requests,
                    f"{e.rps:.2f}",
                    _ms(e.p50),
                    _ms(e.p95),
                    _ms(e.p99),
                    e.failures,
                ]
            )
    headers = ["endpoint", "variant", "requests", "req/s", "p50 ms", "p95 ms"]
    return table([*headers, "p99 ms", "failures"], rows)


def failures_table(runs: Sequence[VariantRun]) -> str:
    """Failures by kind, one column per variant; kinds never seen left out."""
    seen = [k for k in KINDS if any(run.locust.failures.get(k) for run in runs)]
    if not seen:
        return "No request failed."
    rows = [[k, *(run.locust.failures.get(k, 0) for run in runs)] for k in seen]
    return table(["kind", *(run.label for run in runs)], rows)


def failures_by_endpoint_table(runs: Sequence[VariantRun]) -> str:
    """Failures per endpoint and kind; empty when nothing failed."""
    rows = [
        [f"`{name}`", kind, run.label, count]
        for run in runs
        for (name, kind), count in sorted(run.locust.failures_by_endpoint.items())
    ]
    return table(["endpoint", "kind", "variant", "failures"], rows) if rows else ""


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
                run.label,
                f"{_mean(master_cpu):.0f} / {_peak(master_cpu):.0f}",
                f"{_peak([x.master_pss_mb for x in s]):.0f}",
                f"{_mean(api_cpu):.0f} / {_peak(api_cpu):.0f}",
                f"{_peak([x.api_pss_mb for x in s]):.0f}",
                f"{_mean(returns):.1f} / {_peak(returns):.1f}",
                len(s),
                probe_cell(run.cpu_probe_before_ms, run.cpu_probe_after_ms),
            ]
        )
    headers = [
        "variant",
        "master CPU % mean / peak",
        "master PSS MiB peak",
        "salt-api CPU % mean / peak",
        "salt-api PSS MiB peak",
        "fleet returns/s mean / peak",
    ]
    return table([*headers, "samples", "box probe ms before / after"], rows)


def _answered_at(run: VariantRun) -> list[tuple[float, LimiterState]]:
    """The limiter samples of ``run`` the queue manager answered, with when."""
    return [
        (s.t, s.limiter)
        for s in run.samples
        if s.limiter is not None and s.limiter.budget >= 0
    ]


def _answered(run: VariantRun) -> list[LimiterState]:
    """The limiter samples of ``run`` the queue manager answered."""
    return [state for _, state in _answered_at(run)]


def limiter_table(runs: Sequence[VariantRun]) -> str:
    """The limiter-on runs' budget, points in flight, queue and cuts over
    the load; empty when no run sampled a limiter."""
    rows = []
    for run in runs:
        states = _answered(run)
        if not states:
            continue
        budgets = sorted(state.budget for state in states)
        points = [state.points for state in states]
        delays = [state.delay for state in states if state.delay is not None]
        sampled = sum(1 for s in run.samples if s.limiter is not None)
        rows.append(
            [
                run.label,
                f"{budgets[0]} / {median(budgets):.0f} / {budgets[-1]}",
                f"{median(points):.0f} / {max(points)}",
                max(state.queued for state in states),
                max(state.cuts for state in states),
                f"{median(delays):.2f} / {max(delays):.2f}" if delays else "-",
                f"{len(states)} of {sampled}",
            ]
        )
    if not rows:
        return ""
    headers = [
        "variant",
        "budget min / median / max",
        "points in flight median / peak",
        "jobs queued peak",
        "budget cuts",
        "measured wait s median / max",
        "samples answered",
    ]
    return table(headers, rows)


def cost_table(runs: Sequence[VariantRun]) -> str:
    """The salt-api vs LocalClient submissions, one row per variant."""
    rows: list[list[object]] = []
    for run in runs:
        c = run.cost
        if run.cost_error:
            rows.append([run.label, f"not measured: {run.cost_error}", *["-"] * 5])
        if c is None:
            continue
        rows.append(
            [
                run.label,
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
    headers = ["variant", "submissions", "salt-api s", "LocalClient s"]
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
    """The goals of the limiter-on runs, judged on their medians, each
    variant's median beside them. No goal divides one variant's response
    time by another's: a check that failed has the time of its timeout, not
    of an answer."""
    names = list(dict.fromkeys(run.name for run in runs))
    if "on" not in names:
        return ["- the goals are the limiter-on run's: run it (--variants on or both)"]
    lines = []
    for what, share, limit, at_most in (
        (
            "failures other than the limiter's own 503 (of all requests)",
            _other_failure_share,
            OTHER_FAILURES_MAX,
            True,
        ),
        (
            "presence checks answered in full within their timeout",
            _presence_share,
            PRESENCE_ANSWERED_MIN,
            False,
        ),
    ):
        by_name = {n: [share(r) for r in runs if r.name == n] for n in names}
        on = [v for v in by_name["on"] if v is not None]
        if not on:
            lines.append(f"- {what}: not measured (no requests with the limiter on)")
            continue
        middle = median(on)
        met = middle <= limit if at_most else middle >= limit
        verdict = "met" if met else f"missed by {100 * abs(middle - limit):.2f} points"
        beside = "; ".join(
            f"{n} {_share_words([v for v in values if v is not None])}"
            for n, values in by_name.items()
            if n != "on"
        )
        lines.append(
            f"- {what} with the limiter on: {_share_words(on)}, goal "
            f"{'<=' if at_most else '>='} {100 * limit:g} %: {verdict}"
            + (f" ({beside})" if beside else "")
        )
    lines += [f"  - {run.label}: {_run_words(run)}" for run in runs]
    return lines


def _share_words(values: list[float]) -> str:
    """``0.50 %`` for one run, ``median 0.50 % (0.20-0.80 %, 3 runs)`` for more."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{100 * values[0]:.2f} %"
    return (
        f"median {100 * median(values):.2f} % ({100 * min(values):.2f}-"
        f"{100 * max(values):.2f} %, {len(values)} runs)"
    )


def _run_words(run: VariantRun) -> str:
    failed, total, kinds = _other_failures(run)
    stats = _presence(run)
    presence = (
        f"presence {stats.requests - stats.failures} of {stats.requests} "
        f"answered (every presence request p50 / p99 {stats.p50:.0f} / {stats.p99:.0f} ms)"
        if stats and stats.requests
        else "no presence checks"
    )
    return f"{failed} of {total} requests failed other than 503 ({kinds}); {presence}"


def _other_failures(run: VariantRun) -> tuple[int, int, str]:
    """Failures other than ``overloaded``, all requests, and the kinds."""
    other: dict[str, int] = {}
    for (_, kind), count in run.locust.failures_by_endpoint.items():
        if kind != "overloaded":
            other[kind] = other.get(kind, 0) + count
    total = sum(e.requests for e in run.locust.endpoints)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(other.items())) or "none"
    return sum(other.values()), total, kinds


def _other_failure_share(run: VariantRun) -> float | None:
    failed, total, _ = _other_failures(run)
    return failed / total if total else None


def _presence(run: VariantRun) -> EndpointStats | None:
    return next((e for e in run.locust.endpoints if e.name == PRESENCE), None)


def _presence_share(run: VariantRun) -> float | None:
    stats = _presence(run)
    if stats is None or not stats.requests:
        return None
    return (stats.requests - stats.failures) / stats.requests


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
        "Sampled once a second over each process tree (CPU in % of one "
        "core). " + probe_words(),
        resources_table(runs),
    ]
    limiter = limiter_table(runs)
    if limiter:
        parts += [
            "## The limiter",
            "Its queue manager's status (`ratelimit.status`), sampled once a "
            "second: the budget of points it lets be in flight (with slices "
            "sized by the wait returns see, `slices:target_delay`, it starts "
            "at two slices of `min_targets` and moves, never below them; "
            "fixed, it is `max_master_jobs`), "
            "the points in flight, the queue, how often the budget was cut and "
            "the wait the cuts were decided on. A busy queue manager may not "
            "answer a sample in time; those are counted apart.",
            limiter,
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
    reports = [f"`{shown_path(run.html_report)}`" for run in runs if run.html_report]
    if reports:
        parts.append("Locust's own HTML reports: " + ", ".join(reports) + ".")
    return "\n\n".join(parts) + "\n"


def timeline_plot(runs: Sequence[VariantRun], path: Path) -> Path:
    """Users and req/s, failures/s, master + salt-api CPU and the fleet's
    returns/s over time, one line per variant; the limiter's budget and its
    points in flight too when a run sampled them."""
    plt = pyplot()

    limited = [run for run in runs if _answered(run)]
    panels = 5 if limited else 4
    fig, axes = plt.subplots(
        panels, 1, figsize=(9, 2.75 * panels), dpi=100, sharex=True
    )
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
        if run in limited:
            answered = _answered_at(run)
            at = [t for t, _ in answered]
            axes[4].plot(
                at,
                [state.budget for _, state in answered],
                color=color,
                label=f"{run.name} budget",
            )
            axes[4].plot(
                at,
                [state.points for _, state in answered],
                ":",
                color=color,
                label=f"{run.name} in flight",
            )
    titles = [
        "requests/s and users",
        "failures/s",
        "CPU % (of one core)",
        "fleet returns/s",
        "limiter budget and points in flight",
    ][:panels]
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
