"""The product tour (``python -m tour``, ``nox -s demo``).

One command starts PostgreSQL, a patched salt-master, a real salt-minion and
a fleet of simulated minions; every registered scenario shows one
capability of the series and asserts what it shows; a Markdown report with
plots lands in ``.saltfleet/demo/``; everything started is stopped.

Layout (one job per module)::

    options.py     DemoOptions: every knob and default
    registry.py    Registry, Scenario, Finding, verdicts; capabilities still landing
    context.py     TourContext: what every scenario gets
    fleet.py       the fleet answers
    pillar.py      pillar rows in PostgreSQL, exact merge, fail closed, recovery
    storm.py       a small storm with presence pings, measured on the event bus
    ratelimit.py   the storm with the limiter on / off, a full queue refusing
    interfaces.py  the pkg module-interface conformance matrix
    package_states.py  package states: scopes, highstate, beacon, history, export
    plots.py       matplotlib figures
    report.py      the Markdown report and the terminal summary
    run.py         run_tour(): the stack, the scenarios, the report
    cli.py         python -m tour: the stack's options and the tour's

``tour.run`` imports Salt; this package itself does not, so the CLI
can read :class:`DemoOptions` before Salt is installed.
"""

from tour.options import DEFAULT_REPORT_DIR, DemoOptions
from tour.registry import Capability, Finding, Registry, ScenarioFailed

__all__ = [
    "DEFAULT_REPORT_DIR",
    "Capability",
    "DemoOptions",
    "Finding",
    "Registry",
    "ScenarioFailed",
]
