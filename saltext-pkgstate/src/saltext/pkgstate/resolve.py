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

import enum
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from saltext.pkgstate.model import Entry, Operator, Policy


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


def _digest_line(name: str, policy: str, op: str, version: str) -> str:
    return f"{name} {policy} {op} {version}"


def digest_of(packages: Mapping[str, Mapping[str, Any]]) -> str:
    """The digest of a resolved ``packages`` mapping (see the module docstring)."""
    lines = (
        _digest_line(
            name,
            str(spec["policy"]),
            str(spec.get("op") or ""),
            str(spec.get("version") or ""),
        )
        for name, spec in sorted(packages.items())
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


_Prepared = dict[str, tuple[dict[str, Any], str]]


@dataclass(eq=False)
class StateRevision:
    """One revision of one state, shared by every minion it reaches."""

    state: str
    revision: int
    entries: Mapping[str, Entry]
    _prepared: dict[bool | str | None, _Prepared] = field(
        default_factory=dict, repr=False
    )

    def prepared(self, hold: bool | str | None) -> _Prepared:
        """Per package: (resolved entry dict, digest line); cached per hold value."""
        cached = self._prepared.get(hold)
        if cached is None:
            cached = {}
            for name, entry in self.entries.items():
                out: dict[str, Any] = entry.as_dict()
                out["decided_by"] = self.state
                if (
                    hold is not None
                    and entry.policy is Policy.INSTALLED
                    and entry.op is Operator.EQ
                ):
                    out["hold"] = hold
                line = _digest_line(
                    name, entry.policy.value, out.get("op", ""), out.get("version", "")
                )
                cached[name] = (out, line)
            self._prepared[hold] = cached
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
    chosen: _Prepared = {}
    for source in effective:
        chosen.update(source.revision.prepared(hold))
    names = sorted(chosen)
    digest = hashlib.sha256(
        "\n".join(chosen[name][1] for name in names).encode()
    ).hexdigest()
    return {
        "packages": {name: chosen[name][0] for name in names},
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
