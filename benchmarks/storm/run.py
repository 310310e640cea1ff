"""Running the storm: the criteria micro-benchmark, one stack per variant,
the report.

:func:`run` times the criteria module, then runs each variant on a stack of
its own (:func:`run_variant`, a :class:`~benchmarks.storm.variant.StormRun`
on it) and writes the report.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.salt_trees import MASTER_MWORKERS, extract_pristine, rotated
from benchmarks.storm.accounting import (
    START_JITTER,
    STATE_DURATION,
    VariantResult,
)
from benchmarks.storm.decide import decide_benchmark
from benchmarks.storm.options import StormOptions
from benchmarks.storm.report import write_report
from benchmarks.storm.variant import StormRun
from harness.consumer import ConsumerSettings

if TYPE_CHECKING:
    from harness.stack import Stack


def run(options: StormOptions) -> Path:
    """Run the storm with each of ``options.variants``; return the report's path.

    .. code-block:: python

        run(StormOptions(jobs=400, variants=("on",), output_name="storm-long-400"))
    """
    from harness.fleet import cache_keys

    print(f"decide(): {options.decide_calls} calls per case", flush=True)
    decisions = decide_benchmark(options.minions, options.decide_calls)
    print(
        f"caching {options.minions} minion keys (only missing ones are made)",
        flush=True,
    )
    cache_keys(options.minions)
    results = []
    with tempfile.TemporaryDirectory(prefix="saltfleet-storm-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        pristine = None
        if "tuned" in options.variants:
            print("extracting pristine 3008.3 for the tuned master", flush=True)
            pristine = extract_pristine(work)
        for run_no in range(1, options.runs + 1):
            for name in rotated(options.variants, run_no - 1):
                print(
                    f"run {run_no} of {options.runs}, variant {name}: "
                    f"{options.minions} minions, {options.jobs} jobs",
                    flush=True,
                )
                tree = pristine if name == "tuned" else None
                results.append(run_variant(name, options, work, tree, run_no))
    return write_report(results, decisions, options)


def run_variant(
    name: str,
    options: StormOptions,
    workdir: Path,
    salt_tree: Path | None = None,
    run_no: int = 1,
) -> VariantResult:
    """Run ``run_no`` of one variant on a stack of its own under ``workdir``
    (removed after it); its master runs the ``salt`` in ``salt_tree`` if one
    is given (the installed one else)."""
    limiter = options.rate_limiting() if name == "on" else None
    consumer = consumer_settings(name, options)
    stack_root = workdir / f"stack-{name}-{run_no}"
    with _fleet_stack(name, options, stack_root, consumer, salt_tree) as stack:
        result = StormRun(name, limiter, options, stack, consumer, run_no).run()
    shutil.rmtree(stack_root, ignore_errors=True)
    return result


def consumer_settings(name: str, options: StormOptions) -> ConsumerSettings | None:
    """The event consumer of variant ``name``'s master; None with
    ``consumer_rate`` 0."""
    if not options.consumer_rate:
        return None
    return ConsumerSettings(rate=options.consumer_rate, name=f"storm-{name}")


def _fleet_stack(
    name: str,
    options: StormOptions,
    root: Path,
    consumer: ConsumerSettings | None,
    salt_tree: Path | None,
) -> Stack:
    """Variant ``name``'s master (the consumer engine on it, the ``salt`` of
    ``salt_tree`` if given) and the fleet, unstarted."""
    from harness.fleet import (
        DEFAULT_EXEMPT_FUNCTIONS,
        FleetConfig,
        LatencySpec,
        TimingModel,
    )
    from harness.stack import fleet_stack

    timing = TimingModel(
        default_latency=LatencySpec(*START_JITTER),
        state_duration=LatencySpec(*STATE_DURATION),
        # every variant's minions alike, whether or not its master limits
        max_concurrent_jobs=options.minion_jobs,
        # pings never wait on the minion: they measure the master
        exempt_functions=DEFAULT_EXEMPT_FUNCTIONS | {"test.ping"},
    )
    fleet = FleetConfig(
        count=options.minions,
        processes=options.processes,
        startup_pillar=False,
        # a storm measures the publish and return path; a pillar compile per
        # highstate per minion would make it a pillar benchmark (and did not
        # exist when the earlier storm reports were measured)
        state_pillar=False,
        timing=timing,
    )
    return fleet_stack(
        options.minions,
        root=root,
        # an exempt pool takes its share of the same MASTER_MWORKERS: equal
        # masters
        master_opts=options.master_options(name),
        fleet=fleet,
        worker_threads=MASTER_MWORKERS,
        consumer=consumer,
        master_salt_tree=salt_tree,
    )
