"""The package states section: states in PostgreSQL at org, group and minion
scope, applied by highstates of simulated minions, tracked through the
``pkgset`` beacon, with history, rollback and export.

Three simulated minions are moved into an organization of their own
(``pkgdemo``, group ``pkgdemo/web``) so that no state of this section ever
reaches the real salt-minion: its highstate would change the host. The
simulated minions apply package states to their synthetic package sets.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from harness.pillar.model import Group
from harness.pillar.store import PillarStore
from harness.polling import wait_until
from tour.context import TourContext
from tour.registry import Capability, Finding, Registry, ScenarioFailed

SECTION = "package states"
#: the tour shows this section only when the extension is installed
CAPABILITY = Capability(
    SECTION,
    "saltext.pkgstate",
    "per-package states in PostgreSQL applied by highstates, the pkgset beacon",
)
ORG = "pkgdemo"
GROUP = Group(ORG, "web")
BASE_STATE, GROUP_STATE = "pkgdemo-base", "pkgdemo-web"
MEMBERS = 3
APPLY_TIMEOUT = 180
#: how long the engine may take to store what an event asked for
ENGINE_TIMEOUT = 60.0
#: a package-manager run outside Salt that updates every installed package
EVERY_PACKAGE = 10_000


def _salt_run(ctx: TourContext, *args: str) -> Any:
    master = ctx.stack.master
    if master is None:
        raise ScenarioFailed("the stack has no master")
    done = master.run_cli("salt-run", "--out", "json", *args)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        out = None
    if done.returncode != 0 or out is None:
        raise ScenarioFailed(
            f"salt-run {' '.join(args)} failed (exit {done.returncode}): "
            f"{(done.stdout + done.stderr).strip()[-300:]}"
        )
    return out


def _store(ctx: TourContext) -> Any:
    from saltext.pkgstate.store import PackageStateStore

    assert ctx.stack.pg is not None
    return PackageStateStore(ctx.stack.pg.dsn)


def _members(ctx: TourContext) -> list[str]:
    """The simulated minions of group pkgdemo/web (put there on first use)."""
    members = ctx.fleet_ids[:MEMBERS]
    assert ctx.stack.pg is not None
    conn = ctx.stack.pg.connect()
    try:
        pillars = PillarStore(conn)
        with pillars.transaction() as cur:
            group_id = pillars.ensure_group(cur, GROUP)
            for minion in members:
                pillars.set_membership(
                    cur, pillars.ensure_server(cur, minion, ORG), [group_id]
                )
    finally:
        conn.close()
    return members


def _plan(ctx: TourContext) -> dict[str, Any]:
    """Package names for the section's states, chosen from what the target
    minion has installed and what its repositories offer."""
    from harness.fleet import offered_fillers

    members = _members(ctx)
    target = members[0]
    installed = ctx.stack.cmd(target, "pkg.list_pkgs", timeout=60)[target]
    offered = ctx.stack.cmd(target, "pkg.list_repo_pkgs", timeout=60)[target]
    if not isinstance(installed, dict) or not isinstance(offered, dict):
        raise ScenarioFailed(f"{target} did not list its packages: {installed!r:.200}")
    orphans = sorted(set(installed) - set(offered))
    if not orphans:
        raise ScenarioFailed(f"{target} has no installed package without a candidate")
    base, latest, at_least, removed, pinned, added = offered_fillers(6)
    return {
        "members": members,
        "target": target,
        "orphan": orphans[0],
        "base": base,
        "group": [f"{latest}@latest", f"{at_least}>=0.1", f"{removed}@removed"],
        "own": [orphans[0], f"{pinned}=={installed[pinned]}"],
        "pinned": pinned,
        "removed": removed,
        "added": added,
    }


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *(
            "| " + " | ".join(f"`{c}`" if c != "" else "" for c in r) + " |"
            for r in rows
        ),
    ]


def _entry(spec: dict[str, Any]) -> str:
    head = "" if spec["policy"] == "installed" else f"@{spec['policy']}"
    return f"{head}{spec.get('op', '')}{spec.get('version', '')}"


def states_resolve(ctx: TourContext) -> Finding:
    """Org, group and minion states; the resolved result says who decided."""
    plan = _plan(ctx)
    ctx.pkgstates = plan
    target = plan["target"]
    commands = [
        ["pkgstate.set", BASE_STATE, plan["base"]],
        ["pkgstate.assign", BASE_STATE, f"org={ORG}"],
        ["pkgstate.set", GROUP_STATE, *plan["group"]],
        ["pkgstate.assign", GROUP_STATE, f"group={GROUP.key}"],
        ["pkgstate.set", f"minion:{target}", *plan["own"]],
    ]
    for args in commands:
        _salt_run(ctx, *args)
    resolved = _salt_run(ctx, "pkgstate.show", f"minion={target}")
    packages = resolved["packages"]
    want = {
        plan["base"]: BASE_STATE,
        **{e.split("@")[0].split(">")[0]: GROUP_STATE for e in plan["group"]},
        plan["orphan"]: f"minion:{target}",
        plan["pinned"]: f"minion:{target}",
    }
    got = {name: spec["decided_by"] for name, spec in packages.items()}
    if got != want:
        raise ScenarioFailed(f"{target} resolved {got}, expected {want}")
    rows = [
        [name, name + _entry(spec), spec["decided_by"]]
        for name, spec in sorted(packages.items())
    ]
    body = [
        "Saved three states and assigned them (every save is a new revision):",
        "",
        "```",
        *(f"salt-run {' '.join(args)}" for args in commands),
        "```",
        "",
        f"`salt-run pkgstate.show minion={target}` (org < group < the minion's own "
        "state; sources in precedence order: "
        + ", ".join(f"{s['state']} r{s['revision']}" for s in resolved["sources"])
        + "):",
        "",
        *_table(["package", "entry", "decided_by"], rows),
    ]
    return Finding(
        f"{len(packages)} packages from 3 states, decided_by as expected", body
    )


def _plan_of(ctx: TourContext) -> dict[str, Any]:
    plan = ctx.pkgstates
    if plan is None:
        raise ScenarioFailed("no package states saved (the first scenario failed)")
    return plan


def _apply(ctx: TourContext, minions: list[str], *, test: bool) -> dict[str, Any]:
    returns = ctx.stack.cmd(
        ",".join(minions),
        "state.apply",
        tgt_type="list",
        kwarg={"test": test},
        timeout=APPLY_TIMEOUT,
    )
    bad = [m for m in minions if not isinstance(returns.get(m), dict)]
    if bad:
        raise ScenarioFailed(
            f"state.apply on {bad} returned {returns.get(bad[0])!r:.200}"
        )
    return returns


def _pkg_chunks(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The package-state chunks of a state run, by state ID."""
    return {
        key.split("_|-")[1]: chunk
        for key, chunk in run.items()
        if "_|-pkgstate-" in key
    }


