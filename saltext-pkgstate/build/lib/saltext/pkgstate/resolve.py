"""Which entry wins for each package on one minion: the precedence of states.

Precedence, lowest first (a later source overrides an earlier one per
package):

1. states assigned to the minion's organization (ascending assignment id)
2. states assigned to its groups: ascending group id, then assignment id
3. states assigned to a grain match that the minion's grains match
   (ascending assignment id)
4. named states assigned to the minion in a minion list (ascending
   assignment id)
5. the minion's own implicit state ``minion:<id>``, always the most specific

A state that reaches a minion through several assignments takes effect at its
most specific one (it is listed once in ``sources``).

The result is the pillar data of the ``pkgstate`` key::

    {"packages": {name: {"policy", "op", "version", "decided_by"[, "hold"]}},
     "sources": [{"state", "scope", "target", "revision"}, ...],
     "digest": sha256 hex}

``digest`` covers what the minion applies (name, policy, op, version of every
managed package), not ``decided_by`` or ``hold``: moving an identical entry to
another state does not make minions pending. :func:`digest_of` computes it
from a ``packages`` mapping. Returned entry dicts may be shared between
minions of one :func:`resolve` batch: treat them as read-only.
"""

from __future__ import annotations

import collections
import enum
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from saltext.pkgstate.model import Entry, GrainMatch, Operator, Policy


class Scope(enum.StrEnum):
    """Where a state's assignment reaches a minion from, lowest precedence first."""

    ORG = "org"
    GROUP = "group"
    GRAIN = "grain"
    MINION = "minion"
    OWN = "own"


_SCOPE_RANK: Final = {scope: i for i, scope in enumerate(Scope)}

#: Salt pkg providers whose modules let ``pkg.held`` work (``pkg.hold`` plus
#: ``list_locks``/``list_holds``/``get_selections``). yumpkg needs the
#: versionlock plugin on the minion.
HOLD_PROVIDERS: Final = frozenset({"aptpkg", "yumpkg", "zypperpkg"})

_PROVIDER_BY_OS_FAMILY: Final = {
    "Debian": "aptpkg",
    "RedHat": "yumpkg",
    "Suse": "zypperpkg",
    "Arch": "pacman",
    "Alpine": "apk",
    "Gentoo": "ebuild",
    "FreeBSD": "pkgng",
    "OpenBSD": "openbsdpkg",
    "NetBSD": "pkgin",
    "Solaris": "solarisipspkg",
    "MacOS": "mac_brew_pkg",
    "Windows": "win_pkg",
}


def pkg_provider(grains: Mapping[str, Any]) -> str:
    """The Salt ``pkg`` provider a minion with these grains loads (best guess)."""
    family = grains.get("os_family")
    if isinstance(family, str) and family in _PROVIDER_BY_OS_FAMILY:
        return _PROVIDER_BY_OS_FAMILY[family]
    return str(family or "unknown")


def hold_value(grains: Mapping[str, Any] | None) -> bool | str:
    """``True`` when the minion's provider supports holds, else the reason.

    With no grains (nothing known about the minion) holds are reported
    unsupported, never silently dropped.
    """
    provider = pkg_provider(grains or {})
    if provider in HOLD_PROVIDERS:
        return True
    return f"unsupported by {provider}"


def digest_line(name: str, policy: str, op: str, version: str) -> str:
    """One package's line of the digest input (the store builds it in SQL)."""
    return f"{name} {policy} {op} {version}"


