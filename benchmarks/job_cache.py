"""``job-cache`` benchmark: master CPU per minion return stored in the job cache.

For every minion return an MWorker runs ``salt.utils.job.store_job``, which
with the default ``master_job_cache: local_cache`` writes the return into
the job's directory. On 3008.3 it also rewrites the job's jid file
(``prep_jid``) and reads the job's load back (``get_load``: the load, the
minions list and a ``glob`` over the job's directory, which holds one
directory per minion that has returned): work that grows with the returns
already stored, so a job of N minions costs O(N^2).

Two variants, each run in a fresh process per job with its Salt tree first
on ``PYTHONPATH`` (:mod:`benchmarks.job_cache_worker`): ``pristine 3008.3``
and ``series``. Each process publishes a warm-up job and stores its
returns, then publishes a job of N minions as the master does and stores
its N returns one after the other, measuring its own CPU time over them.
The runs rotate the variants' order; the report gives the median over runs
of CPU ms per return at each job size, and its range.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from benchmarks import report
from benchmarks.hostspeed import Probe, probe_cell, probe_words, probed
from benchmarks.job_cache_worker import JOB_CACHE, JobCacheConfig
from benchmarks.salt_trees import (
    Variant,
    extract_pristine_and_series,
    rotated,
    run_in_tree,
)
from benchmarks.storm.goals import ratio_text

if TYPE_CHECKING:
    from benchmarks.plain_options import JobCacheOptions

VARIANTS: Final = (
    Variant("pristine 3008.3", "pristine", None),
    Variant("series", "series", None),
)
#: series / pristine CPU per return at :data:`GOAL_MINIONS`, at most
GOAL: Final = 0.5
GOAL_MINIONS: Final = 1000


@dataclass
class JobRun:
    """One counted job of one variant: CPU ms per return over all its
    returns and over its last tenth, and the box probe around it."""

    run: int  # 1-based
    minions: int
    variant: str
    ms_per_return: float
    last_ms_per_return: float
    probe: Probe = field(default_factory=Probe)


def of_result(
    run: int, minions: int, variant: str, result: dict[str, float], probe: Probe
) -> JobRun:
    """A worker's ``result`` (CPU seconds and returns) as a :class:`JobRun`."""
    return JobRun(
        run=run,
        minions=minions,
        variant=variant,
        ms_per_return=1000 * result["cpu_s"] / result["returns"],
        last_ms_per_return=1000 * result["last_cpu_s"] / result["last_returns"],
        probe=probe,
    )


def runs_of(
    jobs: Sequence[JobRun], variant: str, minions: int, *, last: bool = False
) -> report.Runs:
    """CPU ms per return of ``variant`` at ``minions``, one value per run
    (over the last tenth of each job if ``last``)."""
    return report.Runs(
        job.last_ms_per_return if last else job.ms_per_return
        for job in jobs
        if job.variant == variant and job.minions == minions
    )


def ratio(jobs: Sequence[JobRun], minions: int) -> float | None:
    """Series / pristine median CPU per return at ``minions``; None if
    either was not measured there."""
    pristine, series = (runs_of(jobs, v.name, minions) for v in VARIANTS)
    if not pristine or not series:
        return None
    return series.median / pristine.median


def goal_line(jobs: Sequence[JobRun]) -> str:
    """The goal's verdict: series / pristine at :data:`GOAL_MINIONS` at
    most :data:`GOAL`."""
    head = f"- series / pristine CPU per return at {GOAL_MINIONS} minions: "
    at_goal = ratio(jobs, GOAL_MINIONS)
    if at_goal is None:
        sizes = sorted({job.minions for job in jobs})
        return head + (
            f"not decided, no job of {GOAL_MINIONS} minions measured (job sizes: "
            f"{', '.join(str(s) for s in sizes)})"
        )
    # as the storm's goals word a ratio (series as "on", pristine as "off")
    words, _ = ratio_text(at_goal, 1.0, GOAL)
    return head + words


def run(opts: JobCacheOptions) -> Path:
    """Run the benchmark; return the report's path."""
    jobs: list[JobRun] = []
    with tempfile.TemporaryDirectory(prefix="saltfleet-job-cache-") as tmp:
        work = Path(tmp)
        trees, commits = extract_pristine_and_series(work)
        for run_no in range(opts.runs):
            for minions in opts.minions:
                for variant in rotated(VARIANTS, run_no):
                    label = (
                        f"run {run_no + 1} of {opts.runs}: {variant.name}, "
                        f"a job of {minions} minions"
                    )
                    print(label, flush=True)
                    where = work / f"{run_no}-{minions}-{variant.tree}"
                    config = JobCacheConfig(
                        workdir=str(where), minions=minions, warmup=opts.warmup
                    )
                    with probed("   ") as probe:
                        result = run_in_tree(
                            "benchmarks.job_cache_worker",
                            asdict(config),
                            trees[variant.tree],
                            where,
                        )
                    job = of_result(run_no + 1, minions, variant.name, result, probe)
                    jobs.append(job)
                    print(
                        f"    {job.ms_per_return:.2f} CPU ms per return, "
                        f"{job.last_ms_per_return:.2f} over the last tenth",
                        flush=True,
                    )
    return write_report(jobs, opts, commits=commits)


