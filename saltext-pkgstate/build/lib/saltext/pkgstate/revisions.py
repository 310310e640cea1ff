"""Package states and their revisions in PostgreSQL.

A save, an import and a rollback each add a new revision; revisions are never
edited (the schema's triggers refuse it). Every call is one transaction and
validates its input before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg2.extensions
import psycopg2.extras

from saltext.pkgstate.db import StorePart
from saltext.pkgstate.inventory import normalize_pkg_versions
from saltext.pkgstate.model import (
    MINION_STATE_PREFIX,
    Entry,
    Operator,
    PkgStateError,
    Policy,
    Revision,
    check_package_name,
    check_state_name,
    check_version,
    entries_from_mapping,
    validate_revision,
)


@dataclass(frozen=True)
class StateInfo:
    """A package state and its current revision number."""

    name: str
    kind: str
    minion_id: str | None
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class RevisionDiff:
    """What changed from revision ``a`` to revision ``b`` of a state."""

    state: str
    a: int
    b: int
    added: dict[str, str]
    removed: dict[str, str]
    changed: dict[str, tuple[str, str]]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the runner's output."""
        return {
            "state": self.state,
            "from": self.a,
            "to": self.b,
            "added": dict(self.added),
            "removed": dict(self.removed),
            "changed": {k: {"from": a, "to": b} for k, (a, b) in self.changed.items()},
        }


