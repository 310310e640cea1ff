"""Pillar benchmark: the RFC's experiment, side by side in one run.

1. Micro: one warm ext_pillar lookup, in-process, through Salt's loader:
   the patched ``postgres`` module (kept connection, lookup function) against
   upstream's unpatched module (a connection per compile), p50 / p99.
2. Fleet: a master per variant with N simulated minions; R rounds of
   ``salt '*' pillar.items`` and ``salt '*' test.ping``. A variant is a
   pillar source (``files``: today's top.sls with one entry per minion,
   ``files-fair``: a top.sls of a few nodegroup entries, ``db-function``,
   ``db-queries``, ``db-upstream``) and a master tuning: none (today's
   defaults), ``+reuse`` (``pillar_reuse_loaders``) or ``+cache`` (Salt's
   ``pillar_cache``). Per variant: round wall time, p99 of the minions'
   return times, master CPU, peak PostgreSQL client connections and backends.

All variants use one PostgreSQL and the same generated fleet.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from benchmarks import proctree, report
from harness.fleet import minion_ids
from harness.master import in_process_opts
from harness.pillar import variants
from harness.pillar.files import _row_path, _sls_name, slug, write_tree
from harness.pillar.generate import generate
from harness.pillar.model import FleetPillars, merged_pillar
from harness.pillar.store import fleet_database
from harness.postgres import ConnectionInfo, EmbeddedPostgres
from harness.stack import fleet_stack, master_layout

if TYPE_CHECKING:
    from benchmarks.plain_options import PillarOptions

GOAL_ROUND_RATIO = 0.8  # patched DB round time <= 0.8 x file pillars
GOAL_P99_RATIO = 0.3  # db-function+reuse p99 <= 0.3 x db-function's (issue 25)
#: master options of each tuning (the part of a variant's name after ``+``)
TUNINGS: dict[str, dict[str, Any]] = {
    "": {"pillar_reuse_loaders": False},
    "reuse": {"pillar_reuse_loaders": True},
    "cache": {
        "pillar_reuse_loaders": False,
        "pillar_cache": True,
        "pillar_cache_ttl": 3600,
        "pillar_cache_backend": "disk",
    },
}
#: the default variants, in run order
DEFAULT_VARIANTS = (
    "files",
    "files+reuse",
    "files-fair",
    "files-fair+reuse",
    "db-function",
    "db-function+reuse",
    "db-function+cache",
    "db-queries",
    "db-upstream",
)
FAIR = "files-fair"


def variant_list(value: str) -> list[str]:
    """A comma-separated list of variants: SOURCE[+TUNING] (argparse type)."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    sources = (*variants.VARIANTS, FAIR)
    bad = [
        name
        for name in names
        if name.partition("+")[0] not in sources
        or name.partition("+")[2] not in TUNINGS
    ]
    if not names or bad or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"invalid variants {value!r}: a comma-separated list without "
            f"repetition of SOURCE or SOURCE+TUNING, SOURCE one of "
            f"{', '.join(sources)}, TUNING one of reuse, cache"
        )
    return names


def fair_top(fleet: FleetPillars) -> tuple[str, dict[str, str]]:
    """A top.sls for ``fleet`` as an admin would write it, and its nodegroups.

    One entry for everyone, one nodegroup entry per organisation and per
    group (in merge order), and one templated entry for each minion's own
    SLS; the reference merge order is kept because Salt renders the SLS of
    the matching entries in the file's order.
    """
    sls: dict[tuple[str, str | None], list[str]] = {}
    for row in sorted(fleet.rows, key=lambda r: r.category):
        if row.scope != "minion":
            sls.setdefault((row.scope, row.target), []).append(
                _sls_name(_row_path(row, fleet))
            )
    top: dict[str, list[Any]] = {"*": sls.get(("global", None), [])}
    nodegroups: dict[str, str] = {}
    for scope, targets in (
        ("org", fleet.orgs),
        ("group", [g.key for g in fleet.groups]),
    ):
        for target in targets:
            members = [
                m
                for m, ms in fleet.minions.items()
                if (ms.org == target if scope == "org" else target in ms.groups)
            ]
            if members and (scope, target) in sls:
                name = f"{scope}-{slug(target)}"
                nodegroups[name] = "L@" + ",".join(members)
                top[name] = [{"match": "nodegroup"}, *sls[(scope, target)]]
    text = yaml.safe_dump({"base": top}, sort_keys=False)
    text += (
        "  '{{ grains['id'] }}':\n"
        "  - minion.{{ grains['id'] | regex_replace('[^A-Za-z0-9_-]', '_') }}.*\n"
        "  - ignore_missing: true\n"
    )
    return text, nodegroups


