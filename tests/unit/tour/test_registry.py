"""The tour's scenario registry: order, verdicts, and the capabilities that
are listed as not in this build only while their module is absent."""

from __future__ import annotations

import itertools

import pytest

from tour.registry import (
    Capability,
    Finding,
    Registry,
    ScenarioFailed,
    Verdict,
    run_scenario,
)
from tour.run import build_registry

PRESENT = Capability("pillars", "harness.pillar.model", "rows")
ABSENT = Capability("teleport", "harness.no_such_capability", "beam minions")
ABSENT_PARENT = Capability("warp", "no_such_package.warp", "faster")


def _ticking_clock():
    ticks = itertools.count(step=2.5)
    return lambda: next(ticks)


def test_scenarios_run_in_registration_order_by_section() -> None:
    registry = Registry(pending=())
    for section, name in (("B", "one"), ("A", "two"), ("B", "three")):
        registry.scenario(section, name)(lambda ctx: Finding("x"))
    assert [s.name for s in registry.scenarios] == ["one", "two", "three"]
    assert registry.sections() == ["B", "A"]


def test_a_name_registers_once() -> None:
    registry = Registry(pending=())
    registry.scenario("A", "same")(lambda ctx: Finding("x"))
    with pytest.raises(ValueError, match="'same' is already registered"):
        registry.scenario("B", "same")(lambda ctx: Finding("y"))


def test_a_section_registers_its_scenarios_in_order_and_each_name_once() -> None:
    registry = Registry(pending=())

    def first(ctx):
        return Finding("1")

    def second(ctx):
        return Finding("2")

    registry.add_section("S", {"first": first, "second": second})
    assert [(s.section, s.name, s.run) for s in registry.scenarios] == [
        ("S", "first", first),
        ("S", "second", second),
    ]
    with pytest.raises(ValueError, match="'second' is already registered"):
        registry.add_section("T", {"second": first})


def test_run_scenario_verdicts() -> None:
    registry = Registry(pending=())

    @registry.scenario("S", "passes")
    def passes(ctx):
        return Finding("all good", ["body"])

    @registry.scenario("S", "fails")
    def fails(ctx):
        raise ScenarioFailed("saw 3, expected 4")

    @registry.scenario("S", "skips")
    def skips(ctx):
        return Finding("", skipped="external PostgreSQL")

    outcomes = [
        run_scenario(s, None, clock=_ticking_clock())  # type: ignore[arg-type]
        for s in registry.scenarios
    ]
    assert [o.verdict for o in outcomes] == [
        Verdict.PASSED,
        Verdict.FAILED,
        Verdict.SKIPPED,
    ]
    assert [o.finding.summary for o in outcomes] == [
        "all good",
        "saw 3, expected 4",
        "external PostgreSQL",
    ]
    assert [o.ok for o in outcomes] == [True, False, True]
    assert all(o.seconds == 2.5 for o in outcomes)


def test_failures_the_tour_names_are_verdicts_too() -> None:
    """A daemon that did not come back fails its scenario, with its message."""
    registry = Registry(pending=())

    @registry.scenario("S", "restart")
    def restart(ctx):
        raise RuntimeError("salt-master exited with code 1")

    outcome = run_scenario(
        registry.scenarios[0],
        None,  # type: ignore[arg-type]
        failures=(ScenarioFailed, RuntimeError),
    )
    assert outcome.verdict is Verdict.FAILED
    assert outcome.finding.summary == "salt-master exited with code 1"


def test_other_exceptions_are_not_verdicts() -> None:
    """A bug in a scenario is not a finding: it ends the tour loudly."""
    registry = Registry(pending=())
    registry.scenario("S", "buggy")(lambda ctx: {}["missing"])
    with pytest.raises(KeyError):
        run_scenario(registry.scenarios[0], None)  # type: ignore[arg-type]


def test_pending_capabilities_follow_their_module() -> None:
    registry = Registry(pending=(PRESENT, ABSENT, ABSENT_PARENT))
    assert registry.not_in_build() == [ABSENT, ABSENT_PARENT]
    assert registry.without_scenario() == [PRESENT]
    registry.scenario("Pillars", "pillar rows")(lambda ctx: Finding("x"))
    assert registry.without_scenario() == []


def test_the_tour_registers_every_section_of_the_series() -> None:
    registry = build_registry()
    assert registry.sections() == [
        "Fleet",
        "Pillars from PostgreSQL",
        "Rate limiting",
        "query API",
        "load through salt-api",
        "Module interfaces",
        "package states",
    ]
    assert [c.name for c in registry.pending] == ["package states"]
    # every capability of the series is built and has scenarios
    assert registry.not_in_build() == []
    assert registry.without_scenario() == []
