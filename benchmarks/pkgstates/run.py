"""One benchmark run: generate, store, measure in-process, the highstate round, report."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.pkgstates import highstate as highstate_round
from benchmarks.pkgstates import measure as in_process
from benchmarks.pkgstates import scenario as scenarios
from benchmarks.pkgstates.options import PkgstatesOptions
from benchmarks.pkgstates.report import write
from harness import migrations
from harness.fleet import DEFAULT_PREFIX, minion_ids
from harness.master import in_process_opts
from harness.pillar.model import FleetPillars, Group, MinionMembership
from harness.pillar.store import store_fleet
from harness.ports import free_port
from harness.postgres import EmbeddedPostgres


def _memberships(scenario: scenarios.Scenario) -> FleetPillars:
    fleet = FleetPillars(orgs=[scenarios.ORG])
    fleet.groups = [Group(scenarios.ORG, name) for name in scenario.groups]
    fleet.minions = {m: MinionMembership(scenarios.ORG) for m in scenario.ids}
    for name, members in scenario.groups.items():
        for minion in members:
            fleet.minions[minion].groups.append(f"{scenarios.ORG}/{name}")
    return fleet


def _log(text: str) -> None:
    print(text, flush=True)


def run(opts: PkgstatesOptions) -> Path:
    """Run the whole benchmark; return the report's path."""
    from saltext.pkgstate.store import PackageStateStore

    ids = minion_ids(DEFAULT_PREFIX, opts.minions)
    started = time.perf_counter()
    scenario = scenarios.build(
        ids, packages=opts.packages, package_count=opts.installed, groups=opts.groups
    )
    _log(
        f"generated {len(scenario.states)} states in {time.perf_counter() - started:.1f} s"
    )
    with tempfile.TemporaryDirectory(prefix="saltfleet-pkgstates-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        pg = EmbeddedPostgres(work / "pg", free_port())
        pg.start()
        try:
            migrations.apply(pg.connection)
            store_fleet(pg.connection, _memberships(scenario))
            with PackageStateStore(pg.connection.dsn) as store:
                started = time.perf_counter()
                in_process.load_scenario(store, scenario)
                _log(f"stored them in {time.perf_counter() - started:.1f} s")
                result = in_process.measure(
                    store,
                    scenario,
                    in_process_opts(
                        work / "master", pkgstate={"dsn": pg.connection.dsn}
                    ),
                    work / "files",
                    opts.rounds,
                    _log,
                )
                rounds = None
                if not opts.no_highstate:
                    rounds = highstate_round.run_highstate(
                        dsn=pg.connection.dsn,
                        store=store,
                        scenario=scenario,
                        variants=opts.variants.split(","),
                        rounds=opts.highstate_rounds,
                        package_count=opts.installed,
                        processes=opts.processes,
                        timeout=opts.timeout,
                        root=work / "stack",
                        progress=_log,
                    )
        finally:
            pg.stop()
            pg.cleanup()
    return write(result, rounds, opts)