class Revisions(StorePart):
    """Create, save, read, compare and roll back package states."""

    def _state_for_update(
        self,
        cur: psycopg2.extensions.cursor,
        name: str,
        *,
        create: bool,
        create_missing: bool = False,
    ) -> tuple[int, int]:
        """(state id, current revision) of a locked state; minion states on
        demand; ``create`` makes a new named state (it must not exist),
        ``create_missing`` one that may exist already."""
        check_state_name(name)
        if name.startswith(MINION_STATE_PREFIX) or create_missing:
            kind, minion = (
                ("minion", name[len(MINION_STATE_PREFIX) :])
                if name.startswith(MINION_STATE_PREFIX)
                else ("named", None)
            )
            # a concurrent first save waits here for the other's commit. No
            # conflict target: a minion state is unique by name and by
            # minion_id, and a racing insert may meet either index first
            cur.execute(
                "INSERT INTO pkgstate (name, kind, minion_id) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (name, kind, minion),
            )
        elif create:
            cur.execute(
                "INSERT INTO pkgstate (name, kind) VALUES (%s, 'named')"
                " ON CONFLICT (name) DO NOTHING RETURNING id",
                (name,),
            )
            if cur.fetchone() is None:
                raise PkgStateError(f"package state {name!r} already exists")
        cur.execute(
            "SELECT p.id, coalesce(max(r.revision), 0) FROM pkgstate p"
            " LEFT JOIN pkgstate_revision r ON r.state_id = p.id"
            " WHERE p.name = %s GROUP BY p.id",
            (name,),
        )
        row = cur.fetchone()
        if row is None:
            raise PkgStateError(
                f"no package state {name!r}; create it first (pkgstate.create)"
            )
        cur.execute("SELECT 1 FROM pkgstate WHERE id = %s FOR UPDATE", (row[0],))
        # re-read under the lock: a concurrent save may have added one
        cur.execute(
            "SELECT coalesce(max(revision), 0) FROM pkgstate_revision WHERE state_id = %s",
            (row[0],),
        )
        return int(row[0]), int(cur.fetchone()[0])

    def _insert_revision(
        self,
        cur: psycopg2.extensions.cursor,
        state_id: int,
        number: int,
        name: str,
        entries: Sequence[Entry],
        author: str | None,
        comment: str | None,
    ) -> Revision:
        cur.execute(
            "INSERT INTO pkgstate_revision (state_id, revision, author, comment)"
            " VALUES (%s, %s, %s, %s) RETURNING id, created_at",
            (state_id, number, author or self._author, comment),
        )
        revision_id, created_at = cur.fetchone()
        psycopg2.extras.execute_values(
            cur,
            "INSERT INTO pkgstate_entry (revision_id, package, policy, op, version)"
            " VALUES %s",
            [
                (
                    revision_id,
                    e.name,
                    e.policy.value,
                    e.op.value if e.op else None,
                    e.version,
                )
                for e in entries
            ],
            page_size=1000,
        )
        return Revision(
            name, number, tuple(entries), created_at, author or self._author, comment
        )

    def create_state(
        self,
        name: str,
        entries: Iterable[Entry | str] = (),
        *,
        author: str | None = None,
        comment: str | None = None,
    ) -> Revision:
        """Create a named state; its revision 1 holds ``entries`` (empty by default).

        CLI Example (runner):

        .. code-block:: bash

            salt-run pkgstate.create web nginx>=1.20 curl@latest
        """
        checked = validate_revision(entries)
        check_state_name(name)
        if name.startswith(MINION_STATE_PREFIX):
            raise PkgStateError(
                f"{name!r} is a minion's own state: it is created on first save"
            )
        with self._db.tx() as cur:
            state_id, current = self._state_for_update(cur, name, create=True)
            return self._insert_revision(
                cur, state_id, current + 1, name, checked, author, comment
            )

    def save_revision(
        self,
        name: str,
        entries: Iterable[Entry | str],
        *,
        author: str | None = None,
        comment: str | None = None,
        create: bool = False,
    ) -> Revision:
        """Save ``entries`` as the state's new current revision.

        The entries replace the whole revision (a package left out becomes
        unmanaged). A minion's own state ``minion:<id>`` is created on first
        save; a named state must exist, or with ``create`` is created if it
        does not. Concurrent saves of one state are serialised by a row lock
        and become consecutive revisions.
        """
        checked = validate_revision(entries)
        with self._db.tx() as cur:
            state_id, current = self._state_for_update(
                cur, name, create=False, create_missing=create
            )
            return self._insert_revision(
                cur, state_id, current + 1, name, checked, author, comment
            )

    def save_mapping(
        self,
        name: str,
        packages: Mapping[str, Any],
        *,
        author: str | None = None,
        comment: str | None = None,
    ) -> Revision:
        """:meth:`save_revision` from a ``{name: spec}`` mapping (YAML/JSON input)."""
        return self.save_revision(
            name, entries_from_mapping(packages), author=author, comment=comment
        )

    def update_packages(
        self,
        name: str,
        changes: Iterable[Entry | str] = (),
        *,
        unmanage: Iterable[str] = (),
        author: str | None = None,
        comment: str | None = None,
    ) -> Revision:
        """A new revision: the current one with ``changes`` set and ``unmanage`` dropped.

        ``changes`` may not name a package twice; a package both changed and
        unmanaged is an error; unmanaging a package the state does not manage
        is an error.
        """
        checked = validate_revision(changes)
        dropped = [check_package_name(p) for p in unmanage]
        both = sorted({e.name for e in checked} & set(dropped))
        if both:
            raise PkgStateError(
                f"packages both set and unmanaged in one change: {', '.join(both)}"
            )
        with self._db.tx() as cur:
            state_id, current = self._state_for_update(cur, name, create=False)
            packages = (
                self._read_revision(cur, name, current).packages if current else {}
            )
            missing = sorted(p for p in dropped if p not in packages)
            if missing:
                raise PkgStateError(
                    f"state {name!r} does not manage {', '.join(missing)}: "
                    "nothing to unmanage"
                )
            for package in dropped:
                del packages[package]
            packages.update((e.name, e) for e in checked)
            entries = [packages[p] for p in sorted(packages)]
            return self._insert_revision(
                cur, state_id, current + 1, name, entries, author, comment
            )

    def _read_revision(
        self, cur: psycopg2.extensions.cursor, name: str, revision: int | None
    ) -> Revision:
        if revision is not None and (
            not isinstance(revision, int) or isinstance(revision, bool)
        ):
            raise PkgStateError(f"revision {revision!r} is not a number")
        cur.execute(
            "SELECT r.id, r.revision, r.created_at, r.author, r.comment"
            " FROM pkgstate p JOIN pkgstate_revision r ON r.state_id = p.id"
            " WHERE p.name = %s AND (%s::integer IS NULL OR r.revision = %s)"
            " ORDER BY r.revision DESC LIMIT 1",
            (name, revision, revision),
        )
        row = cur.fetchone()
        if row is None:
            cur.execute("SELECT 1 FROM pkgstate WHERE name = %s", (name,))
            if cur.fetchone() is None:
                raise PkgStateError(f"no package state {name!r}")
            raise PkgStateError(f"package state {name!r} has no revision {revision}")
        revision_id, number, created_at, author, comment = row
        cur.execute(
            "SELECT package, policy, op, version FROM pkgstate_entry"
            " WHERE revision_id = %s ORDER BY package",
            (revision_id,),
        )
        entries = tuple(_entry_from_row(r) for r in cur.fetchall())
        return Revision(name, number, entries, created_at, author, comment)

    def show(self, name: str, revision: int | None = None) -> Revision:
        """The current revision of a state, or revision ``revision``."""
        check_state_name(name)
        with self._db.tx() as cur:
            return self._read_revision(cur, name, revision)

    def history(self, name: str) -> list[Revision]:
        """Every revision of a state, oldest first, with their entries."""
        check_state_name(name)
        with self._db.tx() as cur:
            cur.execute(
                "SELECT r.id, r.revision, r.created_at, r.author, r.comment"
                " FROM pkgstate p JOIN pkgstate_revision r ON r.state_id = p.id"
                " WHERE p.name = %s ORDER BY r.revision",
                (name,),
            )
            rows = cur.fetchall()
            if not rows:
                raise PkgStateError(f"no package state {name!r}")
            cur.execute(
                "SELECT revision_id, package, policy, op, version FROM pkgstate_entry"
                " WHERE revision_id = ANY(%s) ORDER BY revision_id, package",
                ([r[0] for r in rows],),
            )
            by_revision: dict[int, list[Entry]] = {r[0]: [] for r in rows}
            for row in cur.fetchall():
                by_revision[row[0]].append(_entry_from_row(row[1:]))
        return [
            Revision(name, number, tuple(by_revision[rid]), created_at, author, comment)
            for rid, number, created_at, author, comment in rows
        ]

    def list_states(self) -> list[StateInfo]:
        """Every state with its current revision number, by name."""
        with self._db.tx() as cur:
            cur.execute(
                "SELECT p.name, p.kind, p.minion_id, coalesce(c.revision, 0),"
                " p.created_at FROM pkgstate p"
                " LEFT JOIN pkgstate_current c ON c.state_id = p.id ORDER BY p.name"
            )
            return [StateInfo(*row) for row in cur.fetchall()]

    def diff(self, name: str, a: int, b: int | None = None) -> RevisionDiff:
        """Packages added, removed and changed from revision ``a`` to ``b``.

        ``b`` defaults to the current revision.
        """
        check_state_name(name)
        with self._db.tx() as cur:
            old = self._read_revision(cur, name, a)
            new = self._read_revision(cur, name, b)
        before, after = old.packages, new.packages
        return RevisionDiff(
            state=name,
            a=old.revision,
            b=new.revision,
            added={p: str(after[p]) for p in sorted(after.keys() - before.keys())},
            removed={p: str(before[p]) for p in sorted(before.keys() - after.keys())},
            changed={
                p: (str(before[p]), str(after[p]))
                for p in sorted(before.keys() & after.keys())
                if before[p] != after[p]
            },
        )

    def rollback(
        self,
        name: str,
        to_revision: int,
        *,
        author: str | None = None,
        comment: str | None = None,
    ) -> Revision:
        """A new revision equal to revision ``to_revision`` (history is kept)."""
        check_state_name(name)
        with self._db.tx() as cur:
            old = self._read_revision(cur, name, to_revision)
            state_id, current = self._state_for_update(cur, name, create=False)
            return self._insert_revision(
                cur,
                state_id,
                current + 1,
                name,
                old.entries,
                author,
                comment or f"rollback to revision {old.revision}",
            )

    def import_packages(
        self,
        name: str,
        list_pkgs: Mapping[str, Any],
        *,
        exact: bool = False,
        author: str | None = None,
        comment: str | None = None,
    ) -> Revision:
        """A revision from a minion's ``pkg.list_pkgs``: every package installed.

        With ``exact`` a package with a single installed version is pinned to
        it (``=VERSION``); packages with several versions (kernels) stay
        installed-any. A named state that does not exist yet is created, so
        the import is its first revision.
        """
        installed = normalize_pkg_versions(list_pkgs, "list_pkgs")
        entries = [
            Entry(p, Policy.INSTALLED, Operator.EQ, v[0])
            if exact and len(v) == 1
            else Entry(p, Policy.INSTALLED)
            for p, v in installed.items()
        ]
        problems = []
        for entry in entries:
            try:
                check_package_name(entry.name)
                if entry.version is not None:
                    check_version(entry.version)
            except PkgStateError as exc:
                problems.append(str(exc))
        if problems:
            raise PkgStateError("cannot import: " + "; ".join(problems))
        checked = validate_revision(entries)
        check_state_name(name)
        with self._db.tx() as cur:
            cur.execute("SELECT 1 FROM pkgstate WHERE name = %s", (name,))
            exists = cur.fetchone() is not None
            state_id, current = self._state_for_update(
                cur,
                name,
                create=not exists and not name.startswith(MINION_STATE_PREFIX),
            )
            return self._insert_revision(
                cur,
                state_id,
                current + 1,
                name,
                checked,
                author,
                comment or "imported from pkg.list_pkgs",
            )


def _entry_from_row(row: Sequence[Any]) -> Entry:
    package, policy, op, version = row
    return Entry(package, Policy(policy), Operator(op) if op else None, version)


__all__ = ["RevisionDiff", "Revisions", "StateInfo"]
