"""Three quick checks of a live stack: the real minion answers a ping, reports
a grain, and reads a pillar through the patched postgres ext_pillar.

They are the stack's own smoke test (``tests/integration/test_stack.py``
runs each on a stack started with :data:`PROBE_EXT_PILLAR`); the product tour,
with its report, is the :mod:`tour` package. Each check is a function of the
stack that returns a one-line detail on success and raises
:class:`ScenarioFailed` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
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