def source_opts(
    source: str, trees: tuple[Path, Path], nodegroups: dict[str, str], extmods: Path
) -> dict[str, Any]:
    """Master options of a pillar ``source``; ``trees`` are today's pillar tree
    and the one with the fair top file, ``extmods`` the extension_modules."""
    if source == FAIR:
        return {"pillar_roots": {"base": [str(trees[1])]}, "nodegroups": nodegroups}
    return variants.master_opts(source, pillar_tree=trees[0], extension_dir=extmods)


GOAL_P50_MS = 0.5
GOAL_SPEEDUP = 5.0


@dataclass
class MicroResult:
    """One module's warm ext_pillar lookups, in milliseconds."""

    name: str
    samples_ms: list[float]

    @property
    def p50(self) -> float:
        """Median lookup, ms."""
        return report.percentile(self.samples_ms, 50)

    @property
    def p99(self) -> float:
        """99th-percentile lookup, ms."""
        return report.percentile(self.samples_ms, 99)


def micro_benchmark(
    info: ConnectionInfo, ids: list[str], calls: int, workdir: Path
) -> list[MicroResult]:
    """Time single ext_pillar calls, warm, for the patched and upstream modules."""
    import salt.loader

    opts = in_process_opts(workdir, postgres=info.salt_options())
    # before the loader exists: it lists extension_modules once
    variants.install_upstream_module(Path(opts["extension_modules"]))
    funcs = salt.loader.minion_mods(opts)
    pillars = salt.loader.pillars(opts, funcs)
    cases: list[tuple[str, Callable[[str], Any]]] = [
        (
            "patched postgres (kept connection)",
            lambda mid: pillars["postgres"](
                mid, {}, {"query": variants.FUNCTION_QUERY, "as_json": True}
            ),
        ),
        (
            "upstream postgres (connection per compile)",
            lambda mid: pillars[variants.UPSTREAM_MODULE](
                mid,
                {},
                {
                    "query": variants.FUNCTION_QUERY.replace("%(minion_id)s", "%s"),
                    "as_json": True,
                },
            ),
        ),
    ]
    results = []
    for name, call in cases:
        for mid in ids[:50]:  # warm-up: connections, plans, caches
            call(mid)
        samples = []
        for i in range(calls):
            mid = ids[i % len(ids)]
            started = time.perf_counter_ns()
            call(mid)
            samples.append((time.perf_counter_ns() - started) / 1e6)
        results.append(MicroResult(name, samples))
    return results


class ConnectionMonitor:
    """Samples pg_stat_activity every ``interval`` seconds; keeps the peaks."""

    def __init__(self, info: ConnectionInfo, interval: float = 0.1) -> None:
        self.info = info
        self.interval = interval
        self.peak_clients = 0
        self.peak_backends = 0
        self.peak_ports: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="pg-monitor", daemon=True
        )

    def __enter__(self) -> ConnectionMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        conn = self.info.connect()
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                while not self._stop.is_set():
                    cur.execute(
                        "SELECT count(*) FILTER (WHERE backend_type = 'client backend'"
                        " AND pid <> pg_backend_pid()), count(*),"
                        " array_agg(client_port) FILTER (WHERE backend_type = 'client backend'"
                        " AND pid <> pg_backend_pid()) FROM pg_stat_activity"
                    )
                    clients, backends, ports = cur.fetchone()
                    if clients > self.peak_clients:
                        self.peak_ports = list(ports or [])
                    self.peak_clients = max(self.peak_clients, clients)
                    self.peak_backends = max(self.peak_backends, backends)
                    self._stop.wait(self.interval)
        finally:
            conn.close()


@dataclass
class FleetResult:
    """What one variant measured over its rounds: times, wrong or failed
    pillars, master CPU and peak PostgreSQL connections."""

    variant: str
    round_s: list[float] = field(default_factory=list)
    #: per round, the 99th percentile of the minions' return times, seconds
    p99_s: list[float] = field(default_factory=list)
    ping_s: list[float] = field(default_factory=list)
    returns: list[int] = field(default_factory=list)
    wrong: int = 0
    first_wrong: str = ""
    #: returns that are an error message instead of a pillar (e.g. a timeout)
    failed: int = 0
    first_failed: str = ""
    #: ``_pillar`` requests the minions sent, retries included
    pillar_requests: int = 0
    master_cpu_s: float = 0.0
    peak_clients: int = 0
    peak_backends: int = 0


