"""``pillar-compile`` benchmark: master CPU per ``_pillar`` request (issue 25).

Three variants side by side in one run, each run in a fresh process per
variant with the Salt tree under test first on ``PYTHONPATH``:

- ``pristine 3008.3``: the sdist's tree (``upstream/3008.3`` in ``salt/src``);
- ``series, reuse off``: the whole series (``salt/src`` HEAD) with
  ``pillar_reuse_loaders: False``, its default;
- ``series, reuse on``: the same tree with ``pillar_reuse_loaders: True``.

Each process builds the master's ``AESFuncs`` (what an MWorker runs), serves
warm-up requests, then measures its own CPU time (``time.process_time``: all
threads, robust to other load on the machine, unlike wall time) over the
counted ``_pillar`` requests, one per minion. Two pillars: DB-only (the
PostgreSQL ext_pillar, one ``salt_pillar_rows()`` call, empty
``pillar_roots``) and file pillars (the same data as a pillar tree whose
top.sls has one entry per minion of the fleet). Every variant's pillar of
every counted minion must equal the reference merge of the generated data.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import report
from benchmarks.pillar_compile_worker import WorkerConfig
from benchmarks.salt_trees import (
    Variant,
    extract_pristine_and_series,
    rotated,
    run_in_tree,
)
from harness.fleet import minion_ids
from harness.pillar.files import write_tree
from harness.pillar.generate import generate
from harness.pillar.model import FleetPillars, merged_pillar
from harness.pillar.store import fleet_database
from harness.postgres import ConnectionInfo

if TYPE_CHECKING:
    from benchmarks.plain_options import PillarCompileOptions

NAME = "pillar-compile"
GOALS = {"db": 0.07, "files": 0.5}  # series with reuse on / pristine, at most
PILLARS = {"db": "DB-only (PostgreSQL ext_pillar)", "files": "file pillars"}
# upstream's postgres module binds the minion id as the one positional
# parameter; the series' module accepts that too, so both run the same query
DB_QUERY = "SELECT pillar FROM salt_pillar_rows(%s)"


VARIANTS = Variant.of_option("reuse")


@dataclass
class Measured:
    """CPU ms per request of one variant and pillar, one entry per run."""

    variant: str
    pillar: str
    ms_per_request: report.Runs = field(default_factory=report.Runs)
    wrong: list[str] = field(default_factory=list)  # minions with another pillar


def overrides(
    variant: Variant, pillar: str, *, info: ConnectionInfo, tree: Path
) -> dict[str, Any]:
    """Master options of ``variant`` for ``pillar`` ("db" or "files")."""
    # Firing the cache-refresh event needs a running master's event bus;
    # without one each request would wait for its connect timeout.
    ret: dict[str, Any] = {"minion_data_cache_events": False}
    if variant.option is not None:
        ret["pillar_reuse_loaders"] = variant.option
    if pillar == "db":
        ret["postgres"] = info.salt_options()
        ret["ext_pillar"] = [{"postgres": [{"query": DB_QUERY, "as_json": True}]}]
    else:
        ret["pillar_roots"] = {"base": [str(tree)]}
    return ret


def run_worker(
    config: WorkerConfig, salt_tree: Path, workdir: Path
) -> tuple[float, dict[str, Any]]:
    """Run one worker process; its CPU ms per request and its pillars."""
    result = run_in_tree(
        "benchmarks.pillar_compile_worker", asdict(config), salt_tree, workdir
    )
    return 1000 * result["cpu_s"] / result["requests"], result["pillars"]


def wrong_pillars(
    fleet: FleetPillars, pillars: dict[str, Any], minions: Sequence[str]
) -> list[str]:
    """The minions whose pillar is missing or not the reference merge."""
    return [m for m in minions if pillars.get(m) != merged_pillar(fleet, m)]


def run(opts: PillarCompileOptions) -> Path:
    """Run the benchmark; return the report's path."""
    fleet_size, requests, warmup, runs = (
        opts.fleet,
        opts.requests,
        opts.warmup,
        opts.runs,
    )
    ids = minion_ids("evil", fleet_size)
    fleet = generate(ids)
    step = fleet_size // (requests + warmup)
    sample = ids[::step][: requests + warmup]
    config_minions, config_warmup = sample[warmup:], sample[:warmup]
    measured = {(v.name, p): Measured(v.name, p) for p in PILLARS for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="saltfleet-pillar-compile-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        trees, commits = extract_pristine_and_series(work)
        pillar_tree = work / "tree"
        write_tree(fleet, pillar_tree)
        with fleet_database(work / "pg", fleet) as pg:
            for run_no in range(runs):
                for pillar in PILLARS:
                    for variant in rotated(VARIANTS, run_no):
                        print(f"run {run_no + 1}/{runs}: {pillar}, {variant.name}")
                        where = (
                            work / f"{run_no}-{pillar}-{variant.tree}-{variant.option}"
                        )
                        config = WorkerConfig(
                            workdir=str(where / "master"),
                            overrides=overrides(
                                variant, pillar, info=pg.connection, tree=pillar_tree
                            ),
                            warmup=config_warmup,
                            minions=config_minions,
                        )
                        ms, pillars = run_worker(config, trees[variant.tree], where)
                        one = measured[(variant.name, pillar)]
                        one.ms_per_request.append(ms)
                        one.wrong += wrong_pillars(fleet, pillars, config_minions)
    return write_report(list(measured.values()), opts, commits=commits)


def write_report(
    results: list[Measured], opts: PillarCompileOptions, *, commits: str
) -> Path:
    """Write ``results/pillar-compile.md`` (+ .json, .png); return its path."""
    fleet_size, requests, warmup, runs = (
        opts.fleet,
        opts.requests,
        opts.warmup,
        opts.runs,
    )
    by_key = {(m.variant, m.pillar): m for m in results}
    pristine = VARIANTS[0].name
    lines = [
        *report.trees_header(
            "Pillar compiles: master CPU per `_pillar` request",
            NAME,
            opts.reproduce_command(),
            commits,
        ),
        "## Method",
        "",
        f"A fleet of {fleet_size} generated minions (the `pillar` benchmark's "
        "data: global, organisation, group and minion rows) is stored in an "
        "embedded PostgreSQL started by the harness and written as a pillar "
        f"tree whose top.sls has one entry per minion ({fleet_size} entries). "
        f"Per run, variant and pillar, a fresh process builds the master's "
        f"`AESFuncs` (what an MWorker runs), serves {warmup} warm-up "
        f"`_pillar` requests and then {requests} counted ones (one per "
        "minion, about 50 grains each), and measures its own CPU time over the "
        "counted ones: CPU seconds, not wall time, so the other load on this "
        "shared machine does not count. That is the handler's whole work "
        "(pillar compile, fileserver `update_opts`, grains and pillar cache "
        "writes) but not the transport's (decrypting the request, encrypting "
        "the reply, about 1 ms) nor firing the cache-refresh event "
        "(`minion_data_cache_events: False`, no event bus in process). "
        f"{runs} runs, each running the variants in a rotated order; the "
        "table gives the median over runs and the runs' range.",
        "",
        "`pristine 3008.3` is the unpatched sdist; the series variants are the "
        "whole patch series, `pillar_reuse_loaders` off (its default) and on. "
        "All use the same query; pristine's postgres module connects for "
        "every compile, the series' keeps one connection (`postgres:pool_size`, "
        "patch 0006), so `series, reuse off` vs `on` isolates this change. "
        "With reuse on, a worker also keeps the list of SLS files and the "
        "rendered top.sls (it has no template syntax) until a directory of "
        "`pillar_roots` or the top file changes; matching the top file's "
        "entries against the minion still runs for every request.",
        "",
    ]
    for pillar, title in PILLARS.items():
        base = by_key[(pristine, pillar)].ms_per_request.median
        rows = []
        for v in VARIANTS:
            m = by_key[(v.name, pillar)]
            rows.append(
                (
                    v.name,
                    f"{m.ms_per_request.median:.1f}",
                    m.ms_per_request.spread,
                    f"{m.ms_per_request.median / base:.3f}",
                    f"{requests * runs - len(m.wrong)} of {requests * runs}",
                )
            )
        lines += [
            f"## {title}",
            "",
            report.table(
                [
                    "variant",
                    "CPU ms / request (median)",
                    "range over runs",
                    "x pristine",
                    "pillars equal to the reference",
                ],
                rows,
            ),
            "",
        ]
    lines += ["## Goals (issue 25)", ""]
    reuse_on = VARIANTS[-1].name
    for pillar, goal in GOALS.items():
        ratio = (
            by_key[(reuse_on, pillar)].ms_per_request.median
            / by_key[(pristine, pillar)].ms_per_request.median
        )
        verdict = "met" if ratio <= goal else f"NOT met (by {ratio / goal:.1f}x)"
        lines.append(
            f"- {PILLARS[pillar]}: series with reuse on = {ratio:.3f} x pristine "
            f"(goal <= {goal}): {verdict}"
        )
    wrong = [m for m in results if m.wrong]
    lines.append(
        "- identical pillars: "
        + (
            "every variant gave every counted minion the reference pillar, in every run"
            if not wrong
            else "NOT met: "
            + "; ".join(
                f"{m.variant} / {m.pillar}: {len(m.wrong)} (first {m.wrong[0]})"
                for m in wrong
            )
        )
    )
    lines += [
        "- not measured here: the 1000-minion highstate round and the "
        "`pillar.items` p99 over 1000 minions need the whole stack; they are "
        "in `pkgstates.md` (`nox -s bench -- pkgstates`) and `pillar.md` "
        "(`nox -s bench -- pillar`).",
        "",
    ]
    plot = report.bar_plot(
        NAME,
        f"master CPU per _pillar request (median of {runs} runs)",
        [PILLARS[p] for p in PILLARS],
        {
            v.name: [by_key[(v.name, p)].ms_per_request.median for p in PILLARS]
            for v in VARIANTS
        },
        "CPU ms / request",
    )
    lines += [f"![CPU per request]({plot.name})"]
    report.write_data(NAME, {"results": results})
    return report.write(NAME, "\n".join(lines))
