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

from benchmarks.salt_trees import (
    MASTER_MWORKERS,
    PROJECT_ROOT,
    extract_pristine,
    rotated,
)
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

#: the daemons' logs of every run, per report name, replaced by the next storm
#: of that name
LOGS_ROOT = PROJECT_ROOT / ".saltfleet" / "storm"


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
    logs = LOGS_ROOT / options.output_name
    shutil.rmtree(logs, ignore_errors=True)  # the previous storm's
    print(f"daemon logs in {logs}", flush=True)
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
                results.append(run_variant(name, options, work, tree, run_no, logs))
    return write_report(results, decisions, options)


def run_variant(
    name: str,
    options: StormOptions,
    workdir: Path,
    salt_tree: Path | None = None,
    run_no: int = 1,
    logs: Path | None = None,
) -> VariantResult:
    """Run ``run_no`` of one variant on a stack of its own under ``workdir``
    (removed after it); its master runs the ``salt`` in ``salt_tree`` if one
    is given (the installed one else). The daemons' logs are kept in
    ``logs/<variant>-<run_no>`` if ``logs`` is given."""
    limiter = options.rate_limiting() if name == "on" else None
    consumer = consumer_settings(name, options)
    stack_root = workdir / f"stack-{name}-{run_no}"
    logs_dir = logs / f"{name}-{run_no}" if logs is not None else None
    with _fleet_stack(
        name, options, stack_root, consumer, salt_tree, logs_dir
    ) as stack:
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
    logs_dir: Path | None = None,
) -> Stack:
    """Variant ``name``'s master (the consumer engine on it, the ``salt`` of
    ``salt_tree`` if given) and the fleet, unstarted; their logs are copied
    into ``logs_dir`` when the stack stops, if given."""
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
        logs_dir=logs_dir,
    )
