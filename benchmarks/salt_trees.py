"""Salt trees that benchmarks compare: the pristine release and the series.

``salt/src`` is a git repository (``nox -s vendor``): its tag
``upstream/<version>`` is the unpatched sdist, ``HEAD`` the whole series. A
benchmark extracts both and runs one worker process per tree with the tree
first on ``PYTHONPATH``, so each measures the Salt it names.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from benchmarks.options import (
    BenchOptions,
    FromSalt,
    minions_option,
    names_in_order,
    option,
    processes_option,
)
from harness.argtypes import non_negative, positive, rate, seconds
from harness.errors import HarnessError
from harness.ratelimit import RateLimiting, salt_slice_defaults
from harness.salttree import Layout, extract_tar, read_upstream

PROJECT_ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


@dataclass(frozen=True)
class Variant:
    """A Salt tree and the value of the option a benchmark varies."""

    name: str
    tree: str  # "pristine" or "series"
    option: bool | None  # None: the tree has no such option

    @classmethod
    def of_option(cls, option: str) -> tuple[Variant, Variant, Variant]:
        """Pristine 3008.3, then the series with ``option`` off and on: the
        variants of a benchmark that measures what one option costs."""
        return (
            cls("pristine 3008.3", "pristine", None),
            cls(f"series, {option} off", "series", False),
            cls(f"series, {option} on", "series", True),
        )


def extract_tree(src: Path, ref: str, dest: Path) -> Path:
    """``salt/`` of ``ref`` in the git repository ``src``, under ``dest``,
    byte-compiled as an installed package is (pip compiles on install)."""
    dest.mkdir(parents=True)
    proc = subprocess.run(
        ["git", "-C", str(src), "archive", "--format=tar", ref, "salt"],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise HarnessError(
            f"cannot read {ref} from {src}: {proc.stderr.decode().strip()} "
            "(run `nox -s vendor`)"
        )
    archive = dest / "salt.tar"
    archive.write_bytes(proc.stdout)
    with tarfile.open(archive) as tar:
        extract_tar(tar, dest)
    archive.unlink()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(dest / "salt")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return dest


def describe_commits(src: Path, tag: str) -> str:
    """Which commits of ``salt/src`` were measured."""
    names = []
    for ref in (tag, "HEAD"):
        out = subprocess.run(
            ["git", "-C", str(src), "log", "-1", "--format=%h %s", ref],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        names.append(f"`{ref}` = {out or '?'}")
    return "; ".join(names)


#: the masters the storm and the load compare, each with the same number of
#: MWorkers: rate limiting ``off`` (one pool) and ``on`` (its exempt
#: functions in a pool of their own), ``pools`` (on's function-routed pools
#: without the limiter) and ``tuned`` (pristine 3008.3 with
#: :func:`tuned_options`)
MASTER_VARIANTS: Final = ("off", "on", "pools", "tuned")


#: MWorkers of every master the storm and the load compare, in all: an
#: exempt pool takes its share of them (equal masters)
MASTER_MWORKERS: Final = 4

#: MWorkers of the exempt functions' pool by default: one, which also
#: stores every presence return, lost nearly every ping sent during a
#: storm's submissions in 5 of 5 runs and every ping of 2 of them; two
#: answered 96.0 % of 600 s against 67.6 % (medians of 3,
#: ``benchmarks/results/storm-100-round-trip-analysis.md``)
EXEMPT_POOL: Final = 2


def _exempt_pool(word: str) -> int:
    """An exempt pool that leaves the default pool at least one of the
    :data:`MASTER_MWORKERS` (argparse type)."""
    count = non_negative(word)
    if count >= MASTER_MWORKERS:
        raise argparse.ArgumentTypeError(
            f"invalid exempt pool {count}: every master has {MASTER_MWORKERS} "
            f"MWorkers in all, so at most {MASTER_MWORKERS - 1} (the default "
            "pool keeps one)"
        )
    return count


def limit_option(name: str, text: str) -> Any:
    """A field (a positive number) whose default is Salt's
    ``rate_limiting:<name>``, read from Salt, never restated."""
    return option(FromSalt(lambda: getattr(RateLimiting(), name)), positive, text)


def slice_min_targets_option() -> Any:
    """The ``slice_min_targets`` field: the smallest slice the limiter-on
    master publishes a job in; 0 turns slices off."""
    return option(
        100,
        non_negative,
        "the limiter-on master publishes a job in slices of at least this many "
        "minions as its budget frees (rate_limiting:slices:min_targets); 0: no "
        "slices, every job to all its minions at once",
    )


def slice_target_delay_option() -> Any:
    """The ``slice_target_delay`` field: the wait the limiter-on master sizes
    its budget for, Salt's default unless given; 0 fixes the budget."""
    return option(
        FromSalt(lambda: salt_slice_defaults()["target_delay"]),
        seconds,
        "seconds a return may wait, which sizes the limiter-on master's budget "
        "(rate_limiting:slices:target_delay; default: Salt's, %(default)s); 0: "
        "null, a fixed budget of --max-master-jobs",
    )