def digest_of(packages: Mapping[str, Mapping[str, Any]]) -> str:
    """The digest of a resolved ``packages`` mapping (see the module docstring)."""
    lines = (
        digest_line(
            name,
            str(spec["policy"]),
            str(spec.get("op") or ""),
            str(spec.get("version") or ""),
        )
        for name, spec in sorted(packages.items())
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


_EQ: Final = Operator.EQ.value
_INSTALLED: Final = Policy.INSTALLED.value


class StateRevision:
    """One revision of one state, shared by every minion it reaches.

    Holds, per package, the resolved entry dict (with ``decided_by``) and its
    digest line, built once: resolving a minion is then dict updates only.
    """

    __slots__ = ("_by_hold", "_exact", "lines", "packages", "revision", "state")

    def __init__(
        self,
        state: str,
        revision: int,
        entries: Mapping[str, Entry] | None = None,
        *,
        rows: Iterable[Sequence[str | None]] = (),
    ) -> None:
        """From parsed ``entries``, or from ``rows`` of (name, policy, op, version).

        The store passes rows as read from the database (already valid).
        """
        self.state = state
        self.revision = revision
        if entries is not None:
            rows = [
                (e.name, e.policy.value, e.op.value if e.op else None, e.version)
                for e in entries.values()
            ]
        packages: dict[str, dict[str, Any]] = {}
        lines: dict[str, str] = {}
        exact: list[str] = []
        for name, policy, op, version in rows:
            assert name is not None and policy is not None
            if op is None:
                packages[name] = {"policy": policy, "decided_by": state}
                lines[name] = f"{name} {policy}  "
            else:
                packages[name] = {
                    "policy": policy,
                    "op": op,
                    "version": version,
                    "decided_by": state,
                }
                lines[name] = f"{name} {policy} {op} {version}"
                if op == _EQ and policy == _INSTALLED:
                    exact.append(name)
        self.packages = packages
        self.lines = lines
        self._exact = exact
        self._by_hold: dict[bool | str, dict[str, dict[str, Any]]] = {}

    def __repr__(self) -> str:
        """``StateRevision('web', 3, 200 packages)``."""
        return f"StateRevision({self.state!r}, {self.revision}, {len(self.packages)} packages)"

    def packages_for(self, hold: bool | str | None) -> dict[str, dict[str, Any]]:
        """The resolved entry dicts, exact versions marked with ``hold``."""
        if hold is None or not self._exact:
            return self.packages
        cached = self._by_hold.get(hold)
        if cached is None:
            cached = dict(self.packages)
            for name in self._exact:
                cached[name] = {**self.packages[name], "hold": hold}
            self._by_hold[hold] = cached
        return cached


@dataclass(frozen=True)
class Source:
    """A state revision reaching a minion through one assignment."""

    scope: Scope
    target: str
    rank: tuple[int, ...]
    revision: StateRevision

    def key(self) -> tuple[int, tuple[int, ...]]:
        """Sort key: scope first, then the rank within the scope."""
        return (_SCOPE_RANK[self.scope], self.rank)


def resolve(
    sources: Iterable[Source], *, hold: bool | str | None = None
) -> dict[str, Any]:
    """The resolved result for one minion from the sources that reach it.

    ``hold`` is :func:`hold_value` of the minion (``None``: leave ``hold``
    out of the entries). The sources may come in any order.
    """
    ordered = sorted(sources, key=Source.key)
    # a state reached twice counts at its most specific assignment
    last: dict[str, int] = {s.revision.state: i for i, s in enumerate(ordered)}
    effective = [s for i, s in enumerate(ordered) if last[s.revision.state] == i]
    packages: dict[str, dict[str, Any]] = {}
    lines: dict[str, str] = {}
    for source in effective:
        packages.update(source.revision.packages_for(hold))
        lines.update(source.revision.lines)
    names = sorted(packages)
    digest = hashlib.sha256("\n".join([lines[n] for n in names]).encode()).hexdigest()
    return {
        "packages": {name: packages[name] for name in names},
        "sources": [
            {
                "state": s.revision.state,
                "scope": s.scope.value,
                "target": s.target,
                "revision": s.revision.revision,
            }
            for s in effective
        ],
        "digest": digest,
    }


class Reach:
    """Which state revisions reach which minions: the assignments of one
    resolution, indexed by their targets.

    The store reads assignments and memberships in a few queries for many
    minions; choosing the sources of each minion is then lookups and grain
    matching, without the database.
    """

    def __init__(self) -> None:
        self._by_org: dict[int, list[Source]] = collections.defaultdict(list)
        self._by_group: dict[int, list[Source]] = collections.defaultdict(list)
        self._by_minion: dict[str, list[Source]] = collections.defaultdict(list)
        self._by_grain: list[tuple[GrainMatch, Source]] = []
        self._own: dict[str, StateRevision] = {}

    def add_org(
        self, org_id: int, target: str, assignment_id: int, revision: StateRevision
    ) -> None:
        """``revision`` reaches the members of organization ``org_id``."""
        self._by_org[org_id].append(
            Source(Scope.ORG, target, (assignment_id,), revision)
        )

    def add_group(
        self, group_id: int, target: str, assignment_id: int, revision: StateRevision
    ) -> None:
        """``revision`` reaches the members of group ``group_id``."""
        self._by_group[group_id].append(
            Source(Scope.GROUP, target, (group_id, assignment_id), revision)
        )

    def add_grain(
        self, match: GrainMatch, assignment_id: int, revision: StateRevision
    ) -> None:
        """``revision`` reaches the minions whose grains ``match``."""
        self._by_grain.append(
            (match, Source(Scope.GRAIN, match.expression, (assignment_id,), revision))
        )

    def add_minion(
        self, minion_id: str, assignment_id: int, revision: StateRevision
    ) -> None:
        """``revision`` reaches ``minion_id`` through a minion list."""
        self._by_minion[minion_id].append(
            Source(Scope.MINION, minion_id, (assignment_id,), revision)
        )

    def add_own(self, minion_id: str, revision: StateRevision) -> None:
        """``revision`` is the minion's own state."""
        self._own[minion_id] = revision

    def sources(
        self,
        minion_id: str,
        *,
        org_id: int | None,
        group_ids: Sequence[int],
        grains: Mapping[str, Any] | None,
    ) -> list[Source]:
        """The sources that reach one minion (``org_id`` None: in no
        organization; ``grains`` None: no grain match applies)."""
        sources: list[Source] = []
        if org_id is not None:
            sources.extend(self._by_org.get(org_id, ()))
        for group_id in group_ids:
            sources.extend(self._by_group.get(group_id, ()))
        if grains is not None:
            sources.extend(s for m, s in self._by_grain if m.matches(grains))
        sources.extend(self._by_minion.get(minion_id, ()))
        own = self._own.get(minion_id)
        if own is not None:
            sources.append(Source(Scope.OWN, minion_id, (0,), own))
        return sources


def empty_result() -> dict[str, Any]:
    """The resolved result of a minion that no state reaches."""
    return resolve(())


def decided_by(resolved: Mapping[str, Any]) -> dict[str, str]:
    """Package name -> name of the state that decided it."""
    packages: Mapping[str, Mapping[str, Any]] = resolved["packages"]
    return {name: str(spec["decided_by"]) for name, spec in packages.items()}


def sources_in_order(sources: Sequence[Source]) -> list[Source]:
    """``sources`` in precedence order, lowest first."""
    return sorted(sources, key=Source.key)
