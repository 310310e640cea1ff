"""The query API section: ``salt-run query.query`` over the tour's fleet.

It shows the design's three promises on the running master: a compound
filter selects exactly the minions whose cached grains match it, a filter of
names looks up just those minions in the order asked (a missing one marked
unavailable, not left out), and an unknown field is marked in every row and
fails the command.
"""

from __future__ import annotations

import json
from typing import Any

from tour.context import TourContext
from tour.registry import Finding, Registry, ScenarioFailed

SECTION = "query API"
FIELDS = "name,os_family,mem_total,cpus"
FILTER = 'os_family == "Suse" and mem_total >= 4096 and cpus > 1'
#: a name no minion of the tour has
MISSING = "no-such-minion"
#: the design's statuses the section shows
NORMAL, UNKNOWN, UNAVAILABLE = 0, 1, 3


def _query(ctx: TourContext, *args: str) -> tuple[int, Any]:
    master = ctx.stack.master
    if master is None:
        raise ScenarioFailed("the stack has no master")
    done = master.run_cli("salt-run", "--out", "json", "query.query", *args)
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise ScenarioFailed(
            f"salt-run query.query {' '.join(args)} printed no JSON "
            f"(exit {done.returncode}): {(done.stdout + done.stderr).strip()[-300:]}"
        ) from None


def _expected(grains: dict[str, dict[str, Any]]) -> list[str]:
    """The minions the filter must select, worked out from their grains."""
    return sorted(
        minion
        for minion, g in grains.items()
        if g.get("os_family") == "Suse"
        and (g.get("mem_total") or 0) >= 4096
        and (g.get("num_cpus") or 0) > 1
    )


def filter_selects_exactly(ctx: TourContext) -> Finding:
    """A compound filter's rows are exactly the minions whose grains match."""
    grains = ctx.stack.cmd("*", "grains.items", timeout=120)
    code, result = _query(ctx, "minion", f"fields={FIELDS}", f"filter={FILTER}")
    rows = result.get("data", []) if isinstance(result, dict) else []
    selected = sorted(row[0][1] for row in rows)
    expected = _expected(grains)
    if code != 0 or selected != expected:
        raise ScenarioFailed(
            f"filter {FILTER!r} selected {len(selected)} minions, the grains say "
            f"{len(expected)} (exit {code}; first difference: "
            f"{sorted(set(selected) ^ set(expected))[:3]})"
        )
    titles = [f["title"] for f in result["fields"]]
    sample = [" | ".join(str(cell[1]) for cell in row) for row in rows[:5]]
    body = [
        f"`salt-run query.query minion fields={FIELDS} filter='{FILTER}'` "
        f"selected {len(selected)} of {len(grains)} minions, exactly those whose "
        "grains match (checked against `grains.items`). First rows:",
        "",
        "| " + " | ".join(titles) + " |",
        "|" + "---|" * len(titles),
        *(f"| {line} |" for line in sample),
    ]
    return Finding(f"{len(selected)} of {len(grains)} minions selected", body)


def names_keep_order(ctx: TourContext) -> Finding:
    """Names are looked up in the order asked; a missing one is unavailable."""
    wanted = [*ctx.fleet_ids[-1:], MISSING, *ctx.fleet_ids[:1]]
    name_filter = " or ".join(f'name == "{name}"' for name in wanted)
    code, result = _query(ctx, "minion", "fields=name,os", f"filter={name_filter}")
    rows = result.get("data", []) if isinstance(result, dict) else []
    names = [row[0][1] for row in rows]
    # a missing name's row has no value to show, only its status
    expected = [None if name == MISSING else name for name in wanted]
    missing_row = rows[1] if len(rows) == len(wanted) else []
    unavailable = bool(missing_row) and all(c[0] == UNAVAILABLE for c in missing_row)
    if code != 0 or names != expected or not unavailable:
        raise ScenarioFailed(
            f"a filter of names {wanted} gave rows {names} (exit {code}); the "
            f"missing name must come back marked unavailable ({UNAVAILABLE})"
        )
    return Finding(
        "3 names in the order asked, the missing one unavailable",
        [
            f"A filter of names (`{name_filter}`) reads only those minions and "
            f"returns them in the order asked; `{MISSING}` comes back with status "
            f"{UNAVAILABLE} (unavailable) instead of being left out."
        ],
    )


def unknown_field_fails(ctx: TourContext) -> Finding:
    """An unknown field is status 1 in every row and a non-zero exit."""
    code, result = _query(ctx, "minion", "fields=name,no_such_field")
    rows = result.get("data", []) if isinstance(result, dict) else []
    if code == 0 or not rows or any(row[1][0] != UNKNOWN for row in rows):
        raise ScenarioFailed(
            f"an unknown field gave exit {code} and statuses "
            f"{sorted({row[1][0] for row in rows})}; expected exit != 0 and "
            f"status {UNKNOWN} in every row"
        )
    return Finding(
        f"unknown field: status {UNKNOWN} in all {len(rows)} rows, exit {code}",
        [
            f"Asking for `no_such_field` marks it unknown (status {UNKNOWN}) in "
            f"every one of the {len(rows)} rows and `salt-run` exits {code}."
        ],
    )


def register(registry: Registry) -> None:
    """Add the query API section's scenarios to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "a compound filter selects exactly": filter_selects_exactly,
            "names keep their order": names_keep_order,
            "an unknown field fails the query": unknown_field_fails,
        },
    )