def _statuses(ctx: TourContext, minion: str, grains: dict[str, Any]) -> dict[str, str]:
    with _store(ctx) as store:
        packages = store.status(minion, grains)["packages"]
    return {name: spec["status"] for name, spec in packages.items()}


def _expected_after_apply(plan: dict[str, Any]) -> dict[str, str]:
    names = [plan["base"], plan["pinned"], plan["removed"]]
    names += [e.split("@")[0].split(">")[0] for e in plan["group"]]
    return {name: "consistent" for name in names} | {plan["orphan"]: "orphan-kept"}


def highstate_then_consistent(ctx: TourContext) -> Finding:
    """test=True changes nothing; the real run does; status turns consistent."""
    from harness.fleet import fire_beacons

    plan = _plan_of(ctx)
    members, target = plan["members"], plan["target"]
    before = ctx.stack.cmd(target, "pkg.list_pkgs", timeout=60)[target]
    dry = _pkg_chunks(_apply(ctx, members, test=True)[target])
    if ctx.stack.cmd(target, "pkg.list_pkgs", timeout=60)[target] != before:
        raise ScenarioFailed("state.apply test=True changed the package set")
    would = sorted(sid for sid, c in dry.items() if c["result"] is None)
    real = _apply(ctx, members, test=False)
    chunks = _pkg_chunks(real[target])
    failed = [
        sid
        for m in members
        for sid, c in _pkg_chunks(real[m]).items()
        if c["result"] is not True
    ]
    changed = sorted(sid for sid, c in chunks.items() if c["changes"])
    if failed or changed != would:
        raise ScenarioFailed(
            f"the real run failed {failed[:3]} or changed {changed}, test=True "
            f"announced {would}"
        )
    # no change outside Salt: the beacons make the engine store inventories
    # and candidates of every member
    assert ctx.stack.fleet is not None
    fire_beacons(ctx.stack.fleet.config.run_dir, members, change_packages=False)
    grains = ctx.stack.cmd(target, "grains.items", timeout=60)[target]
    want = _expected_after_apply(plan)
    got = wait_until(
        lambda: (s := _statuses(ctx, target, grains)) == want and s,
        timeout=ENGINE_TIMEOUT,
    )
    if not got:
        raise ScenarioFailed(
            f"{target}'s status is {_statuses(ctx, target, grains)}, expected {want}"
        )
    rows = [
        [
            sid,
            "would change" if dry[sid]["result"] is None else "no change",
            json.dumps(chunks[sid]["changes"]) if chunks[sid]["changes"] else "",
            got.get(sid.split("-", 2)[2], ""),
        ]
        for sid in sorted(chunks)
    ]
    body = [
        f"`salt -L {','.join(members)} state.apply test=True` (a highstate: the "
        f"`pkgstate` master_tops adds the SLS): {len(would)} of {len(dry)} package "
        f"states of `{target}` would change, and its `pkg.list_pkgs` stayed the same. "
        "The real highstate changed exactly those; after the `pkgset` beacon the "
        "engine stored the inventory and the candidates of the managed packages "
        "(`pkg.list_repo_pkgs`), and `pkgstate.status` says:",
        "",
        *_table(["state ID", "test=True", "changes (real run)", "status"], rows),
        "",
        f"`{plan['orphan']}` is installed and managed but no repository offers it: "
        "orphan-kept.",
    ]
    return Finding(
        f"test=True: {len(would)} would change, nothing changed; real run: "
        "consistent (1 orphan-kept)",
        body,
    )