def slice_max_rate_option() -> Any:
    """The ``slice_max_rate`` field: minions a second the limiter-on
    master's slices go out to at most; 0: no such bound (Salt's default)."""
    return option(
        0.0,
        rate,
        "minions a second the limiter-on master's slices go out to at most, "
        "whatever its budget: the bound for an event consumer that must keep "
        "up (rate_limiting:slices:max_rate); 0: none (Salt's default)",
    )


def max_master_jobs_option() -> Any:
    """The ``max_master_jobs`` field: the limiter-on master's budget, Salt's
    default unless given."""
    return limit_option(
        "max_master_jobs",
        "rate_limiting:max_master_jobs of the limiter-on master (default: "
        "Salt's, %(default)s)",
    )


def exempt_pool_option() -> Any:
    """The ``exempt_pool`` field: the MWorkers of the exempt functions' own
    pool on the limiter-on and ``pools`` masters."""
    return option(
        EXEMPT_POOL,
        _exempt_pool,
        "MWorkers of a worker pool of their own for the exempt functions "
        "(test.ping, saltutil.find_job, ...; worker_pools:<pool>:functions) on "
        "the limiter-on and pools masters, taken from the "
        f"{MASTER_MWORKERS} every master has; 0: no such pool",
    )


def variants_option(
    both: tuple[str, str], more: tuple[tuple[str, str], ...] = ()
) -> Any:
    """The ``variants`` field of a benchmark that compares
    :data:`MASTER_VARIANTS` and the variants of ``more`` (name, what it is):
    a comma-separated list in run order, or ``both``, the default, for the
    two of ``both``."""
    return option(
        both,
        names_in_order((*MASTER_VARIANTS, *(name for name, _ in more)), {"both": both}),
        "comma-separated, in run order: off (rate limiting off, one pool), on "
        "(the limiter), pools (on's worker pools without the limiter), tuned "
        "(pristine 3008.3: async MWorkers, a publish pool)"
        + "".join(f", {name} ({what})" for name, what in more)
        + f"; both: {','.join(both)} (default: both)",
        metavar="VARIANTS",
    )


def tuned_options(worker_threads: int) -> dict[str, Any]:
    """The master options an operator who read 3008.3's documentation would
    set against a storm of jobs on pristine 3008.3: asynchronous MWorkers and
    a worker pool of its own for ``publish`` requests (3008.3 routes pools by
    request command), ``worker_threads`` MWorkers in all. ``key_cache:
    sched`` is left out: on 3008.3 it has no effect over ZeroMQ (the
    maintenance process writes the cache where ``Key.list_keys`` does not
    look for it; ``docs/upstream/sep-rate-limiting.md``; the series'
    PR V fixes it)."""
    return {
        "master_async_mworker": True,
        "worker_pools": {
            "publish": {"worker_count": 1, "commands": ["publish"]},
            "default": {"worker_count": worker_threads - 1, "commands": ["*"]},
        },
    }


