"""What is installed on each minion: its last ``pkg.list_pkgs`` (and the
candidates of its repositories when known), one row per minion."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from saltext.pkgstate.db import StorePart
from saltext.pkgstate.model import PkgStateError


@dataclass(frozen=True)
class Inventory:
    """A minion's installed packages (and candidates when known)."""

    minion_id: str
    packages: dict[str, list[str]]
    available: dict[str, list[str]] | None
    refreshed_at: datetime


def _versions(value: Any, what: str) -> list[str]:
    """``"1.2"``, ``["1.2", "1.3"]`` or ``"1.2,1.3"`` as a list of strings."""
    if isinstance(value, str):
        return [v for v in (s.strip() for s in value.split(",")) if v]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise PkgStateError(f"{what}: versions must be a string or a list of strings")


def normalize_pkg_versions(
    packages: Mapping[str, Any], what: str
) -> dict[str, list[str]]:
    """``{name: versions}`` of ``pkg.list_pkgs``-like input, every value a list."""
    if not isinstance(packages, Mapping):
        raise PkgStateError(f"{what} must be a mapping of package name to version(s)")
    out: dict[str, list[str]] = {}
    for name, value in packages.items():
        if not isinstance(name, str) or not name:
            raise PkgStateError(f"{what}: bad package name {name!r}")
        out[name] = _versions(value, f"{what} {name}")
    return out


class InventoryRecords(StorePart):
    """Write and read the minions' stored inventories."""

    def write_inventory(
        self,
        minion_id: str,
        packages: Mapping[str, Any],
        *,
        available: Mapping[str, Any] | None = None,
    ) -> None:
        """Replace a minion's installed packages with ``pkg.list_pkgs`` output.

        ``available`` maps package names to their candidate versions in the
        minion's repositories (``pkg.list_repo_pkgs``-like, ``[]`` for a name
        without a candidate) and replaces the stored candidates; ``None``
        keeps the stored ones (see :meth:`write_available`).
        """
        if not isinstance(minion_id, str) or not minion_id:
            raise PkgStateError("inventory needs a minion id")
        installed = normalize_pkg_versions(packages, "inventory")
        candidates = (
            None
            if available is None
            else normalize_pkg_versions(available, "available")
        )
        with self._db.tx() as cur:
            cur.execute(
                "INSERT INTO pkgstate_inventory (minion_id, packages, available)"
                " VALUES (%s, %s, %s) ON CONFLICT (minion_id) DO UPDATE SET"
                " packages = EXCLUDED.packages,"
                " available = coalesce(EXCLUDED.available, pkgstate_inventory.available),"
                " refreshed_at = clock_timestamp()",
                (
                    minion_id,
                    json.dumps(installed),
                    None if candidates is None else json.dumps(candidates),
                ),
            )

    def write_available(self, minion_id: str, available: Mapping[str, Any]) -> bool:
        """Replace the candidates of a minion's stored inventory.

        ``available`` maps every package name that was looked up to its
        candidate versions (``pkg.list_repo_pkgs`` output completed with
        ``[]`` for names the repositories lack); a managed package that was
        not looked up is never reported as a kept orphan. Returns False (and
        stores nothing) when the minion has no inventory yet.
        """
        if not isinstance(minion_id, str) or not minion_id:
            raise PkgStateError("candidates need a minion id")
        candidates = normalize_pkg_versions(available, "available")
        with self._db.tx() as cur:
            cur.execute(
                "UPDATE pkgstate_inventory SET available = %s WHERE minion_id = %s",
                (json.dumps(candidates), minion_id),
            )
            return bool(cur.rowcount)

    def inventory(self, minion_id: str) -> Inventory | None:
        """A minion's stored inventory, or None if none was written."""
        row = self._db.one(
            "SELECT packages, available, refreshed_at FROM pkgstate_inventory"
            " WHERE minion_id = %s",
            (minion_id,),
        )
        return None if row is None else Inventory(minion_id, *row)


__all__ = ["Inventory", "InventoryRecords", "normalize_pkg_versions"]