def change_outside_salt(ctx: TourContext) -> Finding:
    """A package-manager run outside Salt, the beacon, and status inconsistent."""
    from harness.fleet import fire_beacons

    plan = _plan_of(ctx)
    target = plan["target"]
    with _store(ctx) as store:
        before = store.inventory(target)
    assert ctx.stack.fleet is not None and ctx.stack.listener is not None
    since = ctx.stack.listener.mark()
    report = fire_beacons(
        ctx.stack.fleet.config.run_dir, [target], packages=EVERY_PACKAGE
    )
    event = ctx.stack.listener.wait_for(
        f"salt/beacon/{target}/pkgset/changed", timeout=30, since=since
    )
    if report.fired != [target] or event is None:
        raise ScenarioFailed(f"{target} fired no pkgset beacon the master saw")

    def refreshed() -> Any:
        with _store(ctx) as store:
            now = store.inventory(target)
        if now is None or (before and now.refreshed_at == before.refreshed_at):
            return None
        return now

    after = wait_until(refreshed, timeout=ENGINE_TIMEOUT)
    if not after:
        raise ScenarioFailed("the engine stored no new inventory after the beacon")
    status = _salt_run(ctx, "pkgstate.status", target)
    statuses = {n: p["status"] for n, p in status["packages"].items()}
    want = _expected_after_apply(plan) | {plan["pinned"]: "inconsistent"}
    if statuses != want:
        raise ScenarioFailed(f"{target}'s status is {statuses}, expected {want}")
    pinned = plan["pinned"]
    old = (before.packages.get(pinned) if before else None) or ["?"]
    new = after.packages.get(pinned) or ["?"]
    was = f"{before.refreshed_at:%H:%M:%S.%f} -> " if before else ""
    body = [
        f"Every package of `{target}` was updated outside Salt (newer than its "
        "repositories), as a package-manager run outside Salt would. The simulated minion fired "
        f"`salt/beacon/{target}/pkgset/changed` with the cookie line "
        f"`{event.data.get('value')}`; the engine asked for `pkg.list_pkgs` and "
        f"stored it (inventory time {was}{after.refreshed_at:%H:%M:%S.%f}).",
        "",
        f"`{pinned}` was pinned to `{old[0]}` by `{target}`'s own state and is now "
        f"`{new[0]}`: `salt-run pkgstate.status {target}` counts "
        f"{status['counts']}.",
    ]
    return Finding(f"beacon -> inventory refreshed -> {pinned} inconsistent", body)


