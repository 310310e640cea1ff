"""Three quick checks of a live stack (a ping, a grain, a pillar read through
the patched postgres ext_pillar) and their report: the stack's own smoke test
(the demo's tour lives in :mod:`harness.demo`).

Each scenario is a function of the stack that returns a one-line detail on
success and raises :class:`ScenarioFailed` otherwise. The list grows with the
capabilities; the demo runs all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.stack import REAL_MINION_ID, Stack

PROBE_KEY = "saltfleet_probe"

# One global row (no parameter) and one per-minion value (the id, twice, through
# the named placeholder the first patch adds): the probe shows the master
# reached PostgreSQL through the patched postgres ext_pillar.
PROBE_EXT_PILLAR: list[dict[str, Any]] = [
    {
        "postgres": [
            {
                "query": (
                    "SELECT jsonb_build_object('" + PROBE_KEY + "', jsonb_build_object("
                    "'server_version', current_setting('server_version'),"
                    "'database', current_database()))"
                ),
                "as_json": True,
            },
            {
                "query": (
                    "SELECT jsonb_build_object('" + PROBE_KEY + "', jsonb_build_object("
                    "'minion', %(minion_id)s::text,"
                    "'minion_upper', upper(%(minion_id)s)))"
                ),
                "as_json": True,
            },
        ]
    }
]


class ScenarioFailed(Exception):
    """A scenario saw something other than what it expects."""


@dataclass(frozen=True)
class ScenarioResult:
    """The outcome of one scenario: passed or not, how long, what it saw."""

    name: str
    ok: bool
    seconds: float
    detail: str


def _one_return(stack: Stack, fun: str, arg: list[Any] | None = None) -> Any:
    ret = stack.cmd(REAL_MINION_ID, fun, arg or [])
    if REAL_MINION_ID not in ret:
        raise ScenarioFailed(
            f"{fun}: no return from {REAL_MINION_ID} (got {sorted(ret)})"
        )
    return ret[REAL_MINION_ID]


def minion_answers_ping(stack: Stack) -> str:
    """The real minion answers ``test.ping`` with True."""
    value = _one_return(stack, "test.ping")
    if value is not True:
        raise ScenarioFailed(f"test.ping returned {value!r}")
    return f"{REAL_MINION_ID}: True"


def minion_reports_os_grain(stack: Stack) -> str:
    """The real minion reports a non-empty ``os`` grain."""
    value = _one_return(stack, "grains.item", ["os"])
    if not isinstance(value, dict) or not value.get("os"):
        raise ScenarioFailed(f"grains.item os returned {value!r}")
    return f"os = {value['os']}"


def master_reaches_postgres(stack: Stack) -> str:
    # Salt 3008 masks pillar values in output unless asked not to.
    """The master's postgres ext_pillar reaches the stack's PostgreSQL."""
    value = _one_return(stack, "pillar.item", [PROBE_KEY, "unmask=True"])
    probe = value.get(PROBE_KEY) if isinstance(value, dict) else None
    if not isinstance(probe, dict) or "server_version" not in probe:
        raise ScenarioFailed(f"pillar.item {PROBE_KEY} returned {value!r}")
    if (
        probe.get("minion") != REAL_MINION_ID
        or probe.get("minion_upper") != REAL_MINION_ID.upper()
    ):
        raise ScenarioFailed(f"per-minion query saw {probe!r}")
    return f"PostgreSQL {probe['server_version']} via ext_pillar postgres, minion id bound twice"


SCENARIOS: list[tuple[str, Callable[[Stack], str]]] = [
    ("minion answers test.ping", minion_answers_ping),
    ("minion reports grains.item os", minion_reports_os_grain),
    ("master reaches PostgreSQL (pillar)", master_reaches_postgres),
]


def run_all(stack: Stack) -> list[ScenarioResult]:
    """Run every scenario in order; a failure does not stop the others."""
    results = []
    for name, scenario in SCENARIOS:
        started = time.monotonic()
        try:
            detail, ok = scenario(stack), True
        except ScenarioFailed as exc:
            detail, ok = str(exc), False
        results.append(ScenarioResult(name, ok, time.monotonic() - started, detail))
    return results


def render_report(results: list[ScenarioResult], facts: dict[str, str]) -> str:
    """The demo report: the stack's facts, one line per scenario, a total."""
    lines = ["saltfleet demo", ""]
    width = max(len(k) for k in facts) if facts else 0
    lines += [f"  {k.ljust(width)}  {v}" for k, v in facts.items()]
    lines += ["", f"  {'scenario':<38} {'result':<6} {'time':>7}  detail"]
    for r in results:
        verdict = "ok" if r.ok else "FAILED"
        lines.append(f"  {r.name:<38} {verdict:<6} {r.seconds:>6.2f}s  {r.detail}")
    passed = sum(r.ok for r in results)
    lines += ["", f"  {passed} of {len(results)} scenarios passed"]
    return "\n".join(lines)
