"""The pillar data of a fleet, independent of where it is stored.

A :class:`FleetPillars` is organizations, groups (in merge order), minions with
their organization and groups (:class:`MinionMembership`), and pillar rows at
four scopes. :func:`merged_pillar` is the reference merge: what a minion's
pillar must be, whichever way it is compiled.

(Not to be confused with the simulated minions of ``evil_minions`` or the real
salt-minion of :class:`harness.minion.SaltMinion`: this is only pillar data.)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

Scope = Literal["global", "org", "group", "minion"]
SCOPES: tuple[Scope, ...] = ("global", "org", "group", "minion")


@dataclass(frozen=True)
class Group:
    """A group of one organization; groups merge in the fleet's group order."""

    org: str
    name: str

    @property
    def key(self) -> str:
        """``org/name``: how minions and group-scope rows refer to the group."""
        return f"{self.org}/{self.name}"


@dataclass
class MinionMembership:
    """Where one minion sits: its organization and its groups."""

    org: str
    groups: list[str] = field(default_factory=list)  # Group.key values


@dataclass
class PillarRow:
    """One piece of pillar data at one scope, under one category."""

    scope: Scope
    target: str | None  # org name, Group.key, minion id; None for global
    category: str
    data: dict[str, Any]

    @property
    def label(self) -> str:
        """``scope target [category]``, for messages and change lists."""
        where = self.scope if self.target is None else f"{self.scope} {self.target}"
        return f"{where} [{self.category}]"


@dataclass
class FleetPillars:
    """The pillar data of a whole fleet: who belongs where, and every row."""

    orgs: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)  # merge order
    minions: dict[str, MinionMembership] = field(default_factory=dict)
    rows: list[PillarRow] = field(default_factory=list)

    def group_order(self) -> dict[str, int]:
        """Group key -> merge position (later groups win)."""
        return {g.key: i for i, g in enumerate(self.groups)}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Salt's pillar merge: mappings merge recursively, anything else replaces."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def rows_for(fleet: FleetPillars, minion_id: str) -> list[PillarRow]:
    """The rows that apply to ``minion_id``, in merge order."""
    minion = fleet.minions.get(minion_id)
    order = fleet.group_order()

    def rank(row: PillarRow) -> tuple[int, int, str]:
        group_rank = order.get(row.target or "", 0) if row.scope == "group" else 0
        return (SCOPES.index(row.scope), group_rank, row.category)

    def applies(row: PillarRow) -> bool:
        if row.scope == "global":
            return True
        if minion is None:
            return False
        if row.scope == "org":
            return row.target == minion.org
        if row.scope == "group":
            return row.target in minion.groups
        return row.target == minion_id

    return sorted((r for r in fleet.rows if applies(r)), key=rank)


def merged_pillar(fleet: FleetPillars, minion_id: str) -> dict[str, Any]:
    """The pillar ``minion_id`` must get: its rows merged in order."""
    result: dict[str, Any] = {}
    for row in rows_for(fleet, minion_id):
        deep_merge(result, row.data)
    return result
