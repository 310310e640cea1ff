"""Where named states apply: assignments to organizations, groups, grain
matches and minion lists, and the log of every assign and unassign."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypedDict, Unpack

import psycopg2.extensions

from saltext.pkgstate.db import StorePart
from saltext.pkgstate.model import (
    MINION_STATE_PREFIX,
    PkgStateError,
    check_state_name,
    compile_grain_match,
)
from saltext.pkgstate.resolve import Scope

#: The assignments with their targets' names; ``state_id`` last.
ASSIGNMENTS_SQL: Final = (
    "SELECT a.id, p.name, a.org_id, o.name, a.group_id, go.name || '/' || g.name,"
    " a.grain_match, a.minion_id, a.created_at, a.state_id"
    " FROM pkgstate_assignment a JOIN pkgstate p ON p.id = a.state_id"
    " LEFT JOIN organization o ON o.id = a.org_id"
    " LEFT JOIN server_group g ON g.id = a.group_id"
    " LEFT JOIN organization go ON go.id = g.org_id"
)


@dataclass(frozen=True)
class Assignment:
    """One assignment of a named state to an org, group, grain match or minion."""

    id: int
    state: str
    scope: Scope
    target: str
    created_at: datetime


class Targets(TypedDict, total=False):
    """The targets of :meth:`Assignments.assign` and :meth:`Assignments.unassign`."""

    org: int | str | None
    group: int | str | None
    grain: str | None
    minions: Iterable[str] | str | None


class Assignments(StorePart):
    """Assign named states to targets, remove and list assignments."""

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
        self, cur: psycopg2.extensions.cursor, given: Targets
    ) -> list[tuple[Scope, str, str, Any]]:
        """(scope, column, display target, value) of every target given."""
        unknown = sorted(set(given) - set(Targets.__annotations__))
        if unknown:
            # what Python says of an unexpected keyword, as before Targets
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        org, group = given.get("org"), given.get("group")
        grain, minions = given.get("grain"), given.get("minions")
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
        author: str | None = None,
        **given: Unpack[Targets],
    ) -> list[Assignment]:
        """Assign a named state; returns the new assignments.

        Several targets may be given at once; all are checked before any is
        stored. Assigning to a target it already has is a no-op.
        """
        with self._db.tx() as cur:
            state_id = self._named_state_id(cur, name)
            targets = self._targets(cur, given)
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
        author: str | None = None,
        **given: Unpack[Targets],
    ) -> int:
        """Remove assignments of a named state; every one given must exist."""
        with self._db.tx() as cur:
            state_id = self._named_state_id(cur, name)
            targets = self._targets(cur, given)
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

    def assignments(self, name: str | None = None) -> list[Assignment]:
        """Current assignments (of one state, or all), by id."""
        with self._db.tx() as cur:
            if name is None:
                cur.execute(ASSIGNMENTS_SQL + " ORDER BY a.id")
            else:
                self._named_state_id(cur, name)
                cur.execute(
                    ASSIGNMENTS_SQL + " WHERE p.name = %s ORDER BY a.id", (name,)
                )
            return [assignment_from_row(r) for r in cur.fetchall()]


def assignment_from_row(row: Sequence[Any]) -> Assignment:
    """An :class:`Assignment` from a row of :data:`ASSIGNMENTS_SQL`."""
    aid, name, org_id, org_name, group_id, group_name, grain, minion, created = row[:9]
    if org_id is not None:
        return Assignment(aid, name, Scope.ORG, org_name, created)
    if group_id is not None:
        return Assignment(aid, name, Scope.GROUP, group_name, created)
    if grain is not None:
        return Assignment(aid, name, Scope.GRAIN, grain, created)
    return Assignment(aid, name, Scope.MINION, minion, created)


__all__ = ["ASSIGNMENTS_SQL", "Assignment", "Assignments", "assignment_from_row"]
