"""The pillar section: rows at four scopes in PostgreSQL, compiled by the
patched postgres ext_pillar, exactly the reference merge; fail closed while
the database is down, recover when it is back."""

from __future__ import annotations

import random
from typing import Any

from harness.pillar.generate import generate
from harness.pillar.model import SCOPES, FleetPillars, merged_pillar, rows_for
from harness.pillar.store import store_fleet
from harness.pillar.variants import FUNCTION_QUERY
from harness.polling import wait_until
from tour.context import TourContext
from tour.registry import Finding, Registry, ScenarioFailed

SECTION = "Pillars from PostgreSQL"
PILLAR_TIMEOUT = 120
#: how long the master may take to serve pillars again once PostgreSQL is back
RECOVERY_TIMEOUT = 60.0
#: the master configuration the tour runs with (README, "Pillars in PostgreSQL")
EXT_PILLAR: list[dict[str, Any]] = [
    {"postgres": [{"query": FUNCTION_QUERY, "as_json": True}]}
]
#: top-level keys the report traces back to the row that set them
#: the key the package-state ext_pillar adds when package states are served
PKGSTATE_KEY = "pkgstate"
TRACED_KEYS = ("mgr_server", "ntp_servers", "org", "motd", "role", "tuning", "minion")


def _sample(ctx: TourContext, size: int) -> list[str]:
    fleet = ctx.fleet_ids
    rng = random.Random(len(fleet))  # the same sample for the same fleet
    picked = sorted(rng.sample(fleet, min(size, len(fleet))))
    return ([ctx.real_minion] if ctx.real_minion else []) + picked


def _pillars(ctx: TourContext, minions: list[str]) -> dict[str, Any]:
    return ctx.stack.cmd(
        ",".join(minions),
        "pillar.items",
        ["unmask=True"],
        tgt_type="list",
        timeout=PILLAR_TIMEOUT,
    )


def _rows_only(value: Any) -> Any:
    """A pillar without the package-state ext_pillar's key (the package
    states section checks that one)."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != PKGSTATE_KEY}
    return value


def _mismatches(
    pillars: FleetPillars, returns: dict[str, Any], minions: list[str]
) -> list[str]:
    return [
        m for m in minions if _rows_only(returns.get(m)) != merged_pillar(pillars, m)
    ]


def _scope_counts(pillars: FleetPillars) -> dict[str, int]:
    return {scope: sum(r.scope == scope for r in pillars.rows) for scope in SCOPES}


def _provenance(pillars: FleetPillars, minion: str) -> list[str]:
    """A Markdown table: where each traced key of ``minion``'s pillar comes from."""
    lines = ["| key | set by (last row wins) | value |", "| --- | --- | --- |"]
    merged = merged_pillar(pillars, minion)
    for key in TRACED_KEYS:
        setters = [r.label for r in rows_for(pillars, minion) if key in r.data]
        if not setters:
            continue
        value = repr(merged[key])
        value = value if len(value) <= 60 else value[:57] + "..."
        lines.append(f"| `{key}` | {' < '.join(setters)} | `{value}` |")
    return lines


def rows_merge_exactly(ctx: TourContext) -> Finding:
    """Store rows at every scope; pillar.items of a sample equals the merge."""
    assert ctx.stack.pg is not None
    pillars = generate(ctx.all_minions())
    store_fleet(ctx.stack.pg, pillars)
    ctx.pillars = pillars
    sample = _sample(ctx, ctx.options.pillar_sample)
    returns = _pillars(ctx, sample)
    wrong = _mismatches(pillars, returns, sample)
    if wrong:
        first = wrong[0]
        raise ScenarioFailed(
            f"{len(wrong)} of {len(sample)} pillars differ from the merged rows; "
            f"{first} got {str(returns.get(first))[:200]}"
        )
    counts = _scope_counts(pillars)
    shown = ctx.real_minion or sample[0]
    body = [
        f"Stored {len(pillars.rows)} rows ({', '.join(f'{n} {s}' for s, n in counts.items())}) "
        f"for {len(pillars.orgs)} organizations, {len(pillars.groups)} groups and "
        f"{len(pillars.minions)} minions. The master reads them with",
        "",
        "```yaml",
        "ext_pillar:",
        "  - postgres:",
        f'      - query: "{FUNCTION_QUERY}"',
        "        as_json: true",
        "```",
        "",
        f"`pillar.items` of {len(sample)} minions ({'the real one and ' if ctx.real_minion else ''}"
        f"a sample of simulated ones) equals the reference merge "
        "(`harness.pillar.model.merged_pillar`) exactly.",
        "",
        f"Where `{shown}`'s values come from (global < org < groups by id < minion):",
        "",
        *_provenance(pillars, shown),
    ]
    return Finding(
        f"{len(sample)} of {len(sample)} pillars equal the merged rows", body
    )


