"""The status of each managed package on a minion, from its resolved state,
its inventory and its last applied record: pure functions, no database."""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from saltext.pkgstate.applied import Applied, applied_entry
from saltext.pkgstate.inventory import Inventory
from saltext.pkgstate.model import Operator, Policy, compare_versions, version_satisfies

#: Status values of a managed package on a minion.
CONSISTENT: Final = "consistent"
PENDING: Final = "pending"
INCONSISTENT: Final = "inconsistent"
ORPHAN_KEPT: Final = "orphan-kept"
#: No inventory was ever recorded for the minion.
UNKNOWN: Final = "unknown"


def status_report(
    minion_id: str,
    resolved: Mapping[str, Any],
    inventory: Inventory | None,
    applied: Applied | None,
) -> dict[str, Any]:
    """Status of every managed package of one minion.

    Returns ``{"minion", "digest", "applied_digest", "applied_at",
    "inventory_at", "packages": {name: {"status", "policy", "op",
    "version", "decided_by", "installed"}}, "counts": {status: n}}``.
    """
    packages: dict[str, dict[str, Any]] = {}
    for name, spec in resolved["packages"].items():
        installed = inventory.packages.get(name, []) if inventory else []
        state = package_status(
            name,
            spec,
            installed=installed if inventory else None,
            available=inventory.available if inventory else None,
            applied=applied,
            digest=resolved["digest"],
        )
        packages[name] = {
            **{k: v for k, v in spec.items() if k != "hold"},
            "status": state,
            "installed": installed,
        }
    counts = collections.Counter(p["status"] for p in packages.values())
    return {
        "minion": minion_id,
        "digest": resolved["digest"],
        "applied_digest": applied.digest if applied else None,
        "applied_at": applied.applied_at.isoformat() if applied else None,
        "inventory_at": inventory.refreshed_at.isoformat() if inventory else None,
        "packages": packages,
        "counts": dict(sorted(counts.items())),
    }


def package_status(
    name: str,
    spec: Mapping[str, Any],
    *,
    installed: Sequence[str] | None,
    available: Mapping[str, Sequence[str]] | None,
    applied: Applied | None,
    digest: str,
) -> str:
    """The status of one managed package (see the contract's status values).

    ``pending`` first: the entry is not what the minion last applied (never
    applied, or applied with another digest and the entry differs or the
    applied packages are unknown). Then a package that is installed and
    satisfies its entry but was looked up in the minion's repositories
    (``available`` has its name) without a candidate is ``orphan-kept``; otherwise ``consistent`` if the inventory satisfies the
    entry, else ``inconsistent``. Without an inventory: ``unknown``.
    """
    if applied is None:
        return PENDING
    if applied.digest != digest and (
        applied.packages is None or applied.packages.get(name) != applied_entry(spec)
    ):
        return PENDING
    if installed is None:
        return UNKNOWN
    policy = Policy(spec["policy"])
    op = Operator(spec["op"]) if spec.get("op") else None
    version = spec.get("version")
    # a name that was never looked up in the repositories has no known candidates
    candidates = (
        None if available is None or name not in available else list(available[name])
    )
    orphan = bool(installed) and candidates is not None and not candidates
    if policy is Policy.INSTALLED:
        ok = bool(installed) and (
            op is None
            or version is None
            or any(version_satisfies(v, op, version) for v in installed)
        )
    elif policy is Policy.LATEST:
        newest = _newest(installed)
        best = _newest(candidates or [])
        ok = newest is not None and (
            best is None or compare_versions(newest, best) >= 0
        )
    elif policy is Policy.ABSENT:
        assert op is not None and version is not None
        ok = not any(version_satisfies(v, op, version) for v in installed)
        orphan = False
    else:
        ok = not installed
        orphan = False
    if ok and orphan:
        return ORPHAN_KEPT
    return CONSISTENT if ok else INCONSISTENT


def _newest(versions: Iterable[str]) -> str | None:
    """The highest of ``versions`` (rpm ordering), None for none."""
    return max(versions, key=functools.cmp_to_key(compare_versions), default=None)


__all__ = [
    "CONSISTENT",
    "INCONSISTENT",
    "ORPHAN_KEPT",
    "PENDING",
    "UNKNOWN",
    "package_status",
    "status_report",
]
