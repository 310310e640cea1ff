"""Each state run that applied a minion's package state: its digest, and the
resolved packages when the digest was current at record time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from saltext.pkgstate.db import StorePart
from saltext.pkgstate.model import PkgStateError


@dataclass(frozen=True)
class Applied:
    """The last recorded application of a minion's package state."""

    minion_id: str
    digest: str
    packages: dict[str, dict[str, Any]] | None
    jid: str | None
    applied_at: datetime


def applied_entry(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a resolved entry applies: its policy, op and version."""
    return {k: spec[k] for k in ("policy", "op", "version") if k in spec}


def check_digest(digest: object) -> str:
    """``digest`` if it is a digest's text; :class:`PkgStateError` if not."""
    if not isinstance(digest, str) or not digest:
        raise PkgStateError("record_applied needs the applied digest")
    return digest


class AppliedRecords(StorePart):
    """Write and read the applied records of minions."""

    def insert_applied(
        self,
        minion_id: str,
        digest: str,
        packages: Mapping[str, Mapping[str, Any]] | None,
        jid: str | None,
    ) -> None:
        """Store one applied record; ``packages`` as resolved, or None when
        ``digest`` was not the minion's current one."""
        check_digest(digest)
        stored = (
            None
            if packages is None
            else {n: applied_entry(spec) for n, spec in packages.items()}
        )
        with self._db.tx() as cur:
            cur.execute(
                "INSERT INTO pkgstate_applied (minion_id, digest, packages, jid)"
                " VALUES (%s, %s, %s, %s)",
                (
                    minion_id,
                    digest,
                    None if stored is None else json.dumps(stored),
                    jid,
                ),
            )

    def last_applied(self, minion_id: str) -> Applied | None:
        """The last applied record of a minion, or None."""
        row = self._db.one(
            "SELECT digest, packages, jid, applied_at FROM pkgstate_applied"
            " WHERE minion_id = %s ORDER BY id DESC LIMIT 1",
            (minion_id,),
        )
        return None if row is None else Applied(minion_id, *row)


__all__ = ["Applied", "AppliedRecords", "applied_entry", "check_digest"]