def _describe_wrong(value: Any) -> str:
    """A short account of a pillar that is not the reference one."""
    if not isinstance(value, dict):
        return f"not a mapping: {str(value)[:200]!r}"
    if "_errors" in value:
        return f"_errors {str(value['_errors'])[:200]!r}"
    return f"keys {sorted(value)[:8]}"


def _pillar_requests(stack: Any) -> int:
    """``_pillar`` requests the simulated fleet has sent so far (from status.json)."""
    time.sleep(1.5)  # the workers write their counters every second
    status = stack.fleet.status() or {}
    return int(status.get("pillar_requests") or 0)


def timed_cmd(
    stack: Any, fun: str, arg: list[Any], *, timeout: int, minions: int
) -> tuple[dict[str, Any], list[float]]:
    """Run ``fun`` on every minion: the returns and, sorted, the seconds after
    the publication at which each arrived."""
    returns: dict[str, Any] = {}
    arrivals: list[float] = []
    with stack.client() as client:
        started = time.perf_counter()
        for reply in client.cmd_iter("*", fun, arg, timeout=timeout, full_return=False):
            for minion_id, data in reply.items():
                arrivals.append(time.perf_counter() - started)
                returns[minion_id] = data.get("ret")
            if len(returns) >= minions:
                break
    arrivals.sort()
    return returns, arrivals


def run_fleet_variant(
    variant: str,
    *,
    pg: EmbeddedPostgres,
    fleet: FleetPillars,
    trees: tuple[Path, Path],
    nodegroups: dict[str, str],
    workdir: Path,
    minions: int,
    rounds: int,
    workers: int,
) -> FleetResult:
    """Run ``rounds`` of ``pillar.items`` and ``test.ping`` against a master set up
    as ``variant``, checking every pillar against the reference one."""
    result = FleetResult(variant)
    root = workdir / f"stack-{variant}"
    source, _, tuning = variant.partition("+")
    stack = fleet_stack(
        minions,
        root=root,
        dsn=pg.connection.dsn,
        worker_threads=workers,
        master_opts={
            **source_opts(
                source, trees, nodegroups, master_layout(root).extension_modules
            ),
            **TUNINGS[tuning],
        },
    )
    with stack:
        assert stack.master is not None
        stack.cmd("*", "pillar.items", timeout=300)  # warm-up, not counted
        requests_before = _pillar_requests(stack)
        cpu_before = proctree.cpu_seconds(stack.master.process.pid)
        with ConnectionMonitor(pg.connection) as monitor:
            for round_no in range(1, rounds + 1):
                started = time.perf_counter()
                returns, arrivals = timed_cmd(
                    stack, "pillar.items", ["unmask=True"], timeout=300, minions=minions
                )
                result.round_s.append(time.perf_counter() - started)
                result.p99_s.append(
                    report.percentile(arrivals, 99) if arrivals else float("nan")
                )
                result.returns.append(len(returns))
                for mid, value in returns.items():
                    if not isinstance(value, dict):
                        result.failed += 1
                        if not result.first_failed:
                            result.first_failed = f"{mid}: {_describe_wrong(value)}"
                    elif value != merged_pillar(fleet, mid):
                        result.wrong += 1
                        if not result.first_wrong:
                            result.first_wrong = f"{mid}: {_describe_wrong(value)}"
                started = time.perf_counter()
                stack.cmd("*", "test.ping", timeout=120)
                result.ping_s.append(time.perf_counter() - started)
                print(
                    f"  {variant} round {round_no}/{rounds}: pillar.items "
                    f"{result.round_s[-1]:.1f} s ({len(returns)} of {minions}), "
                    f"test.ping {result.ping_s[-1]:.1f} s",
                    flush=True,
                )
        result.master_cpu_s = (
            proctree.cpu_seconds(stack.master.process.pid) - cpu_before
        )
        result.pillar_requests = _pillar_requests(stack) - requests_before
        result.peak_clients = monitor.peak_clients
        result.peak_backends = monitor.peak_backends
    return result


