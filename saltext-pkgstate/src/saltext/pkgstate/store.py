"""Package states in PostgreSQL (``sql/0002_package_states.sql``).

:class:`PackageStateStore` is the only code that touches the tables. Every
write is one transaction: input is validated before anything is written, and
a failed call leaves the database as it was. Revisions are never edited: a
save, an import and a rollback each add a new revision.

Resolution reads few queries whatever the number of minions (memberships,
assignments, current revisions, and entries of revisions not seen before).
Revisions are immutable, so their parsed entries are cached per store by
revision id; a store that lives in a master process (ext_pillar) only reads
the entries of a revision once.

Bad input raises :class:`~saltext.pkgstate.model.PkgStateError`; database
trouble raises :class:`PkgStateStoreError`.
"""

from __future__ import annotations

import collections
import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import psycopg2
import psycopg2.extensions
import psycopg2.extras

from saltext.pkgstate.model import (
    MINION_STATE_PREFIX,
    Entry,
    GrainMatch,
    Operator,
    PkgStateError,
    Policy,
    Revision,
    check_package_name,
    check_state_name,
    check_version,
    compare_versions,
    compile_grain_match,
    entries_from_mapping,
    minion_state_name,
    validate_revision,
    version_satisfies,
)
from saltext.pkgstate.resolve import (
    Scope,
    Source,
    StateRevision,
    digest_of,
    hold_value,
    resolve,
)

#: How many parsed revisions a store keeps (entries of immutable revisions).
REVISION_CACHE_SIZE: Final = 20000

#: Status values of a managed package on a minion.
CONSISTENT: Final = "consistent"
PENDING: Final = "pending"
INCONSISTENT: Final = "inconsistent"
ORPHAN_KEPT: Final = "orphan-kept"
#: No inventory was ever recorded for the minion.
UNKNOWN: Final = "unknown"


# A revision's entries as one JSON array of [package, policy, op, version]:
# the cheapest form to send and parse (json_build_object per entry cost the
# server more than everything else in resolving 1000 minions).
_REVISION_ROWS_SQL: Final = """
SELECT revision_id, json_agg(json_build_array(package, policy, op, version))::text
FROM pkgstate_entry
WHERE revision_id = ANY(%s)
GROUP BY revision_id
"""


class PkgStateStoreError(RuntimeError):
    """The database could not be reached or refused a statement."""


@dataclass(frozen=True)
class StateInfo:
    """A package state and its current revision number."""

    name: str
    kind: str
    minion_id: str | None
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class Assignment:
    """One assignment of a named state to an org, group, grain match or minion."""

    id: int
    state: str
    scope: Scope
    target: str
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


@dataclass(frozen=True)
class Inventory:
    """A minion's installed packages (and candidates when known)."""

    minion_id: str
    packages: dict[str, list[str]]
    available: dict[str, list[str]] | None
    refreshed_at: datetime


@dataclass(frozen=True)
class Applied:
    """The last recorded application of a minion's package state."""

    minion_id: str
    digest: str
    packages: dict[str, dict[str, Any]] | None
    jid: str | None
    applied_at: datetime


def _versions(value: Any, what: str) -> list[str]:
    """``"1.2"``, ``["1.2", "1.3"]`` or ``"1.2,1.3"`` as a list of strings."""
    if isinstance(value, str):
        return [v for v in (s.strip() for s in value.split(",")) if v]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise PkgStateError(f"{what}: versions must be a string or a list of strings")


def _normalize_pkg_versions(
    packages: Mapping[str, Any], what: str
) -> dict[str, list[str]]:
    if not isinstance(packages, Mapping):
        raise PkgStateError(f"{what} must be a mapping of package name to version(s)")
    out: dict[str, list[str]] = {}
    for name, value in packages.items():
        if not isinstance(name, str) or not name:
            raise PkgStateError(f"{what}: bad package name {name!r}")
        out[name] = _versions(value, f"{what} {name}")
    return out


