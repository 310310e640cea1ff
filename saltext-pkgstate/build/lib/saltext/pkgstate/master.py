"""What the extension's Salt modules share on the master: configuration and
kept database connections.

Salt's loader gives every ext_pillar, master_tops, runner and engine module
fresh globals for each loader it builds (a master worker builds one per
pillar compile), so connections kept in those modules would be dropped after
every compile. This module is imported normally, once per process: it keeps
the stores (:class:`~saltext.pkgstate.store.PackageStateStore`, each with one
connection and a cache of immutable revisions) between calls.

Configuration, in the master config:

.. code-block:: yaml

    pkgstate:
      # a libpq connection string or URI
      dsn: "host=db.example.com dbname=salt user=salt"
      # stores kept per master process (default 1)
      pool_size: 1

Without ``pkgstate:dsn`` the ``postgres:`` block of Salt's postgres
ext_pillar (``host``, ``port``, ``user``, ``pass``, ``db``) is used.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final

import psycopg2.extensions

from saltext.pkgstate.model import PkgStateError
from saltext.pkgstate.render import render_sls
from saltext.pkgstate.store import PackageStateStore, PkgStateStoreError

CONFIG_KEY: Final = "pkgstate"
DEFAULT_POOL_SIZE: Final = 1
_POSTGRES_KEYS: Final = {
    "host": "host",
    "port": "port",
    "user": "user",
    "pass": "password",
    "db": "dbname",
}


class PkgStateConfigError(PkgStateError):
    """The master configuration does not say how to reach the database."""


def dsn_from_opts(opts: Mapping[str, Any]) -> str:
    """The database of the master options: ``pkgstate:dsn``, else the
    ``postgres:`` block; :class:`PkgStateConfigError` if neither is set."""
    config = opts.get(CONFIG_KEY) or {}
    if not isinstance(config, Mapping):
        raise PkgStateConfigError(
            f"master option {CONFIG_KEY!r} must be a mapping with a 'dsn' key"
        )
    dsn = config.get("dsn")
    if dsn:
        if not isinstance(dsn, str):
            raise PkgStateConfigError(f"{CONFIG_KEY}:dsn must be a string")
        return dsn
    postgres = opts.get("postgres")
    if isinstance(postgres, Mapping) and postgres.get("db"):
        parts = {
            key: str(postgres[option])
            for option, key in _POSTGRES_KEYS.items()
            if postgres.get(option) not in (None, "")
        }
        return str(psycopg2.extensions.make_dsn(**parts))
    raise PkgStateConfigError(
        f"no package state database configured: set {CONFIG_KEY}:dsn in the "
        "master config (or the postgres: block of the postgres ext_pillar)"
    )


def pool_size_from_opts(opts: Mapping[str, Any]) -> int:
    """``pkgstate:pool_size``, checked."""
    config = opts.get(CONFIG_KEY) or {}
    size = (
        config.get("pool_size", DEFAULT_POOL_SIZE)
        if isinstance(config, Mapping)
        else DEFAULT_POOL_SIZE
    )
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise PkgStateConfigError(
            f"{CONFIG_KEY}:pool_size must be a whole number >= 0, got {size!r}"
        )
    return size


class _Pool:
    """Idle stores of one database in one process."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.pid = os.getpid()
        self.idle: list[PackageStateStore] = []
        self.lock = threading.Lock()


_POOLS: dict[str, _Pool] = {}
_POOLS_LOCK = threading.Lock()
# Stores a forked child inherited: their connections belong to the parent's
# sessions. Kept referenced so the child's garbage collector never closes
# them (which would end the parent's session too).
_INHERITED: list[PackageStateStore] = []


def _pool(dsn: str) -> _Pool:
    with _POOLS_LOCK:
        pool = _POOLS.get(dsn)
        if pool is None or pool.pid != os.getpid():
            if pool is not None:
                _INHERITED.extend(pool.idle)
            pool = _POOLS[dsn] = _Pool(dsn)
        return pool


@contextlib.contextmanager
def kept_store(opts: Mapping[str, Any]) -> Iterator[PackageStateStore]:
    """A store on the configured database, kept for the next caller in this
    process (up to ``pkgstate:pool_size`` of them).

    A store whose call failed is closed, not kept.
    """
    dsn = dsn_from_opts(opts)
    size = pool_size_from_opts(opts)
    pool = _pool(dsn)
    with pool.lock:
        store = pool.idle.pop() if pool.idle else None
    if store is None:
        store = PackageStateStore(dsn)
    try:
        yield store
    except BaseException:
        store.close()
        raise
    with pool.lock:
        if len(pool.idle) < size:
            pool.idle.append(store)
            return
    store.close()


def resolve_for_minion(
    opts: Mapping[str, Any], minion_id: str, grains: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The resolved result of one minion on a kept store.

    A kept connection may have died while idle (a server restart): the
    store then raises once and reconnects on its next call, so the
    resolution is tried a second time before the error is raised.
    """
    for attempt in (1, 2):
        try:
            with kept_store(opts) as store:
                return store.resolve_for_minion(minion_id, grains)
        except PkgStateStoreError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def state_ids(resolved: Mapping[str, Any]) -> set[str]:
    """The state IDs of a resolved result's SLS (``pkgstate-...``)."""
    return set(render_sls(resolved["packages"]))


class MasterStore:
    """The store as the engine uses it: one connection per engine process,
    reopened after an error."""

    def __init__(self, opts: Mapping[str, Any]) -> None:
        self.store = PackageStateStore(dsn_from_opts(opts), author="pkgstate-engine")

    def save_inventory(self, minion_id: str, packages: Mapping[str, Any]) -> None:
        """Replace the minion's inventory with a ``pkg.list_pkgs`` return."""
        self.store.write_inventory(minion_id, packages)

    def save_available(self, minion_id: str, available: Mapping[str, Any]) -> bool:
        """Replace the candidates of the minion's stored inventory."""
        return self.store.write_available(minion_id, available)

    def resolve(
        self, minion_id: str, grains: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The minion's current resolved result."""
        return self.store.resolve_for_minion(minion_id, grains)

    def record_applied(
        self,
        minion_id: str,
        resolved: Mapping[str, Any],
        jid: str | None,
        grains: Mapping[str, Any] | None,
    ) -> None:
        """Record the resolved result as applied by the minion."""
        self.store.record_applied(minion_id, resolved["digest"], jid=jid, grains=grains)