def history_rollback_export(ctx: TourContext) -> Finding:
    """History, diff, rollback; the export is exactly what a highstate applies."""
    from saltext.pkgstate.render import canonical

    plan = _plan_of(ctx)
    target = plan["target"]
    _salt_run(ctx, "pkgstate.update", GROUP_STATE, plan["added"])
    diff = _salt_run(ctx, "pkgstate.diff", GROUP_STATE)
    back = _salt_run(ctx, "pkgstate.rollback", GROUP_STATE, "revision=1")
    history = _salt_run(ctx, "pkgstate.history", GROUP_STATE)
    if diff.get("added") != {plan["added"]: plan["added"]} or [
        h["revision"] for h in history
    ] != [1, 2, 3]:
        raise ScenarioFailed(f"diff {diff} / history {history} not as saved")
    if history[2]["packages"] != history[0]["packages"]:
        raise ScenarioFailed("the rollback's revision differs from revision 1")
    exported = _salt_run(ctx, "pkgstate.export", f"minion={target}")
    sls = canonical(yaml.safe_load(exported) or {})
    run = _apply(ctx, [target], test=False)[target]
    # a state run's keys are <module>_|-<id>_|-<name>_|-<function>
    parts = [key.split("_|-") for key in run if "_|-pkgstate-" in key]
    applied = {(p[1], f"{p[0]}.{p[3]}") for p in parts}
    export_ids = {(sid, fun) for sid, body in sls.items() for fun in body}
    if applied != export_ids:
        raise ScenarioFailed(
            f"the export has {sorted(export_ids - applied)[:3]} the highstate did "
            f"not apply, the highstate {sorted(applied - export_ids)[:3]} not exported"
        )
    body = [
        f"`salt-run pkgstate.update {GROUP_STATE} {plan['added']}` saved revision 2; "
        f"`pkgstate.diff {GROUP_STATE}` shows `added: {diff['added']}`; "
        f"`pkgstate.rollback {GROUP_STATE} revision=1` saved revision "
        f"{back['revision']} equal to revision 1. `pkgstate.history`:",
        "",
        *_table(
            ["revision", "comment", "packages"],
            [
                [
                    h["revision"],
                    h["comment"] or "",
                    " ".join(sorted(h["packages"].values())),
                ]
                for h in history
            ],
        ),
        "",
        f"`salt-run pkgstate.export minion={target}` prints a plain SLS file with "
        f"{len(export_ids)} states; the highstate that followed applied exactly "
        "these state IDs and functions:",
        "",
        "```yaml",
        *str(exported).strip().splitlines(),
        "```",
    ]
    return Finding(
        f"3 revisions, rollback = revision 1, export = applied ({len(export_ids)} states)",
        body,
    )


def register(registry: Registry) -> None:
    """Add the package states section's scenarios to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "org, group and minion states resolve": states_resolve,
            "highstate test=True, then for real": highstate_then_consistent,
            "a change outside Salt turns inconsistent": change_outside_salt,
            "history, rollback, export = applied": history_rollback_export,
        },
    )
