"""The tour's scenarios: how they are declared, run and judged.

A scenario is a function of a :class:`~tour.context.TourContext` that
returns a :class:`Finding` (a one-line summary, Markdown for the report,
plots) or raises :class:`ScenarioFailed` naming what it saw instead. It joins
the tour through :meth:`Registry.scenario`; the tour runs the registered
scenarios in order and records a :class:`ScenarioOutcome` for each.

A capability that a build may lack (package states come with an extension)
is a :class:`Capability` entry naming the module that brings it. When that
module exists its scenario registers under the capability's name; otherwise
the report lists the capability as not in this build.
"""

from __future__ import annotations

import enum
import importlib.util
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tour.errors import ScenarioFailed

if TYPE_CHECKING:
    # the context holds the stack (Salt); the CLI imports this before Salt
    from tour.context import TourContext

__all__ = [
    "Capability",
    "Finding",
    "Registry",
    "Scenario",
    "ScenarioFailed",
    "ScenarioOutcome",
    "Verdict",
    "run_scenario",
]


class Verdict(enum.Enum):
    """How a scenario ended."""

    PASSED = "passed"
    FAILED = "FAILED"
    #: not run on this stack (e.g. an external PostgreSQL the demo must not stop)
    SKIPPED = "skipped"


@dataclass
class Finding:
    """What a scenario shows: a summary line, report Markdown and plots."""

    summary: str
    body: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    #: a reason to skip instead of pass (the scenario could not show its point)
    skipped: str | None = None


@dataclass
class ScenarioOutcome:
    """One scenario's verdict, duration and finding (or failure reason)."""

    section: str
    name: str
    verdict: Verdict
    seconds: float
    finding: Finding

    @property
    def ok(self) -> bool:
        """Passed or skipped: nothing the demo has to fail for."""
        return self.verdict is not Verdict.FAILED


ScenarioFunction = Callable[["TourContext"], Finding]


@dataclass(frozen=True)
class Scenario:
    """A registered scenario: the report section it belongs to and its name."""

    section: str
    name: str
    run: ScenarioFunction


@dataclass(frozen=True)
class Capability:
    """A capability whose scenario arrives with ``module``; the scenario
    registers in a section named like the capability (any case)."""

    name: str
    module: str
    what: str

    def present(self) -> bool:
        """Whether ``module`` is importable in this build."""
        try:
            return importlib.util.find_spec(self.module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            return False


class Registry:
    """The tour's scenarios, in the order they run."""

    def __init__(self, pending: tuple[Capability, ...] = ()) -> None:
        self.scenarios: list[Scenario] = []
        self.pending = pending

    def scenario(
        self, section: str, name: str
    ) -> Callable[[ScenarioFunction], ScenarioFunction]:
        """Decorator: register ``function`` as scenario ``name`` of ``section``.

        .. code-block:: python

            @TOUR.scenario("Fleet", "every minion answers test.ping")
            def fleet_answers(ctx: TourContext) -> Finding: ...
        """

        def register(function: ScenarioFunction) -> ScenarioFunction:
            if any(s.name == name for s in self.scenarios):
                raise ValueError(f"a scenario named {name!r} is already registered")
            self.scenarios.append(Scenario(section, name, function))
            return function

        return register

    def add_section(
        self, section: str, scenarios: Mapping[str, ScenarioFunction]
    ) -> None:
        """Register each of ``scenarios`` (name: function) in ``section``, in order."""
        for name, function in scenarios.items():
            self.scenario(section, name)(function)

    def sections(self) -> list[str]:
        """Section names in the order their first scenario runs."""
        return list(dict.fromkeys(s.section for s in self.scenarios))

    def not_in_build(self) -> list[Capability]:
        """Pending capabilities whose module this build does not have."""
        return [c for c in self.pending if not c.present()]

    def without_scenario(self) -> list[Capability]:
        """Pending capabilities whose module exists but no scenario shows them."""
        sections = {s.section.lower() for s in self.scenarios}
        return [
            c for c in self.pending if c.present() and c.name.lower() not in sections
        ]


def run_scenario(
    scenario: Scenario,
    ctx: TourContext,
    *,
    failures: tuple[type[Exception], ...] = (ScenarioFailed,),
    clock: Callable[[], float] = time.monotonic,
) -> ScenarioOutcome:
    """Run one scenario; any of ``failures`` becomes a failed outcome with the
    exception's message (other exceptions are bugs and propagate)."""
    started = clock()
    try:
        finding = scenario.run(ctx)
    except failures as exc:
        reason = str(exc).strip() or type(exc).__name__
        finding, verdict = Finding(reason), Verdict.FAILED
    else:
        verdict = Verdict.SKIPPED if finding.skipped else Verdict.PASSED
        if finding.skipped:
            finding.summary = finding.skipped
    return ScenarioOutcome(
        scenario.section, scenario.name, verdict, clock() - started, finding
    )
