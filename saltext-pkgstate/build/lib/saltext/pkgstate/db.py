"""One connection to the package state database, and its transactions.

Every part of the store (:mod:`~saltext.pkgstate.revisions`,
:mod:`~saltext.pkgstate.assignments`, :mod:`~saltext.pkgstate.resolution`,
:mod:`~saltext.pkgstate.inventory`, :mod:`~saltext.pkgstate.applied`) is a
:class:`StorePart` working through one :class:`Database`, so that a store
made of them holds one connection. Database trouble raises
:class:`PkgStateStoreError` with the server's message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg2
import psycopg2.extensions


class PkgStateStoreError(RuntimeError):
    """The database could not be reached or refused a statement."""


class Database:
    """A libpq ``dsn`` and the one connection to it, reopened when closed.

    Not safe to share between threads.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: psycopg2.extensions.connection | None = None

    def close(self) -> None:
        """Close the connection (the next transaction opens a new one)."""
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None

    def _connection(self) -> psycopg2.extensions.connection:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg2.connect(self.dsn, connect_timeout=10)
            except psycopg2.Error as exc:
                raise PkgStateStoreError(
                    f"cannot connect to the package state database: {str(exc).strip()}"
                ) from None
        return self._conn

    @contextmanager
    def tx(self) -> Iterator[psycopg2.extensions.cursor]:
        """One transaction: committed on success, rolled back on any error."""
        conn = self._connection()
        try:
            with conn, conn.cursor() as cur:
                yield cur
        except psycopg2.OperationalError as exc:
            # the connection may be dead (a server restart): the next call
            # reconnects instead of failing on it again
            self.close()
            raise PkgStateStoreError(
                f"package state database error: {str(exc).strip()}"
            ) from None
        except psycopg2.Error as exc:
            raise PkgStateStoreError(
                f"package state database refused the change: {str(exc).strip()}"
            ) from None

    def one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The first row of one query in its own transaction, or None."""
        with self.tx() as cur:
            cur.execute(sql, params)
            row: tuple[Any, ...] | None = cur.fetchone()
        return row


class StorePart:
    """One concern of the package state store, on a shared :class:`Database`.

    ``author`` is recorded with the changes that name none. The parts
    cooperate: :class:`~saltext.pkgstate.store.PackageStateStore` is all of
    them on one database.
    """

    def __init__(self, db: Database, *, author: str | None = None) -> None:
        self._db = db
        self._author = author
