"""Resolution's reads: which states reach the given minions, from PostgreSQL.

A few queries whatever the number of minions (memberships, assignments,
current revisions, and the entries of revisions not seen before); the
precedence itself is :mod:`saltext.pkgstate.resolve`, without the database.
Revisions are immutable, so their parsed entries are cached by revision id;
a resolver that lives in a master process (ext_pillar) reads the entries of
a revision once.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import psycopg2.extensions

from saltext.pkgstate.assignments import ASSIGNMENTS_SQL, assignment_from_row
from saltext.pkgstate.db import Database, StorePart
from saltext.pkgstate.model import GrainMatch, compile_grain_match
from saltext.pkgstate.resolve import Reach, StateRevision, hold_value, resolve

#: How many parsed revisions a store keeps (entries of immutable revisions).
REVISION_CACHE_SIZE: Final = 20000

# A revision's entries as one JSON array of [package, policy, op, version]:
# the cheapest form to send and parse (json_build_object per entry cost the
# server more than everything else in resolving 1000 minions).
_REVISION_ROWS_SQL: Final = """
SELECT revision_id, json_agg(json_build_array(package, policy, op, version))::text
FROM pkgstate_entry
WHERE revision_id = ANY(%s)
GROUP BY revision_id
"""


class Resolver(StorePart):
    """The resolved package state of minions, with a cache of revisions."""

    def __init__(self, db: Database, *, author: str | None = None) -> None:
        super().__init__(db, author=author)
        self._revisions: collections.OrderedDict[int, StateRevision] = (
            collections.OrderedDict()
        )
        self._grain_matches: dict[str, GrainMatch] = {}

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
        with self._db.tx() as cur:
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
                ASSIGNMENTS_SQL + " WHERE a.org_id = ANY(%s) OR a.group_id = ANY(%s)"
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
        reach = self._reach(assignments, own, revisions)
        results: dict[str, dict[str, Any]] = {}
        for minion_id, grains in grains_by_minion.items():
            member = membership.get(minion_id)
            sources = reach.sources(
                minion_id,
                org_id=member[0] if member else None,
                group_ids=member[2] if member else (),
                grains=grains,
            )
            results[minion_id] = resolve(sources, hold=hold_value(grains))
        return results

    def _reach(
        self,
        assignments: Sequence[Sequence[Any]],
        own: Mapping[str, int],
        revisions: Mapping[int, StateRevision],
    ) -> Reach:
        """The assignment rows (of :data:`ASSIGNMENTS_SQL`) and own states
        whose state has a current revision, indexed by target."""
        reach = Reach()
        for row in assignments:
            revision = revisions.get(row[9])
            if revision is None:
                continue
            assignment = assignment_from_row(row)
            if row[2] is not None:
                reach.add_org(row[2], assignment.target, assignment.id, revision)
            elif row[4] is not None:
                reach.add_group(row[4], assignment.target, assignment.id, revision)
            elif row[6] is not None:
                reach.add_grain(self._grain_match(row[6]), assignment.id, revision)
            else:
                reach.add_minion(row[7], assignment.id, revision)
        for minion_id, state_id in own.items():
            if state_id in revisions:
                reach.add_own(minion_id, revisions[state_id])
        return reach

    def resolve_for_minion(
        self, minion_id: str, grains: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The resolved result of one minion (what ext_pillar serves)."""
        return self.resolve_all({minion_id: grains})[minion_id]