def extract_pristine(work: Path) -> Path:
    """Pristine 3008.3 (``salt/UPSTREAM``'s tag of ``salt/src``), extracted
    under ``work`` as ``pristine``: the directory that holds its ``salt``."""
    layout = Layout.of_project()
    tag = read_upstream(layout.upstream_file).tag
    return extract_tree(layout.src_dir, tag, work / "pristine")


def extract_pristine_and_series(work: Path) -> tuple[dict[str, Path], str]:
    """Pristine 3008.3 (:func:`extract_pristine`) and the series (``HEAD``)
    of ``salt/src``, extracted under ``work`` as ``pristine`` and ``series``,
    and which commits they are (:func:`describe_commits`)."""
    layout = Layout.of_project()
    trees = {
        "pristine": extract_pristine(work),
        "series": extract_tree(layout.src_dir, "HEAD", work / "series"),
    }
    tag = read_upstream(layout.upstream_file).tag
    return trees, describe_commits(layout.src_dir, tag)


def run_in_tree(
    module: str, config: dict[str, Any], salt_tree: Path, workdir: Path
) -> dict[str, Any]:
    """Run ``python -m MODULE CONFIG RESULT`` with ``salt_tree`` first on
    ``PYTHONPATH``; return RESULT's JSON.

    The worker writes the ``salt_file`` it imported into RESULT, and it must
    lie in ``salt_tree``: a Salt installed in the environment would otherwise
    be measured under the tree's name.
    """
    workdir.mkdir(parents=True)
    config_file = workdir / "config.json"
    result_file = workdir / "result.json"
    config_file.write_text(json.dumps(config))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(salt_tree), str(PROJECT_ROOT)]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", module, str(config_file), str(result_file)],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise HarnessError(f"{module} failed ({salt_tree}):\n{tail}")
    result: dict[str, Any] = json.loads(result_file.read_text())
    if not str(result["salt_file"]).startswith(str(salt_tree)):
        raise HarnessError(
            f"the worker imported Salt from {result['salt_file']}, not {salt_tree}"
        )
    return result


def rotated(items: Sequence[T], run: int) -> list[T]:
    """``items`` rotated by ``run``, so no variant always goes first."""
    shift = run % len(items)
    return [*items[shift:], *items[:shift]]


#: the masters a comparison runs unless told otherwise, in this order
ON_THEN_OFF: Final = ("on", "off")


@dataclass(frozen=True)
class MasterComparison(BenchOptions):
    """The options every benchmark that compares masters side by side has
    first (the storm, the load): the fleet, the masters in run order (a
    subclass that runs another pair by default declares ``variants`` again
    with its own), the limiter-on master's budget, its slices and the exempt
    pool."""

    minions: int = minions_option()
    processes: int = processes_option()
    variants: tuple[str, ...] = variants_option(ON_THEN_OFF)
    max_master_jobs: int = max_master_jobs_option()
    exempt_pool: int = exempt_pool_option()
    slice_min_targets: int = slice_min_targets_option()
    slice_target_delay: float = slice_target_delay_option()
    slice_max_rate: float = slice_max_rate_option()

    def __post_init__(self) -> None:
        """Refuse ``pools``, or a variant whose master is ``pools``, without
        an exempt pool: its master would be off's."""
        for name in self.variants:
            if self.master_of(name) == "pools" and not self.exempt_pool:
                raise ValueError(
                    f"--variants {name} needs an exempt pool (--exempt-pool 1 "
                    "or more): without one its master is the limiter-off master"
                )

    @staticmethod
    def master_of(variant: str) -> str:
        """The master of :data:`MASTER_VARIANTS` that ``variant`` runs: a
        subclass with variants of its own maps them; here, itself."""
        return variant

    def rate_limiting(self) -> RateLimiting:
        """The ``rate_limiting`` of the limiter-on master."""
        return RateLimiting(
            max_master_jobs=self.max_master_jobs, exempt_pool_workers=self.exempt_pool
        ).with_slices(
            self.slice_min_targets, self.slice_target_delay, self.slice_max_rate
        )
