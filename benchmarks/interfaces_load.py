"""Load-time cost of module interfaces, against unpatched Salt 3008.3.

Three variants side by side in one run, each in a fresh process per run with
the Salt tree under test first on ``PYTHONPATH``
(:mod:`benchmarks.interfaces_load_worker`):

- ``pristine 3008.3``: the sdist's tree (``upstream/3008.3`` in ``salt/src``);
- ``series, interfaces off``: the whole series (``salt/src`` HEAD) with
  ``module_interfaces: False``, its default;
- ``series, interfaces on``: the same tree with ``module_interfaces: True``.

Each worker loads every execution module the way a minion does (warm-up
loads first), then one module that declares an interface at a time without
``__virtual__`` (``salt.loader.raw_mod``, so the SUSE and Red Hat providers
are measured on any host). The report gives, per variant, the median over
runs of each run's median, with the runs' spread, and the ratios to
pristine. Goals: with interfaces off the series loads as 3008.3 does (at
most +2 % CPU, the machine's noise), with them on at most +5 %.

    nox -s bench -- interfaces [--runs 3 --loads 10 --warmup 2 --single-loads 20]
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import report
from benchmarks.interfaces_load_worker import WorkerConfig
from benchmarks.salt_trees import (
    Variant,
    extract_pristine_and_series,
    rotated,
    run_in_tree,
)

if TYPE_CHECKING:
    from benchmarks.plain_options import InterfacesOptions

NAME = "interfaces-load"
# CPU time of a full load, at most this much more than pristine 3008.3
GOALS = {"series, interfaces off": 2.0, "series, interfaces on": 5.0}
# Execution modules that declare an interface in the patched tree
DECLARING_MODULES = ("aptpkg", "yumpkg", "zypperpkg")


VARIANTS = Variant.of_option("interfaces")


@dataclass
class Measured:
    """One variant's worker results, one per run."""

    variant: Variant
    runs: list[dict[str, Any]] = field(default_factory=list)

    def per_run(self, key: str) -> list[float]:
        """Each run's median of ``key`` (``seconds``, ``cpu_seconds``, ...)."""
        return [report.median(run[key]) for run in self.runs]

    def median(self, key: str) -> float:
        """Median over runs of each run's median of ``key``."""
        return report.median(self.per_run(key))

    def spread(self, key: str) -> str:
        """The runs' lowest and highest median of ``key``, in seconds."""
        values = self.per_run(key)
        return f"{min(values):.4f}-{max(values):.4f}"

    def single_ms(self, module: str) -> float:
        """Median over runs of one module's median load time, in ms."""
        return 1000 * report.median(
            [report.median(run["single"][module]) for run in self.runs]
        )


def percent_change(new: float, old: float) -> float:
    """How much more ``new`` is than ``old``, in percent (negative if less)."""
    return (new / old - 1) * 100


def verdicts(measured: dict[str, Measured]) -> list[str]:
    """One line per goal: the CPU change against pristine, met or not."""
    base = measured[VARIANTS[0].name].median("cpu_seconds")
    lines = []
    for name, goal in GOALS.items():
        change = percent_change(measured[name].median("cpu_seconds"), base)
        verdict = "met" if change <= goal else "NOT met"
        lines.append(
            f"- {name}: **{change:+.2f} %** CPU vs pristine 3008.3 "
            f"(goal <= +{goal:g} %): {verdict}"
        )
    return lines