def summary_rows(jobs: Sequence[JobRun], sizes: Sequence[int]) -> list[tuple[str, ...]]:
    """One row per job size and variant: medians over runs, range, ratio."""
    rows: list[tuple[str, ...]] = []
    for minions in sorted(sizes):
        base = runs_of(jobs, VARIANTS[0].name, minions)
        for v in VARIANTS:
            ms = base if v is VARIANTS[0] else runs_of(jobs, v.name, minions)
            last = runs_of(jobs, v.name, minions, last=True)
            rows.append(
                (
                    str(minions),
                    v.name,
                    f"{ms.median:.2f}",
                    f"{min(ms):.2f}-{max(ms):.2f}",
                    f"{ms.median / base.median:.3f}",
                    f"{last.median:.2f}",
                    f"{minions * ms.median / 1000:.2f}",
                )
            )
    return rows


def write_report(jobs: list[JobRun], opts: JobCacheOptions, *, commits: str) -> Path:
    """Write ``results/<output_name>.md`` (+ .json, .png); return its path."""
    name = opts.output_name
    report.write_data(name, {"jobs": jobs})
    plot = cpu_plot(jobs, opts)
    lines = [
        *report.trees_header(
            "Job cache: master CPU per minion return",
            name,
            opts.reproduce_command(),
            commits,
        ),
        "## Method",
        "",
        "What an MWorker runs for every minion return, "
        "`salt.utils.job.store_job(opts, load, event=None, mminion=...)`, with "
        f"Salt's default `master_job_cache: {JOB_CACHE}`, timed in a process "
        "of its own per variant, job size and run, its Salt tree first on "
        "`PYTHONPATH`. The process makes a master cache in a temporary "
        "directory, builds a `MasterMinion` without states, renderers and "
        "matchers (a master's worker builds its own without the first two), "
        "publishes a job as the master does (`prep_jid`, then "
        "`save_load` with the targeted minions' list), stores the returns of "
        f"a warm-up job of {opts.warmup} minions, then publishes the counted "
        "job of N minions (`test.sleep 1` to `*`) and stores its N returns "
        "(`return: True`, `retcode: 0`) one after the other, measuring its "
        "own CPU time over them: CPU seconds, user and system, not wall time, "
        "so the other load on this shared machine does not count. Not "
        "counted: decrypting the request and firing the return onto the "
        "event bus (`event=None`). Afterwards `get_jid` must give all N "
        "returns and `get_load` still the publication's load (its `fun`, "
        "`tgt`, `tgt_type`, `arg` and the N minions); a worker that finds "
        "otherwise fails the run, so every number below comes from a job "
        f"whose cache was whole. {opts.runs} runs, each running every job "
        "size and the variants in a rotated order; the table gives the "
        "median over runs and the runs' range.",
        "",
        "On 3008.3, `store_job` calls for every return `prep_jid` (rewrites "
        "the job's jid file) and `get_load` (reads the load and the minions "
        "list, and lists the job's directory, which holds one directory per "
        "minion that has returned) before `returner` writes the return: the "
        "work per return grows with the returns already stored. The column "
        "`last tenth` gives the CPU per return over the last tenth of each "
        "job, the returns that find the most stored; `CPU s per job` is N "
        "times the median. No 3008.3 setting makes this work cheaper: an "
        "informed operator's alternatives are to turn the master's job cache "
        "off (`job_cache: False`, and lose `jobs.lookup_jid`) or to send "
        "the returns to another `master_job_cache`, neither measured here.",
        "",
        report.table(
            [
                "minions",
                "variant",
                "CPU ms / return (median)",
                "range over runs",
                "x pristine",
                "last tenth, CPU ms / return",
                "CPU s per job",
            ],
            summary_rows(jobs, opts.minions),
        ),
        "",
        "## Goal",
        "",
        goal_line(jobs),
        "",
        "## Runs",
        "",
        "Each counted job in the order it ran. " + probe_words() + " Here the "
        "variant's stack is its worker process.",
        "",
        report.table(
            [
                "run",
                "minions",
                "variant",
                "CPU ms / return",
                "last tenth",
                "box probe ms before / after",
            ],
            [
                (
                    str(job.run),
                    str(job.minions),
                    job.variant,
                    f"{job.ms_per_return:.2f}",
                    f"{job.last_ms_per_return:.2f}",
                    probe_cell(job.probe.before_ms, job.probe.after_ms),
                )
                for job in jobs
            ],
        ),
        "",
        f"![CPU per return by job size]({plot.name})",
    ]
    return report.write(name, "\n".join(lines))


def cpu_plot(jobs: Sequence[JobRun], opts: JobCacheOptions) -> Path:
    """The median CPU ms per return of each variant against the job size,
    the runs' range as error bars."""
    plt = report.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    sizes = sorted(opts.minions)
    for v in VARIANTS:
        runs = [runs_of(jobs, v.name, minions) for minions in sizes]
        medians = [r.median for r in runs]
        ax.errorbar(
            sizes,
            medians,
            yerr=[
                [m - min(r) for m, r in zip(medians, runs, strict=True)],
                [max(r) - m for m, r in zip(medians, runs, strict=True)],
            ],
            marker="o",
            capsize=3,
            label=v.name,
        )
    ax.set_xlabel("minions in the job")
    ax.set_ylabel("master CPU ms per return")
    ax.set_ylim(bottom=0)
    ax.set_title(f"store_job CPU per return (median of {opts.runs} runs)")
    ax.grid(alpha=0.3)
    ax.legend()
    return report.save_figure(fig, opts.output_name)
