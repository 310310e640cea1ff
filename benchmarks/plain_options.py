"""The options of the benchmarks that are one module each (storm and pkgstates
have packages with an ``options`` module of their own).

Each class follows :mod:`benchmarks.options`: its field defaults are the
benchmark's defaults, and nowhere else; the CLI registers one flag per field,
the benchmark's ``run`` takes the value, and the report's "Reproduce" line is
:meth:`~benchmarks.options.BenchOptions.reproduce_command`, naming only what
differs from the defaults.

.. code-block:: python

    PillarCompileOptions(fleet=40, runs=1).reproduce_command()
    # 'nox -s bench -- pillar-compile --fleet 40 --runs 1'
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import ClassVar

from benchmarks.options import (
    BenchOptions,
    check_runs,
    minions_option,
    option,
    processes_option,
    report_name,
    runs_option,
)
from benchmarks.pillar import DEFAULT_VARIANTS as PILLAR_VARIANTS
from benchmarks.pillar import variant_list
from harness.argtypes import positive, positive_seconds


@dataclass(frozen=True)
class MinionsOptions(BenchOptions):
    """``minions``: start-up, fan-out and footprint of simulated minions."""

    NAME: ClassVar[str] = "minions"
    minions: int = minions_option()
    processes: int = processes_option(1)
    rounds: int = option(3, positive, "runs of each fan-out command")


@dataclass(frozen=True)
class PillarOptions(BenchOptions):
    """``pillar``: file pillars vs PostgreSQL on a fleet, and the ext_pillar lookup."""

    NAME: ClassVar[str] = "pillar"
    minions: int = minions_option()
    rounds: int = option(10, positive, "pillar.items and test.ping rounds per variant")
    workers: int = option(4, positive, "the master's worker_threads")
    micro_calls: int = option(2000, positive, "ext_pillar lookups timed per module")
    variants: tuple[str, ...] = option(
        PILLAR_VARIANTS,
        lambda value: tuple(variant_list(value)),
        "comma-separated, in run order: SOURCE[+reuse|+cache], SOURCE one of "
        "files, files-fair, db-function, db-queries, db-upstream (default: "
        + ",".join(PILLAR_VARIANTS)
        + ")",
    )
    output_name: str = option(
        "pillar",
        report_name,
        "report files in benchmarks/results/: NAME.md, NAME.json, NAME-rounds.png",
    )


@dataclass(frozen=True)
class InterfacesOptions(BenchOptions):
    """``interfaces``: loading every execution module with and without interfaces."""

    NAME: ClassVar[str] = "interfaces"
    runs: int = runs_option()
    loads: int = option(10, positive, "full loads per run")
    warmup: int = option(2, positive, "full loads before the counted ones")
    single_loads: int = option(20, positive, "loads of each single module per run")

    def __post_init__(self) -> None:
        check_runs(self.runs)


@dataclass(frozen=True)
class QueryOptions(BenchOptions):
    """``query``: the query runner against cache.grains, names, a live fleet."""

    NAME: ClassVar[str] = "query"
    minions: int = minions_option(text="minions in the cache")
    rounds: int = option(5, positive, "timed rounds of each query")
    running: int = option(900, positive, "simulated minions (live part)")
    stopped: int = option(
        100, positive, "minions with accepted keys and cached grains but no process"
    )
    timeout: int = option(15, positive, "seconds the live part's jobs may take")
    no_live: bool = option(False, None, "skip the part that starts a stack")


@dataclass(frozen=True)
class PillarCompileOptions(BenchOptions):
    """``pillar-compile``: master CPU per ``_pillar`` request, pristine vs series."""

    NAME: ClassVar[str] = "pillar-compile"
    fleet: int = option(1000, positive, "minions in top.sls")
    requests: int = option(200, positive, "requests counted per run")
    warmup: int = option(5, positive, "requests before the counted ones")
    runs: int = runs_option()

    def __post_init__(self) -> None:
        check_runs(self.runs)
        if self.requests + self.warmup > self.fleet:
            raise ValueError(
                f"--requests {self.requests} + --warmup {self.warmup} exceed "
                f"--fleet {self.fleet}"
            )


@dataclass(frozen=True)
class RouterOptions(BenchOptions):
    """``router``: pool router CPU per request, ``functions`` routes vs without."""

    NAME: ClassVar[str] = "router"
    runs: int = runs_option(5, of="layout")
    requests: int = option(2000, positive, "requests per layout and run")

    def __post_init__(self) -> None:
        check_runs(self.runs)


def whole_numbers(
    value: str, *, least: int, what: str, example: str
) -> tuple[int, ...]:
    """``value`` as comma-separated whole numbers, each ``least`` or more
    and none twice, in the order given (an argparse type's body: ``what``
    they count and an ``example`` make its error)."""
    try:
        parsed = tuple(int(word) for word in value.split(","))
    except ValueError:
        parsed = ()
    if not parsed or min(parsed) < least or len(set(parsed)) != len(parsed):
        raise argparse.ArgumentTypeError(
            f"{value!r}: want whole numbers of {what}, {least} or more, "
            f"comma-separated, each once (e.g. {example})"
        )
    return parsed


def rates(value: str) -> tuple[int, ...]:
    """``--rates``: event rates a second, comma-separated, each 0 or more,
    no rate twice."""
    return whole_numbers(
        value, least=0, what="events a second", example="0,100,200,400"
    )


def job_sizes(value: str) -> tuple[int, ...]:
    """``--minions`` of ``job-cache``: minions per job, comma-separated,
    each 1 or more, no size twice."""
    return whole_numbers(value, least=1, what="minions", example="100,1000")


@dataclass(frozen=True)
class ClientDrainOptions(BenchOptions):
    """``client-drain``: a LocalClient's lag on a busy bus, pristine vs series."""

    NAME: ClassVar[str] = "client-drain"
    rates: tuple[int, ...] = option(
        (0, 100, 200, 400),
        rates,
        "events a second of other tags fired onto the bus, comma-separated "
        "(default: 0,100,200,400)",
    )
    delay: float = option(
        2.0, positive_seconds, "seconds each minion takes to answer a ping"
    )
    pings: int = option(4, positive, "pings per variant, rate and run")
    runs: int = runs_option(of="rate")

    def __post_init__(self) -> None:
        check_runs(self.runs)


@dataclass(frozen=True)
class JobCacheOptions(BenchOptions):
    """``job-cache``: master CPU per return stored in the job cache, pristine vs series."""

    NAME: ClassVar[str] = "job-cache"
    minions: tuple[int, ...] = option(
        (100, 1000),
        job_sizes,
        "minions of a job, one counted job per size, comma-separated "
        "(default: 100,1000)",
    )
    warmup: int = option(
        50, positive, "returns of a warm-up job before the counted one"
    )
    runs: int = runs_option(of="variant and job size")
    output_name: str = option(
        "job-cache",
        report_name,
        "report files in benchmarks/results/: NAME.md, NAME.json, NAME.png",
    )

    def __post_init__(self) -> None:
        check_runs(self.runs)