def render(
    measured: dict[str, Measured], *, command: str, commits: str, loads: int
) -> str:
    """The report's Markdown."""
    pristine = measured[VARIANTS[0].name]
    on = measured["series, interfaces on"]
    first = on.runs[0]
    base_wall, base_cpu = pristine.median("seconds"), pristine.median("cpu_seconds")
    rows = []
    for variant in VARIANTS:
        m = measured[variant.name]
        rows.append(
            (
                variant.name,
                f"{m.median('seconds'):.4f}",
                m.spread("seconds"),
                f"{m.median('cpu_seconds'):.4f}",
                m.spread("cpu_seconds"),
                f"{percent_change(m.median('seconds'), base_wall):+.2f} %",
                f"{percent_change(m.median('cpu_seconds'), base_cpu):+.2f} %",
                f"{m.runs[0]['modules']} / {m.runs[0]['functions']}",
            )
        )
    apply_ms = 1000 * on.median("apply_seconds")
    lines = [
        "# Module interfaces: load-time cost against Salt 3008.3",
        "",
        report.environment(),
        f"Host grains: os={first['os']}, os_family={first['os_family']}. "
        f"Trees: {commits}. Reproduce: `{command}` (writes "
        f"`benchmarks/results/{NAME}.md` and `.json`).",
        "",
        *verdicts(measured),
        "",
        "## All execution modules",
        "",
        f"{len(on.runs)} runs; in each, every variant in a fresh process (the "
        f"order rotates from run to run) does its warm-up loads, then {loads} "
        "full loads, each a fresh `salt.loader.minion_mods` with "
        "`salt.loader.utils`, then `_load_all()`. Per variant: the median over "
        "runs of each run's median, and the lowest and highest run median "
        "(spread). CPU is the worker's process time, less sensitive to the "
        "other load on a shared machine than wall time. Interfaces applied "
        f"with them on: {', '.join(first['interfaces']) or 'none'}.",
        "",
        report.table(
            [
                "variant",
                "wall median s",
                "wall spread s",
                "CPU median s",
                "CPU spread s",
                "wall vs pristine",
                "CPU vs pristine",
                "modules / functions",
            ],
            rows,
        ),
        "",
        f"Time inside `LazyLoader._apply_interface` per full load (interfaces "
        f"on, both loaders `minion_mods` creates): median {apply_ms:.3f} ms = "
        f"{apply_ms / 10 / on.median('seconds'):.3f} % of the load. With "
        "interfaces off the loader does not import `salt.interfaces` and "
        "`in`/`get()` are `Mapping`'s, as in 3008.3: any difference between "
        "the first two rows is the machine's noise.",
        "",
        "## One declaring module, without `__virtual__`",
        "",
        "`salt.loader.raw_mod`: import and register one module (and, on, apply "
        "its interface), a fresh loader each time; median ms over runs of each "
        "run's median. A minion loads one `pkg` provider, so at most one of "
        "these rows is part of a full load.",
        "",
        report.table(
            ["module", *(f"{v.name} ms" for v in VARIANTS), "on vs pristine"],
            [
                (
                    module,
                    *(f"{measured[v.name].single_ms(module):.2f}" for v in VARIANTS),
                    f"{percent_change(on.single_ms(module), pristine.single_ms(module)):+.1f} %",
                )
                for module in DECLARING_MODULES
            ],
        ),
    ]
    return "\n".join(lines)


def run(opts: InterfacesOptions) -> Path:
    """Measure every variant ``opts.runs`` times, write the report, return its path."""
    runs, loads = opts.runs, opts.loads
    warmup, single_loads = opts.warmup, opts.single_loads
    measured = {v.name: Measured(v) for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="saltfleet-interfaces-load-") as tmp:
        work = Path(tmp)
        trees, commits = extract_pristine_and_series(work)
        for run_no in range(runs):
            for variant in rotated(VARIANTS, run_no):
                print(f"run {run_no + 1}/{runs}: {variant.name}", flush=True)
                where = work / f"{run_no}-{variant.tree}-{variant.option}"
                config = WorkerConfig(
                    workdir=str(where / "minion"),
                    module_interfaces=variant.option,
                    loads=loads,
                    warmup=warmup,
                    single_loads=single_loads,
                    single_modules=list(DECLARING_MODULES),
                )
                result = run_in_tree(
                    "benchmarks.interfaces_load_worker",
                    asdict(config),
                    trees[variant.tree],
                    where,
                )
                measured[variant.name].runs.append(result)
    command = opts.reproduce_command()
    report.write_data(
        NAME,
        {
            "command": command,
            "trees": commits,
            "variants": {name: m.runs for name, m in measured.items()},
        },
    )
    markdown = render(measured, command=command, commits=commits, loads=loads)
    return report.write(NAME, markdown)