def _failed_closed(value: Any) -> bool:
    """A pillar error and nothing else: no rows, no empty pillar."""
    return (
        isinstance(value, dict) and set(value) == {"_errors"} and bool(value["_errors"])
    )


def _highstate_refused(ctx: TourContext) -> str:
    """The real minion's highstate must refuse to run on the failed pillar;
    a sentence saying so for the report ("" without a real minion)."""
    minion = ctx.real_minion
    if minion is None:
        return ""
    ret = ctx.stack.cmd(minion, "state.highstate", timeout=PILLAR_TIMEOUT).get(minion)
    if not (
        isinstance(ret, list)
        and any("Pillar failed to render" in str(line) for line in ret)
    ):
        raise ScenarioFailed(
            f"with PostgreSQL down {minion}'s state.highstate did not refuse to "
            f"run: {str(ret)[:200]}"
        )
    return (
        f' `state.highstate` on `{minion}` refused to run ("Pillar failed to render").'
    )


def fails_closed_and_recovers(ctx: TourContext) -> Finding:
    """PostgreSQL stopped: pillar errors only; started again: the pillars are back."""
    postgres = ctx.stack.postgres
    if postgres is None:
        return Finding("", skipped="external PostgreSQL: the demo does not stop it")
    if ctx.pillars is None:
        raise ScenarioFailed("no pillar rows stored (the previous scenario failed)")
    pillars = ctx.pillars
    sample = _sample(ctx, ctx.options.fail_closed_sample)
    pid = postgres.process.pid
    postgres.stop()
    try:
        down = _pillars(ctx, sample)
        refused = _highstate_refused(ctx)
    finally:
        postgres.start()
    leaked = [m for m in sample if not _failed_closed(down.get(m))]
    if leaked:
        first = leaked[0]
        raise ScenarioFailed(
            f"with PostgreSQL down {len(leaked)} of {len(sample)} minions got a pillar "
            f"that is not an error: {first} got {str(down.get(first))[:200]}"
        )
    errors = down[sample[0]]["_errors"]

    def recovered() -> dict[str, Any] | None:
        returns = _pillars(ctx, sample)
        return None if _mismatches(pillars, returns, sample) else returns

    if not wait_until(recovered, timeout=RECOVERY_TIMEOUT, interval=2):
        raise ScenarioFailed(
            f"PostgreSQL is back (pid {postgres.process.pid}) but the pillars of "
            f"{sample} did not equal the merged rows within {RECOVERY_TIMEOUT:.0f}s"
        )
    body = [
        f"Stopped PostgreSQL (pid {pid}) and asked {len(sample)} minions for "
        "`pillar.items`: every one got a pillar holding only `_errors`, no "
        f"row and no empty pillar.{refused} `{sample[0]}` saw:",
        "",
        "```",
        *(str(e) for e in errors[:3]),
        "```",
        "",
        f"Started PostgreSQL again (pid {postgres.process.pid}); without a master "
        "restart the same minions got their full pillars back.",
    ]
    return Finding(
        f"{len(sample)} pillar errors while down, full pillars after restart", body
    )


def register(registry: Registry) -> None:
    """Add the pillar section's scenarios to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "pillar rows at every scope merge exactly": rows_merge_exactly,
            "PostgreSQL down: fail closed, then recover": fails_closed_and_recovers,
        },
    )
