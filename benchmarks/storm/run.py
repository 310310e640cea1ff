"""Running the storm: the criteria micro-benchmark, one stack per variant,
the report.

:func:`run` times the criteria module, then runs each variant on a stack of
its own (:func:`run_variant`, a :class:`~benchmarks.storm.variant.StormRun`
on it) and writes the report. After every run (each variant once) the runs
finished so far are kept in ``.saltfleet/storm/NAME/runs.json``: a storm of
three runs at 200 jobs takes hours, and ``--resume`` goes on from the last
finished run of an interrupted one (:func:`resumed_runs`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from benchmarks.hostspeed import probed
from benchmarks.options import flag
from benchmarks.report import RESULTS, data_json, from_plain
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
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.stack import Stack

#: the daemons' logs of every run, per report name, replaced by the next storm
#: of that name
LOGS_ROOT = PROJECT_ROOT / ".saltfleet" / "storm"
#: the finished runs of a storm, in its logs directory
RUNS_FILE: Final = "runs.json"
#: what a storm's numbers depend on, beside the machine: the series, the
#: schema, the stack, the simulator, the benchmark itself and the pins
MEASURED_CODE: Final = (
    "pyproject.toml",
    "salt/UPSTREAM",
    "patches",
    "sql",
    "harness",
    "evil_minions",
    "benchmarks",
)
#: the options a resumed storm may give otherwise than the one it goes on from
MAY_CHANGE: Final = frozenset({"runs", "resume"})
#: the files of MEASURED_CODE that count (no suffix: ``patches/series``,
#: ``salt/UPSTREAM``); an editor's swap file or a patch's ``.orig`` does not
MEASURED_SUFFIXES: Final = frozenset({".py", ".patch", ".sql", ".toml", ".yml", ""})


def run(options: StormOptions) -> Path:
    """Run the storm with each of ``options.variants``; return the report's path.

    .. code-block:: python

        run(StormOptions(jobs=400, variants=("on",), output_name="storm-long-400"))
    """
    from harness.fleet import cache_keys

    logs = LOGS_ROOT / options.output_name
    # once, before the first run: what the kept runs measured, even if the
    # tree is edited while the storm runs
    code = code_fingerprint()
    if options.resume:
        results = resumed_runs(options, logs, code)
    else:
        results = []
        _start_again(logs)
    first = max((r.run for r in results), default=0) + 1
    print(f"decide(): {options.decide_calls} calls per case", flush=True)
    decisions = decide_benchmark(options.minions, options.decide_calls)
    print(
        f"caching {options.minions} minion keys (only missing ones are made)",
        flush=True,
    )
    cache_keys(options.minions)
    print(f"daemon logs in {logs}", flush=True)
    with tempfile.TemporaryDirectory(prefix="saltfleet-storm-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        pristine = None
        # a resumed storm with all its runs kept only writes the report
        if "tuned" in options.variants and first <= options.runs:
            print("extracting pristine 3008.3 for the tuned master", flush=True)
            pristine = extract_pristine(work)
        for run_no in range(first, options.runs + 1):
            for name in rotated(options.variants, run_no - 1):
                print(
                    f"run {run_no} of {options.runs}, variant {name}: "
                    f"{options.minions} minions, {options.jobs} jobs",
                    flush=True,
                )
                tree = pristine if name == "tuned" else None
                results.append(run_variant(name, options, work, tree, run_no, logs))
            save_runs(results, options, logs, code)
            if run_no < options.runs:
                print(
                    f"run {run_no} of {options.runs} kept in {logs / RUNS_FILE}; "
                    "if this storm is stopped, the same command with --resume "
                    "goes on from here",
                    flush=True,
                )
    return write_report(results, decisions, options)


def _start_again(logs: Path) -> None:
    """Clear the previous storm of this name, its kept runs set aside as
    ``NAME.previous-runs.json`` beside it: a storm started without
    ``--resume`` by mistake does not throw away hours of runs."""
    kept = logs / RUNS_FILE
    if kept.exists():
        aside = logs.with_name(f"{logs.name}.previous-{RUNS_FILE}")
        kept.replace(aside)
        print(
            f"the previous storm's finished runs are set aside in {aside}; "
            f"to go on with them instead, stop this storm, run `mkdir -p {logs} "
            f"&& mv {aside} {kept}` and start it again with --resume",
            flush=True,
        )
    shutil.rmtree(logs, ignore_errors=True)  # the previous storm's logs


def code_fingerprint(root: Path = PROJECT_ROOT) -> str:
    """A digest of the files of :data:`MEASURED_CODE` under ``root`` as they
    are on disk (committed or not), the reports in ``benchmarks/results``
    and files of other suffixes than :data:`MEASURED_SUFFIXES` left out."""
    digest = hashlib.sha256()
    for top in MEASURED_CODE:
        path = root / top
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in files:
            if (
                not file.is_file()
                or file.suffix not in MEASURED_SUFFIXES
                or "__pycache__" in file.parts
                or file.is_relative_to(RESULTS)
            ):
                continue
            digest.update(str(file.relative_to(root)).encode() + b"\0")
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _what_is_measured(options: StormOptions) -> dict[str, Any]:
    """The options a resumed storm must share with the one it goes on from,
    by name and as kept in JSON: every field but :data:`MAY_CHANGE`, read
    from the fields themselves (a flag left out of the Reproduce line may
    still change what is measured)."""
    measured: dict[str, Any] = json.loads(
        data_json(
            {
                spec.name: getattr(options, spec.name)
                for spec in dataclasses.fields(options)
                if spec.name not in MAY_CHANGE
            }
        )
    )
    return measured


def _differences(kept: Any, wanted: dict[str, Any]) -> str:
    """The options in which ``kept`` (what a runs file says) and ``wanted``
    differ, as flags: ``--jobs 100 (now 200)``."""
    if not isinstance(kept, dict):
        kept = {}

    def word(value: Any) -> str:
        if isinstance(value, list):
            return ",".join(str(item) for item in value)
        return "none" if value is None else str(value)

    return ", ".join(
        f"{flag(name)} {word(kept.get(name))} (now {word(wanted.get(name))})"
        for name in sorted(kept.keys() | wanted.keys())
        if kept.get(name) != wanted.get(name)
    )


def save_runs(
    results: list[VariantResult], options: StormOptions, logs: Path, code: str
) -> Path:
    """Keep ``results`` (whole runs only) with what they measured (``code``:
    the :func:`code_fingerprint` taken when the storm started), for
    ``--resume``; return the file."""
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / RUNS_FILE
    data = {
        # for people reading the file; a resume compares "measured"
        "options": options.reproduce_command(),
        "measured": _what_is_measured(options),
        "code": code,
        "variants": results,
    }
    # a storm stopped while it writes keeps the runs written before
    partial = path.with_name(f"{RUNS_FILE}.partial")
    partial.write_text(data_json(data))
    partial.replace(path)
    return path


def resumed_runs(options: StormOptions, logs: Path, code: str) -> list[VariantResult]:
    """The finished runs kept in ``logs`` by the storm ``options`` go on
    from; a HarnessError when there are none, or when they measured other
    options or other code than ``code`` (a :func:`code_fingerprint`): their
    numbers would not compare."""
    path = logs / RUNS_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise HarnessError(
            f"nothing to resume: no finished run of storm {options.output_name!r} "
            f"in {path}; run it without --resume"
        ) from None
    except (OSError, ValueError) as exc:
        raise HarnessError(f"cannot resume from {path}: {exc}") from None
    wanted = _what_is_measured(options)
    if "measured" not in data:
        raise HarnessError(
            f"cannot resume: the kept runs in {path} were kept by an older "
            "saltfleet, which did not record every option they measured; run "
            "without --resume to start again"
        )
    if data.get("measured") != wanted:
        raise HarnessError(
            f"cannot resume: the kept runs in {path} measured other options: "
            f"{_differences(data.get('measured'), wanted)} (only --runs may "
            "change); run without --resume to start again"
        )
    if data.get("code") != code:
        raise HarnessError(
            f"cannot resume: the series, the stack or the benchmark changed "
            f"since the kept runs in {path} were measured ({', '.join(MEASURED_CODE)}); "
            "run without --resume to start again"
        )
    kept = [from_plain(VariantResult, item) for item in data.get("variants", [])]
    # more runs kept than asked for: the report has the runs --runs names
    results: list[VariantResult] = [r for r in kept if r.run <= options.runs]
    last = max((r.run for r in results), default=0)
    print(
        f"resuming storm {options.output_name!r}: runs 1-{last} kept from {path}, "
        f"{max(0, options.runs - last)} to go",
        flush=True,
    )
    return results


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
    if logs_dir is not None:
        # a resumed storm reruns the run it was stopped in: no stale logs
        shutil.rmtree(logs_dir, ignore_errors=True)
    with probed(f"  {name}:") as probe:
        with _fleet_stack(
            name, options, stack_root, consumer, salt_tree, logs_dir
        ) as stack:
            result = StormRun(name, limiter, options, stack, consumer, run_no).run()
        shutil.rmtree(stack_root, ignore_errors=True)
    result.cpu_probe_before_ms, result.cpu_probe_after_ms = (
        probe.before_ms,
        probe.after_ms,
    )
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
        return_priority_functions=options.priority_functions(name),
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
