"""Package states in PostgreSQL: the one object the extension's modules use.

:class:`PackageStateStore` is one connection
(:class:`~saltext.pkgstate.db.Database`) and the parts that work through it,
one concern each:

- :class:`~saltext.pkgstate.revisions.Revisions`: states and their revisions
- :class:`~saltext.pkgstate.assignments.Assignments`: where named states apply
- :class:`~saltext.pkgstate.resolution.Resolver`: what reaches each minion
  (the precedence itself is the pure :mod:`saltext.pkgstate.resolve`)
- :class:`~saltext.pkgstate.inventory.InventoryRecords`: installed packages
- :class:`~saltext.pkgstate.applied.AppliedRecords`: applied digests
- :func:`~saltext.pkgstate.status.status_report`: status, without the database

Every write is one transaction: input is validated before anything is
written, and a failed call leaves the database as it was. Revisions are
never edited: a save, an import and a rollback each add a new revision.

Bad input raises :class:`~saltext.pkgstate.model.PkgStateError`; database
trouble raises :class:`PkgStateStoreError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from saltext.pkgstate.applied import AppliedRecords, check_digest
from saltext.pkgstate.assignments import Assignments
from saltext.pkgstate.db import Database, PkgStateStoreError
from saltext.pkgstate.inventory import InventoryRecords
from saltext.pkgstate.resolution import Resolver
from saltext.pkgstate.revisions import Revisions
from saltext.pkgstate.status import status_report


class PackageStateStore(
    Revisions, Assignments, Resolver, InventoryRecords, AppliedRecords
):
    """Package states, assignments, inventory and applied records in PostgreSQL.

    ``dsn`` is a libpq connection string; ``author`` is recorded with the
    changes that name none. The store holds one connection, reopened when it
    was closed; it is not safe to share between threads.
    """

    def __init__(self, dsn: str, *, author: str | None = None) -> None:
        super().__init__(Database(dsn), author=author)

    def __enter__(self) -> PackageStateStore:
        """The store itself; the connection closes on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        self._db.close()

    def record_applied(
        self,
        minion_id: str,
        digest: str,
        *,
        jid: str | None = None,
        grains: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record that ``minion_id`` applied its package state with ``digest``.

        When ``digest`` is the minion's current one, the resolved packages
        are stored with it (status then knows exactly which packages are
        pending after a later save). Returns whether the digest was current.
        """
        check_digest(digest)
        resolved = self.resolve_for_minion(minion_id, grains)
        current = bool(resolved["digest"] == digest)
        self.insert_applied(
            minion_id, digest, resolved["packages"] if current else None, jid
        )
        return current

    def status(
        self, minion_id: str, grains: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Status of every managed package of one minion (see
        :func:`~saltext.pkgstate.status.status_report`)."""
        resolved = self.resolve_for_minion(minion_id, grains)
        inventory = self.inventory(minion_id)
        applied = self.last_applied(minion_id)
        return status_report(minion_id, resolved, inventory, applied)


__all__ = ["PackageStateStore", "PkgStateStoreError"]
