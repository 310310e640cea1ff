"""The tour: start the stack, run every registered scenario, write the report,
stop everything (by pid; also on errors and Ctrl-C, through :class:`Stack`)."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import replace
from pathlib import Path

from harness.errors import HarnessError
from harness.fleet import FleetConfig
from harness.progress import ticking_stdout
from harness.saltapi import ApiSettings
from harness.stack import Stack, StackSettings
from tour import (
    fleet,
    interfaces,
    package_states,
    pillar,
    query,
    ratelimit,
    saltapi,
)
from tour.context import TourContext
from tour.options import DemoOptions, storm_limits
from tour.registry import (
    Registry,
    ScenarioFailed,
    ScenarioOutcome,
    Verdict,
    run_scenario,
)
from tour.report import REPORT_FILE, TourRecord, render_summary, write_report


def build_registry() -> Registry:
    """Every scenario of the tour, in the order it runs."""
    # package states come with an extension a build may lack: the report
    # then says so under "Not in this build"
    registry = Registry(pending=(package_states.CAPABILITY,))
    for section in (fleet, pillar, ratelimit, query, saltapi, interfaces):
        section.register(registry)
    if package_states.CAPABILITY.present():
        package_states.register(registry)
    return registry


def _ours(entry: Path) -> bool:
    """A file a previous demo wrote: the report or one of its plots."""
    return entry.is_file() and (entry.name == REPORT_FILE or entry.suffix == ".png")


def prepare_report_dir(path: Path) -> Path:
    """Make ``path`` an empty report directory, removing a previous report;
    refuse a directory that holds anything else (it is not ours to empty)."""
    path = path.resolve()
    if path.exists():
        if not path.is_dir():
            raise HarnessError(f"--report-dir {path} exists and is not a directory")
        entries = list(path.iterdir())
        if entries and not (
            (path / REPORT_FILE).is_file() and all(_ours(e) for e in entries)
        ):
            raise HarnessError(
                f"--report-dir {path} holds files that are not a demo report; "
                "choose an empty or new directory"
            )
        for entry in entries:
            entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HarnessError(
            f"cannot create --report-dir {path}: {exc.strerror}"
        ) from None
    return path


def tour_settings(options: DemoOptions, settings: StackSettings) -> StackSettings:
    """``settings`` with what the tour needs: the fleet and its timing, the
    postgres ext_pillar, package states when the extension is installed, and
    the master starting with the limiter on."""
    fleet_config = replace(
        settings.fleet or FleetConfig(), count=options.minions, timing=options.timing()
    )
    limits = storm_limits(options)
    return replace(
        settings,
        fleet=fleet_config,
        ext_pillar=pillar.EXT_PILLAR,
        api=settings.api or ApiSettings(),
        pkgstates=settings.pkgstates or package_states.CAPABILITY.present(),
        master_opts={**settings.master_opts, **limits.master_options()},
    )


def _facts(stack: Stack, options: DemoOptions, startup: float) -> dict[str, str]:
    import salt.version

    from harness.postgres import check_reachable

    assert stack.master is not None and stack.pg is not None
    master, pg = stack.master.settings, stack.pg
    where = "embedded" if stack.postgres else "external"
    real = f"1 real salt-minion ({stack.settings.minion_id}) + " if stack.minion else ""
    return {
        "Salt": f"{salt.version.__version__} with patches/series applied",
        "PostgreSQL": f"{check_reachable(pg)} ({where}) at {pg.host}:{pg.port}/{pg.dbname}",
        "salt-master": f"127.0.0.1, publish {master.publish_port}, ret "
        f"{master.ret_port}, {master.worker_threads} workers",
        "minions": f"{real}{options.minions} simulated (evil_minions), "
        f"{options.minion_slots} jobs at once each",
        "start-up": f"{startup:.0f}s until every minion was connected",
        "this size again": f"`{options.command_line()}`",
    }


def _failures() -> tuple[type[Exception], ...]:
    """What a scenario may fail with: what it saw, a daemon that did not come
    back (:class:`HarnessError` with its log tail), a Salt client error."""
    import salt.exceptions

    return (ScenarioFailed, HarnessError, salt.exceptions.SaltException)


def check_options(options: DemoOptions) -> None:
    """Refuse options the tour cannot show anything with, and a missing
    matplotlib, before anything starts (a HarnessError naming the fix)."""
    if options.minions < 1:
        raise HarnessError(
            "the demo needs simulated minions: --minions must be at least 1"
        )
    cap = storm_limits(options).max_minion_jobs
    if options.storm_jobs <= cap:
        raise HarnessError(
            f"--storm-jobs {options.storm_jobs} is too few: with the limiter a "
            f"minion holds at most {cap} jobs, so the storm must send more than "
            f"{cap} to show the difference"
        )
    if importlib.util.find_spec("matplotlib") is None:
        raise HarnessError(
            "matplotlib is missing (the report's plots need it): run `nox -s demo`, "
            "or install the project with its 'bench' extra"
        )


def _say(line: str) -> None:
    print(f"  {line}", flush=True)


def run_tour(
    options: DemoOptions, settings: StackSettings, *, registry: Registry | None = None
) -> int:
    """Run the whole tour; 0 when every scenario passed or was skipped, else 1."""
    check_options(options)
    registry = registry or build_registry()
    report_dir = prepare_report_dir(options.report_dir)
    began = time.monotonic()
    real = "a salt-minion and " if settings.real_minion else ""
    print(
        f"starting PostgreSQL, a patched salt-master, {real}"
        f"{options.minions} simulated minions ...",
        flush=True,
    )
    outcomes: list[ScenarioOutcome] = []
    # a scenario may wait half a minute with nothing to print (a queue
    # filling, a storm's last returns, the stack stopping): after 10 s of
    # silence a line says what is still at work
    with (
        ticking_stdout("starting the stack", prefix="    ") as ticker,
        Stack(tour_settings(options, settings), say=_say) as stack,
    ):
        facts = _facts(stack, options, time.monotonic() - began)
        ctx = TourContext(stack, options, report_dir)
        print(f"stack up; {len(registry.scenarios)} scenarios", flush=True)
        for scenario in registry.scenarios:
            print(f"  {scenario.section}: {scenario.name} ...", flush=True)
            ticker.doing(scenario.name)
            outcome = run_scenario(scenario, ctx, failures=_failures())
            outcomes.append(outcome)
            if outcome.verdict is not Verdict.PASSED:
                print(
                    f"    {outcome.verdict.value}: {outcome.finding.summary}",
                    flush=True,
                )
        started = len(stack.pids())
        print("stopping the stack ...", flush=True)
        ticker.doing("stopping the stack")
    record = TourRecord(
        facts,
        outcomes,
        registry.not_in_build(),
        registry.without_scenario(),
        time.monotonic() - began,
    )
    path = write_report(record, report_dir)
    print()
    print(render_summary(record, path))
    print(f"stopped everything the demo started ({started} processes)")
    return 0 if record.ok else 1
