"""Pillars as files: the Uyuni-like tree the migration imports from, which is
also a working Salt ``pillar_roots`` (the file-pillar benchmark variant).

::

    fleet.yaml                     orgs, groups (merge order), minions
    global/<category>.sls
    org/<org>/<category>.sls
    group/<org>/<group>/<category>.sls
    minion/<minion>/<category>.sls
    top.sls                        written from fleet.yaml; not read by the import

Directory names are slugs (``.`` and other characters Salt's SLS names
cannot carry become ``_``); ``fleet.yaml`` holds the real names. SLS files
are YAML; ``.json`` files are read as JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from harness.pillar.model import (
    SCOPES,
    FleetPillars,
    Group,
    MinionMembership,
    PillarRow,
    rows_for,
)
from harness.yamlfile import describe_error

FLEET_FILE = "fleet.yaml"
_SLUG_RE = re.compile(r"[^A-Za-z0-9_-]")
_CATEGORY_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class PillarTreeError(HarnessError):
    """One or more files of a pillar tree are unusable; nothing was written."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            f"{len(problems)} problem(s) in the pillar tree; nothing was written:\n"
            + "\n".join(f"  {p}" for p in problems)
        )


def slug(name: str) -> str:
    """``name`` with every character unsafe in a file name replaced by ``_``."""
    return _SLUG_RE.sub("_", name)


def _row_path(row: PillarRow, fleet: FleetPillars) -> Path:
    if row.scope == "global":
        return Path("global") / f"{row.category}.sls"
    assert row.target is not None
    if row.scope == "group":
        org, name = row.target.split("/", 1)
        return Path("group") / slug(org) / slug(name) / f"{row.category}.sls"
    return Path(row.scope) / slug(row.target) / f"{row.category}.sls"


def _sls_name(path: Path) -> str:
    return ".".join(path.with_suffix("").parts)


def write_tree(fleet: FleetPillars, root: Path) -> None:
    """Write ``fleet`` as a pillar tree (with a top.sls) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    description = {
        "orgs": list(fleet.orgs),
        "groups": [{"org": g.org, "name": g.name} for g in fleet.groups],
        "minions": {
            mid: {"org": m.org, "groups": [k.split("/", 1)[1] for k in m.groups]}
            for mid, m in fleet.minions.items()
        },
    }
    (root / FLEET_FILE).write_text(yaml.safe_dump(description, sort_keys=False))
    for row in fleet.rows:
        path = root / _row_path(row, fleet)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(row.data, sort_keys=False))
    (root / "top.sls").write_text(render_top(fleet))


def render_top(fleet: FleetPillars) -> str:
    """A top.sls giving every minion its rows in the reference merge order.

    Each minion gets its own entry listing the SLS of all its rows in order,
    because Salt merges the SLS of one top entry in list order, while the
    order *between* entries that match the same minion is not something the
    format promises.
    """
    top: dict[str, Any] = {}
    for minion_id in fleet.minions:
        sls = [_sls_name(_row_path(r, fleet)) for r in rows_for(fleet, minion_id)]
        if sls:
            top[minion_id] = [{"match": "list"}, *sls]
    text: str = yaml.safe_dump({"base": top}, sort_keys=False)
    return text


def _load(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        problems.append(f"{path}: cannot be read: {describe_error(exc)}")
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        problems.append(f"{path}: must hold a mapping, holds a {type(data).__name__}")
        return None
    return data


def read_tree(root: Path) -> FleetPillars:
    """Parse a pillar tree; every problem is collected and raised together."""
    problems: list[str] = []
    if not root.is_dir():
        raise PillarTreeError([f"{root}: not a directory"])
    desc = _load(root / FLEET_FILE, problems) if (root / FLEET_FILE).exists() else None
    if desc is None:
        problems.append(
            f"{root / FLEET_FILE}: missing or unusable (orgs, groups, minions)"
        )
        raise PillarTreeError(problems)
    fleet = FleetPillars()
    fleet.orgs = [str(o) for o in desc.get("orgs") or []]
    for entry in desc.get("groups") or []:
        if (
            not isinstance(entry, dict)
            or entry.get("org") not in fleet.orgs
            or not entry.get("name")
        ):
            problems.append(
                f"{root / FLEET_FILE}: group {entry!r} needs a name and a known org"
            )
            continue
        fleet.groups.append(Group(str(entry["org"]), str(entry["name"])))
    known_groups = {g.key for g in fleet.groups}
    for minion_id, entry in (desc.get("minions") or {}).items():
        entry = entry or {}
        org = entry.get("org")
        if org not in fleet.orgs:
            problems.append(
                f"{root / FLEET_FILE}: minion {minion_id} has unknown org {org!r}"
            )
            continue
        keys = [f"{org}/{name}" for name in entry.get("groups") or []]
        unknown = [k for k in keys if k not in known_groups]
        if unknown:
            problems.append(
                f"{root / FLEET_FILE}: minion {minion_id} is in unknown group(s) "
                f"{', '.join(unknown)} of org {org}"
            )
            continue
        order = fleet.group_order()
        fleet.minions[str(minion_id)] = MinionMembership(
            org, sorted(keys, key=order.__getitem__)
        )

    targets = {
        "org": {slug(o): o for o in fleet.orgs},
        "group": {f"{slug(g.org)}/{slug(g.name)}": g.key for g in fleet.groups},
        "minion": {slug(m): m for m in fleet.minions},
    }
    counts = {
        "org": len(fleet.orgs),
        "group": len(fleet.groups),
        "minion": len(fleet.minions),
    }
    for scope, names in targets.items():
        if len(names) != counts[scope]:
            problems.append(
                f"{root}: two {scope} names share a directory name after slugging"
            )

    for path in sorted(root.rglob("*")):
        if path.is_dir() or path.name in (FLEET_FILE, "top.sls"):
            continue
        rel = path.relative_to(root)
        scope = rel.parts[0]
        if path.suffix not in (".sls", ".json", ".yml", ".yaml") or scope not in SCOPES:
            problems.append(
                f"{path}: not a pillar file (expected <scope>/.../<category>.sls)"
            )
            continue
        category = path.stem
        if not _CATEGORY_RE.match(category):
            problems.append(
                f"{path}: category {category!r} must be letters, digits, _ or -"
            )
            continue
        dir_key = "/".join(rel.parts[1:-1])
        target: str | None
        if scope == "global":
            target = None
            if dir_key:
                problems.append(f"{path}: global pillar files lie directly in global/")
                continue
        else:
            target = targets[scope].get(dir_key)
            if target is None:
                problems.append(f"{path}: no {scope} {dir_key!r} in {FLEET_FILE}")
                continue
        data = _load(path, problems)
        if data is not None:
            fleet.rows.append(PillarRow(scope, target, category, data))
    seen: set[tuple[str, str | None, str]] = set()
    for row in fleet.rows:
        key = (row.scope, row.target, row.category)
        if key in seen:
            problems.append(f"{row.label}: defined by more than one file")
        seen.add(key)
    if problems:
        raise PillarTreeError(problems)
    return fleet