def run(opts: PillarOptions) -> Path:
    """Run the whole benchmark; return the report's path."""
    minions, rounds, workers = opts.minions, opts.rounds, opts.workers
    micro_calls, names = opts.micro_calls, opts.variants
    ids = minion_ids("evil", minions)
    fleet = generate(ids)
    with tempfile.TemporaryDirectory(prefix="saltfleet-bench-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        tree = work / "tree"
        write_tree(fleet, tree)
        fair_tree = work / "tree-fair"
        shutil.copytree(tree, fair_tree)
        top, nodegroups = fair_top(fleet)
        (fair_tree / "top.sls").write_text(top)
        with fleet_database(work / "pg", fleet) as pg:
            results = []
            for variant in names:
                print(
                    f"variant {variant}: {minions} minions, {rounds} rounds", flush=True
                )
                results.append(
                    run_fleet_variant(
                        variant,
                        pg=pg,
                        fleet=fleet,
                        trees=(tree, fair_tree),
                        nodegroups=nodegroups,
                        workdir=work,
                        minions=minions,
                        rounds=rounds,
                        workers=workers,
                    )
                )
            # last: its kept connection would count as the masters' otherwise
            print(f"micro-benchmark: {micro_calls} lookups per module", flush=True)
            micro = micro_benchmark(pg.connection, ids, micro_calls, work / "micro")
    return write_report(
        micro,
        results,
        minions=minions,
        rounds=rounds,
        workers=workers,
        reproduce=opts.reproduce_command(),
        name=opts.output_name,
    )


def _ratio_goal(
    by_name: dict[str, FleetResult],
    name: str,
    base: str,
    what: str,
    value: Callable[[FleetResult], float],
    goal: float | None,
) -> str | None:
    """One "``name`` = x ``base``" line, with its goal's verdict if it has one;
    None when either was not run."""
    if name not in by_name or base not in by_name:
        return None
    ratio = value(by_name[name]) / value(by_name[base])
    line = f"- {name} {what} = {ratio:.2f} x {base}"
    if goal is None:
        return f"{line} (no goal)"
    verdict = "met" if ratio <= goal else f"NOT met (by {ratio / goal:.1f}x)"
    return f"{line} (goal <= {goal}): {verdict}"


def _round_median(r: FleetResult) -> float:
    return report.median(r.round_s)


def _p99_median(r: FleetResult) -> float:
    return report.median(r.p99_s)


def write_report(
    micro: list[MicroResult],
    results: list[FleetResult],
    *,
    minions: int,
    rounds: int,
    workers: int,
    reproduce: str,
    name: str,
) -> Path:
    """Write ``results/NAME.md`` (``pillar.md`` by default), its data file and
    its plot; return the report's path."""
    patched, upstream = micro
    speedup = upstream.p50 / patched.p50 if patched.p50 else float("inf")
    by_name = {r.variant: r for r in results}
    lines = [
        "# Pillar benchmark: "
        + (
            "files vs PostgreSQL"
            if any(r.variant.startswith("files") for r in results)
            else "PostgreSQL pillars"
        ),
        "",
        report.environment(),
        f"{minions} simulated minions, {rounds} rounds, master with {workers} workers. "
        f"Reproduce: `{reproduce}`.",
        "",
        "## One ext_pillar lookup, warm (in-process, through Salt's loader)",
        "",
        report.table(
            ["module", "p50 ms", "p99 ms", "samples"],
            [
                (m.name, f"{m.p50:.3f}", f"{m.p99:.3f}", len(m.samples_ms))
                for m in micro
            ],
        ),
        "",
        f"Speed-up of the patched module at p50: {speedup:.1f}x "
        f"(goal >= {GOAL_SPEEDUP:.0f}x); patched p50 {patched.p50:.3f} ms "
        f"(goal <= {GOAL_P50_MS} ms).",
        "",
        "## Fleet rounds",
        "",
        "Variants: `files` is today's file baseline, the pillar tree with a "
        "top.sls of one entry per minion; `files-fair` is the same tree with "
        "the top.sls an admin would write (one entry for everyone, one "
        "nodegroup entry per organisation and per group, one templated entry "
        "for the minion's own SLS); `db-*` read PostgreSQL (see below). "
        "Without a suffix the master runs with today's defaults; `+reuse` "
        "sets `pillar_reuse_loaders: True`; `+cache` is a stock master tuned "
        "with Salt 3008.3's own `pillar_cache` (disk, ttl 3600 s), which "
        "serves each minion's first compile again until the ttl expires. "
        "Each variant has its own master and fleet, one after the other; "
        "p99 is the 99th percentile of the minions' return times in a round "
        "(median over rounds, with the range).",
        "",
        report.table(
            [
                "variant",
                "pillar.items round median s",
                "max s",
                "p99 s (median)",
                "p99 range",
                "returns / round",
                "error returns",
                "wrong pillars",
                "_pillar requests / minion / round",
                "test.ping median s",
                "master CPU s",
                "master CPU ms / _pillar request",
                "peak PG client connections",
                "peak PG backends",
            ],
            [
                (
                    r.variant,
                    f"{report.median(r.round_s):.2f}",
                    f"{max(r.round_s):.2f}",
                    f"{_p99_median(r):.2f}",
                    f"{min(r.p99_s):.2f}-{max(r.p99_s):.2f}",
                    f"{min(r.returns)}-{max(r.returns)} of {minions}",
                    r.failed,
                    r.wrong,
                    f"{r.pillar_requests / (minions * rounds):.2f}",
                    f"{report.median(r.ping_s):.2f}",
                    f"{r.master_cpu_s:.1f}",
                    f"{1000 * r.master_cpu_s / max(1, r.pillar_requests):.0f}",
                    r.peak_clients,
                    r.peak_backends,
                )
                for r in results
            ],
        ),
        "",
    ]
    lines += [
        "Error returns are `pillar.items` returns that carry an error message "
        "instead of a pillar (the message a real minion returns when its "
        "`_pillar` request times out after its tries); wrong pillars are "
        "pillars that differ from the reference merge of the generated data. "
        "More than 1 `_pillar` request per minion and round means minions "
        "retried after a request timed out; fewer than 1, that the minions' "
        "own pillar cache answered.",
        "",
    ]
    failed = [r for r in results if r.failed]
    if failed:
        lines += ["First error return of each variant:", ""]
        lines += [f"- {r.variant}: {r.first_failed}" for r in failed]
        lines.append("")
    wrong = [r for r in results if r.wrong]
    if wrong:
        lines += ["Pillars that differed from the reference merge (first of each):", ""]
        lines += [f"- {r.variant}: {r.first_wrong}" for r in wrong]
        lines.append("")
    reuse = "db-function+reuse"
    comparisons: list[tuple[str, str, str, Callable[[FleetResult], float], Any]] = [
        ("db-function", "files", "round time", _round_median, GOAL_ROUND_RATIO),
        ("db-queries", "files", "round time", _round_median, GOAL_ROUND_RATIO),
        ("db-function", FAIR, "round time", _round_median, GOAL_ROUND_RATIO),
        (reuse, "db-function", "pillar.items p99", _p99_median, GOAL_P99_RATIO),
        (reuse, "db-function", "round time", _round_median, None),
        (reuse, "db-function+cache", "pillar.items p99", _p99_median, None),
        ("db-function+cache", "db-function", "pillar.items p99", _p99_median, None),
        ("files+reuse", "files", "round time", _round_median, None),
        (f"{FAIR}+reuse", FAIR, "round time", _round_median, None),
    ]
    goals = [_ratio_goal(by_name, *comparison) for comparison in comparisons]
    lines += ["## Goals", ""]
    lines += [goal for goal in goals if goal is not None]
    for name in ("db-function", "db-queries", "db-function+reuse"):
        if name in by_name:
            peak = by_name[name].peak_clients
            verdict = "met" if peak <= workers else "NOT met"
            lines.append(
                f"- {name} peak connections {peak} <= {workers} workers: {verdict}"
            )
    lines.append(
        f"- ext_pillar p50 {patched.p50:.3f} ms <= {GOAL_P50_MS} ms: "
        + ("met" if patched.p50 <= GOAL_P50_MS else "NOT met")
    )
    lines.append(
        f"- speed-up {speedup:.1f}x >= {GOAL_SPEEDUP:.0f}x: "
        + ("met" if speedup >= GOAL_SPEEDUP else "NOT met")
    )
    plot = report.bar_plot(
        f"{name}-rounds",
        f"salt '*' pillar.items, {minions} minions (median of {rounds} rounds)",
        [r.variant for r in results],
        {
            "round s": [_round_median(r) for r in results],
            "p99 s": [_p99_median(r) for r in results],
        },
        "seconds",
    )
    lines += ["", f"![round times]({plot.name})"]
    report.write_data(name, {"micro": micro, "fleet": results})
    return report.write(name, "\n".join(lines))