class PackageStateStore:
    """Package states, assignments, inventory and applied records in PostgreSQL.

    ``dsn`` is a libpq connection string. The store holds one connection,
    reopened when it was closed; it is not safe to share between threads.
    """

    def __init__(self, dsn: str, *, author: str | None = None) -> None:
        self._dsn = dsn
        self._author = author
        self._conn: psycopg2.extensions.connection | None = None
        self._revisions: collections.OrderedDict[int, StateRevision] = (
            collections.OrderedDict()
        )
        self._grain_matches: dict[str, GrainMatch] = {}

    # --- connection ----------------------------------------------------------

    def __enter__(self) -> PackageStateStore:
        """The store itself; the connection closes on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def _connection(self) -> psycopg2.extensions.connection:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg2.connect(self._dsn, connect_timeout=10)
            except psycopg2.Error as exc:
                raise PkgStateStoreError(
                    f"cannot connect to the package state database: {str(exc).strip()}"
                ) from None
        return self._conn

    @contextmanager
    def _tx(self) -> Iterator[psycopg2.extensions.cursor]:
        """One transaction: committed on success, rolled back on any error."""
        conn = self._connection()
        try:
            with conn, conn.cursor() as cur:
                yield cur
        except psycopg2.OperationalError as exc:
            self.close()
            raise PkgStateStoreError(
                f"package state database error: {str(exc).strip()}"
            ) from None
        except psycopg2.Error as exc:
            raise PkgStateStoreError(
                f"package state database refused the change: {str(exc).strip()}"
            ) from None

    # --- states and revisions ------------------------------------------------

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
            # a concurrent first save waits here for the other's commit
            cur.execute(
                "INSERT INTO pkgstate (name, kind, minion_id) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO NOTHING",
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
        with self._tx() as cur:
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
        with self._tx() as cur:
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
        with self._tx() as cur:
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
        with self._tx() as cur:
            return self._read_revision(cur, name, revision)

    def history(self, name: str) -> list[Revision]:
        """Every revision of a state, oldest first, with their entries."""
        check_state_name(name)
        with self._tx() as cur:
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
        with self._tx() as cur:
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
        with self._tx() as cur:
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
        with self._tx() as cur:
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
        installed = _normalize_pkg_versions(list_pkgs, "list_pkgs")
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
        with self._tx() as cur:
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

    # --- assignments ---------------------------------------------------------

    def _org_id(
        self, cur: psycopg2.extensions.cursor, org: int | str
    ) -> tuple[int, str]:
        if isinstance(org, bool) or not isinstance(org, (int, str)) or org == "":
            raise PkgStateError(f"organization {org!r}: give its name or id")
        if isinstance(org, int):
            cur.execute("SELECT id, name FROM organization WHERE id = %s", (org,))
        else:
            cur.execute("SELECT id, name FROM organization WHERE name = %s", (org,))
        row = cur.fetchone()
        if row is None:
            raise PkgStateError(f"no organization {org!r}")
        return int(row[0]), str(row[1])

    def _group_id(
        self, cur: psycopg2.extensions.cursor, group: int | str
    ) -> tuple[int, str]:
        """A group by id, ``org/name``, or a name unique across organizations."""
        if isinstance(group, bool) or not isinstance(group, (int, str)) or group == "":
            raise PkgStateError(f"group {group!r}: give its id, org/name or name")
        base = (
            "SELECT g.id, o.name || '/' || g.name FROM server_group g"
            " JOIN organization o ON o.id = g.org_id"
        )
        if isinstance(group, int):
            cur.execute(base + " WHERE g.id = %s", (group,))
        elif "/" in group:
            org, _, gname = group.partition("/")
            cur.execute(base + " WHERE o.name = %s AND g.name = %s", (org, gname))
        else:
            cur.execute(base + " WHERE g.name = %s ORDER BY g.id", (group,))
        rows = cur.fetchall()
        if len(rows) > 1:
            names = ", ".join(r[1] for r in rows)
            raise PkgStateError(
                f"group name {group!r} is ambiguous ({names}): give org/name or the id"
            )
        if not rows:
            if isinstance(group, str) and group.isdigit():
                return self._group_id(cur, int(group))
            raise PkgStateError(f"no group {group!r}")
        return int(rows[0][0]), str(rows[0][1])

    def _targets(
        self,
        cur: psycopg2.extensions.cursor,
        org: int | str | None,
        group: int | str | None,
        grain: str | None,
        minions: Iterable[str] | str | None,
    ) -> list[tuple[Scope, str, str, Any]]:
        """(scope, column, display target, value) of every target given."""
        targets: list[tuple[Scope, str, str, Any]] = []
        if org is not None:
            oid, oname = self._org_id(cur, org)
            targets.append((Scope.ORG, "org_id", oname, oid))
        if group is not None:
            gid, gname = self._group_id(cur, group)
            targets.append((Scope.GROUP, "group_id", gname, gid))
        if grain is not None:
            match = compile_grain_match(grain)
            targets.append(
                (Scope.GRAIN, "grain_match", match.expression, match.expression)
            )
        if minions is not None:
            ids = [minions] if isinstance(minions, str) else list(minions)
            if not ids or not all(isinstance(m, str) and m.strip() for m in ids):
                raise PkgStateError("minions: give a non-empty list of minion ids")
            targets.extend(
                (Scope.MINION, "minion_id", m, m) for m in dict.fromkeys(ids)
            )
        if not targets:
            raise PkgStateError("give a target: org, group, grain or minions")
        return targets

    def _named_state_id(self, cur: psycopg2.extensions.cursor, name: str) -> int:
        check_state_name(name)
        if name.startswith(MINION_STATE_PREFIX):
            raise PkgStateError(
                f"{name!r} is a minion's own state: it applies to that minion only"
            )
        cur.execute("SELECT id FROM pkgstate WHERE name = %s", (name,))
        row = cur.fetchone()
        if row is None:
            raise PkgStateError(f"no package state {name!r}")
        return int(row[0])

    def assign(
        self,
        name: str,
        *,
        org: int | str | None = None,
        group: int | str | None = None,
        grain: str | None = None,
        minions: Iterable[str] | str | None = None,
        author: str | None = None,
    ) -> list[Assignment]:
        """Assign a named state; returns the new assignments.

        Several targets may be given at once; all are checked before any is
        stored. Assigning to a target it already has is a no-op.
        """
        with self._tx() as cur:
            state_id = self._named_state_id(cur, name)
            targets = self._targets(cur, org, group, grain, minions)
            made: list[Assignment] = []
            for scope, column, display, value in targets:
                cur.execute(
                    f"INSERT INTO pkgstate_assignment (state_id, {column})"
                    " VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING id, created_at",
                    (state_id, value),
                )
                row = cur.fetchone()
                if row is None:
                    continue
                made.append(Assignment(row[0], name, scope, display, row[1]))
                self._log(cur, "assign", name, scope, display, author)
            return made

    def unassign(
        self,
        name: str,
        *,
        org: int | str | None = None,
        group: int | str | None = None,
        grain: str | None = None,
        minions: Iterable[str] | str | None = None,
        author: str | None = None,
    ) -> int:
        """Remove assignments of a named state; every one given must exist."""
        with self._tx() as cur:
            state_id = self._named_state_id(cur, name)
            targets = self._targets(cur, org, group, grain, minions)
            for scope, column, display, value in targets:
                cur.execute(
                    f"DELETE FROM pkgstate_assignment WHERE state_id = %s AND {column} = %s",
                    (state_id, value),
                )
                if cur.rowcount == 0:
                    raise PkgStateError(
                        f"state {name!r} is not assigned to {scope.value} {display!r}"
                    )
                self._log(cur, "unassign", name, scope, display, author)
            return len(targets)

    def _log(
        self,
        cur: psycopg2.extensions.cursor,
        action: str,
        name: str,
        scope: Scope,
        target: str,
        author: str | None,
    ) -> None:
        cur.execute(
            "INSERT INTO pkgstate_assignment_log (action, state_name, scope, target,"
            " author) VALUES (%s, %s, %s, %s, %s)",
            (action, name, scope.value, target, author or self._author),
        )

    _ASSIGNMENTS_SQL: Final = (
        "SELECT a.id, p.name, a.org_id, o.name, a.group_id, go.name || '/' || g.name,"
        " a.grain_match, a.minion_id, a.created_at, a.state_id"
        " FROM pkgstate_assignment a JOIN pkgstate p ON p.id = a.state_id"
        " LEFT JOIN organization o ON o.id = a.org_id"
        " LEFT JOIN server_group g ON g.id = a.group_id"
        " LEFT JOIN organization go ON go.id = g.org_id"
    )

    def assignments(self, name: str | None = None) -> list[Assignment]:
        """Current assignments (of one state, or all), by id."""
        with self._tx() as cur:
            if name is None:
                cur.execute(self._ASSIGNMENTS_SQL + " ORDER BY a.id")
            else:
                self._named_state_id(cur, name)
                cur.execute(
                    self._ASSIGNMENTS_SQL + " WHERE p.name = %s ORDER BY a.id", (name,)
                )
            return [_assignment_from_row(r) for r in cur.fetchall()]

    # --- resolution ----------------------------------------------------------

    def _grain_match(self, expression: str) -> GrainMatch:
        match = self._grain_matches.get(expression)
        if match is None:
            match = self._grain_matches[expression] = compile_grain_match(expression)
        return match

    def _state_revisions(
        self, cur: psycopg2.extensions.cursor, state_ids: Sequence[int]
    ) -> dict[int, StateRevision]:
        """The current revision of each state (cached by revision id)."""
        cur.execute(
            "SELECT p.id, p.name, c.revision_id, c.revision FROM pkgstate p"
            " JOIN pkgstate_current c ON c.state_id = p.id WHERE p.id = ANY(%s)",
            (list(state_ids),),
        )
        rows = cur.fetchall()
        missing = [r[2] for r in rows if r[2] not in self._revisions]
        loaded: dict[int, list[list[str | None]]] = {}
        if missing:
            cur.execute(_REVISION_ROWS_SQL, (missing,))
            loaded = {rid: json.loads(text) for rid, text in cur.fetchall()}
        out: dict[int, StateRevision] = {}
        for state_id, name, revision_id, number in rows:
            cached = self._revisions.get(revision_id)
            if cached is None:
                cached = StateRevision(name, number, rows=loaded.get(revision_id, ()))
                self._revisions[revision_id] = cached
                if len(self._revisions) > REVISION_CACHE_SIZE:
                    self._revisions.popitem(last=False)
            else:
                self._revisions.move_to_end(revision_id)
            out[state_id] = cached
        return out

    def resolve_all(
        self, grains_by_minion: Mapping[str, Mapping[str, Any] | None]
    ) -> dict[str, dict[str, Any]]:
        """The resolved result (pillar ``pkgstate``) of every minion given.

        ``grains_by_minion`` maps minion id to its grains (``None`` when
        unknown: no grain match applies, holds are reported unsupported).
        Minions unknown to the ``server`` table get grain-match, minion-list
        and their own states only.
        """
        minion_ids = list(grains_by_minion)
        with self._tx() as cur:
            cur.execute(
                "SELECT s.minion_id, s.org_id, o.name,"
                " array_remove(array_agg(m.group_id ORDER BY m.group_id), NULL)"
                " FROM server s JOIN organization o ON o.id = s.org_id"
                " LEFT JOIN server_group_member m ON m.server_id = s.id"
                " WHERE s.minion_id = ANY(%s) GROUP BY s.minion_id, s.org_id, o.name",
                (minion_ids,),
            )
            membership = {r[0]: (r[1], r[2], r[3]) for r in cur.fetchall()}
            orgs = {m[0] for m in membership.values()}
            groups = {g for m in membership.values() for g in m[2]}
            cur.execute(
                self._ASSIGNMENTS_SQL
                + " WHERE a.org_id = ANY(%s) OR a.group_id = ANY(%s)"
                " OR a.grain_match IS NOT NULL OR a.minion_id = ANY(%s)",
                (list(orgs), list(groups), minion_ids),
            )
            assignments = cur.fetchall()
            cur.execute(
                "SELECT id, minion_id FROM pkgstate WHERE minion_id = ANY(%s)",
                (minion_ids,),
            )
            own = {r[1]: r[0] for r in cur.fetchall()}
            revisions = self._state_revisions(
                cur, list({a[9] for a in assignments} | set(own.values()))
            )
        by_org: dict[int, list[Source]] = collections.defaultdict(list)
        by_group: dict[int, list[Source]] = collections.defaultdict(list)
        by_minion: dict[str, list[Source]] = collections.defaultdict(list)
        by_grain: list[tuple[GrainMatch, Source]] = []
        for row in assignments:
            revision = revisions.get(row[9])
            if revision is None:
                continue
            assignment = _assignment_from_row(row)
            aid = assignment.id
            if row[2] is not None:
                by_org[row[2]].append(
                    Source(Scope.ORG, assignment.target, (aid,), revision)
                )
            elif row[4] is not None:
                by_group[row[4]].append(
                    Source(Scope.GROUP, assignment.target, (row[4], aid), revision)
                )
            elif row[6] is not None:
                by_grain.append(
                    (
                        self._grain_match(row[6]),
                        Source(Scope.GRAIN, row[6], (aid,), revision),
                    )
                )
            else:
                by_minion[row[7]].append(Source(Scope.MINION, row[7], (aid,), revision))
        results: dict[str, dict[str, Any]] = {}
        for minion_id, grains in grains_by_minion.items():
            sources: list[Source] = []
            member = membership.get(minion_id)
            if member is not None:
                sources.extend(by_org.get(member[0], ()))
                for gid in member[2]:
                    sources.extend(by_group.get(gid, ()))
            if grains is not None:
                sources.extend(s for m, s in by_grain if m.matches(grains))
            sources.extend(by_minion.get(minion_id, ()))
            own_id = own.get(minion_id)
            if own_id is not None and own_id in revisions:
                sources.append(Source(Scope.OWN, minion_id, (0,), revisions[own_id]))
            results[minion_id] = resolve(sources, hold=hold_value(grains))
        return results

    def resolve_for_minion(
        self, minion_id: str, grains: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The resolved result of one minion (what ext_pillar serves)."""
        return self.resolve_all({minion_id: grains})[minion_id]

    # --- inventory, applied, status ------------------------------------------

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
        installed = _normalize_pkg_versions(packages, "inventory")
        candidates = (
            None
            if available is None
            else _normalize_pkg_versions(available, "available")
        )
        with self._tx() as cur:
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
        candidates = _normalize_pkg_versions(available, "available")
        with self._tx() as cur:
            cur.execute(
                "UPDATE pkgstate_inventory SET available = %s WHERE minion_id = %s",
                (json.dumps(candidates), minion_id),
            )
            return bool(cur.rowcount)

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The first row of one query in its own transaction, or None."""
        with self._tx() as cur:
            cur.execute(sql, params)
            row: tuple[Any, ...] | None = cur.fetchone()
        return row

    def inventory(self, minion_id: str) -> Inventory | None:
        """A minion's stored inventory, or None if none was written."""
        row = self._one(
            "SELECT packages, available, refreshed_at FROM pkgstate_inventory"
            " WHERE minion_id = %s",
            (minion_id,),
        )
        if row is None:
            return None
        return Inventory(minion_id, row[0], row[1], row[2])

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
        if not isinstance(digest, str) or not digest:
            raise PkgStateError("record_applied needs the applied digest")
        resolved = self.resolve_for_minion(minion_id, grains)
        current = bool(resolved["digest"] == digest)
        packages = (
            {n: _applied_entry(spec) for n, spec in resolved["packages"].items()}
            if current
            else None
        )
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO pkgstate_applied (minion_id, digest, packages, jid)"
                " VALUES (%s, %s, %s, %s)",
                (
                    minion_id,
                    digest,
                    None if packages is None else json.dumps(packages),
                    jid,
                ),
            )
        return current

    def last_applied(self, minion_id: str) -> Applied | None:
        """The last applied record of a minion, or None."""
        row = self._one(
            "SELECT digest, packages, jid, applied_at FROM pkgstate_applied"
            " WHERE minion_id = %s ORDER BY id DESC LIMIT 1",
            (minion_id,),
        )
        if row is None:
            return None
        return Applied(minion_id, row[0], row[1], row[2], row[3])

    def status(
        self, minion_id: str, grains: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Status of every managed package of one minion.

        Returns ``{"minion", "digest", "applied_digest", "applied_at",
        "inventory_at", "packages": {name: {"status", "policy", "op",
        "version", "decided_by", "installed"}}, "counts": {status: n}}``.
        """
        resolved = self.resolve_for_minion(minion_id, grains)
        inventory = self.inventory(minion_id)
        applied = self.last_applied(minion_id)
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


def _applied_entry(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in ("policy", "op", "version") if k in spec}


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
        applied.packages is None or applied.packages.get(name) != _applied_entry(spec)
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


def _entry_from_row(row: Sequence[Any]) -> Entry:
    package, policy, op, version = row
    return Entry(package, Policy(policy), Operator(op) if op else None, version)


def _assignment_from_row(row: Sequence[Any]) -> Assignment:
    aid, name, org_id, org_name, group_id, group_name, grain, minion, created = row[:9]
    if org_id is not None:
        return Assignment(aid, name, Scope.ORG, org_name, created)
    if group_id is not None:
        return Assignment(aid, name, Scope.GROUP, group_name, created)
    if grain is not None:
        return Assignment(aid, name, Scope.GRAIN, grain, created)
    return Assignment(aid, name, Scope.MINION, minion, created)


__all__ = [
    "CONSISTENT",
    "INCONSISTENT",
    "ORPHAN_KEPT",
    "PENDING",
    "UNKNOWN",
    "Applied",
    "Assignment",
    "Inventory",
    "PackageStateStore",
    "PkgStateStoreError",
    "RevisionDiff",
    "StateInfo",
    "digest_of",
    "minion_state_name",
    "package_status",
]
