"""
Keep package inventories and applied package states current, from the
master's event bus.

.. versionadded:: 0.1.0

The engine reacts to three kinds of events:

``salt/beacon/<id>/pkgset/changed``
    The ``pkgset`` beacon saw the minion's package database change. The
    engine asks the minion for ``pkg.list_pkgs`` (asynchronously) and does
    not wait for it.

``salt/job/<jid>/ret/<id>`` of ``pkg.list_pkgs``
    Any successful ``pkg.list_pkgs`` return, the engine's own or anybody
    else's, replaces the minion's stored inventory.

``salt/job/<jid>/ret/<id>`` of ``state.apply``, ``state.highstate`` or ``state.sls``
    A run (not ``test=True``) that applied the minion's package state
    (state IDs ``pkgstate-...``) without a failure records the minion's
    resolved digest as applied, when the run's package state IDs are those
    of the minion's current package state (a save between the run's pillar
    compile and its return is not recorded as applied). A run that changed
    packages also refreshes the inventory.

Work is bounded: at most ``max_pending`` inventory requests are in flight
(further beacon events are counted and dropped; the next event of a minion
asks again), a minion with a request in flight is not asked again within
``request_timeout`` seconds, and repeated problems are logged at most once
per ``log_interval`` seconds with a count.

Configuration, in the master config:

.. code-block:: yaml

    pkgstate:
      dsn: "host=db.example.com dbname=salt user=salt"
    engines:
      - pkgstate:
          max_pending: 500
          request_timeout: 300
          log_interval: 60
"""

import logging
import time
from typing import Any

import salt.cache
import salt.client
import salt.utils.event

from saltext.pkgstate import master

# Salt's loader injects these into the module when it loads it.
__opts__: dict[str, Any]
__context__: dict[str, Any]

log = logging.getLogger(__name__)

__virtualname__ = "pkgstate"

BEACON_TAG_PREFIX = "salt/beacon/"
BEACON_TAG_SUFFIX = "/pkgset/changed"
JOB_TAG_PREFIX = "salt/job/"
LIST_FUNCTION = "pkg.list_pkgs"
STATE_FUNCTIONS = frozenset({"state.apply", "state.highstate", "state.sls"})
#: the part of a state return key (``pkg_|-<id>_|-<name>_|-<fun>``) before the ID
STATE_ID_MARK = "_|-pkgstate-"


def __virtual__():
    return __virtualname__


def _state_ids(ret):
    """The ``pkgstate-`` state IDs of a state run's return and whether each
    succeeded and changed something: ``{id: (result, changed)}``."""
    found = {}
    for key, item in ret.items():
        if STATE_ID_MARK not in key or not isinstance(item, dict):
            continue
        parts = key.split("_|-")
        if len(parts) < 2:
            continue
        found[parts[1]] = (item.get("result") is True, bool(item.get("changes")))
    return found


def _is_test_run(data):
    """True if a state job ran with ``test=True`` (nothing applied)."""
    for arg in data.get("fun_args") or ():
        if isinstance(arg, dict) and arg.get("test") is True:
            return True
        if isinstance(arg, str) and arg.replace(" ", "").lower() == "test=true":
            return True
    return False


class RateLimitedLog:
    """
    Log one line per kind of problem at most every ``interval`` seconds,
    with the number of occurrences since the last line.
    """

    def __init__(self, interval, clock=time.monotonic):
        self.interval = interval
        self.clock = clock
        self._last = {}
        self._count = {}

    def warning(self, kind, message, *args):
        """Count a ``kind`` of problem; log it if its interval has passed."""
        now = self.clock()
        self._count[kind] = self._count.get(kind, 0) + 1
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            return
        count = self._count.pop(kind)
        self._last[kind] = now
        suffix = f" ({count} times since the last report)" if count > 1 else ""
        log.warning("pkgstate engine: " + message + suffix, *args)


class InventoryTracker:
    """
    What the engine does with one event, given a store (inventories, applied
    digests, resolved results), a way to publish ``pkg.list_pkgs`` and the
    minions' cached grains.

    :param store: a :class:`saltext.pkgstate.master.MasterStore`-like object
    :param publish: ``publish(minion_id) -> jid`` (``""`` or ``0`` on failure)
    :param grains: ``grains(minion_id) -> dict``
    """

    def __init__(
        self,
        store,
        publish,
        grains,
        max_pending=500,
        request_timeout=300.0,
        log_interval=60.0,
        clock=time.monotonic,
    ):
        self.store = store
        self.publish = publish
        self.grains = grains
        self.max_pending = max_pending
        self.request_timeout = request_timeout
        self.clock = clock
        self.problems = RateLimitedLog(log_interval, clock)
        #: minion id -> when its pkg.list_pkgs was asked for
        self.pending = {}

    def handle(self, tag, data):
        """Act on one event; never raises (problems are logged)."""
        try:
            if tag.startswith(BEACON_TAG_PREFIX) and tag.endswith(BEACON_TAG_SUFFIX):
                minion_id = tag[len(BEACON_TAG_PREFIX) : -len(BEACON_TAG_SUFFIX)]
                if minion_id and "/" not in minion_id:
                    self.request_inventory(minion_id)
            elif tag.startswith(JOB_TAG_PREFIX) and "/ret/" in tag:
                self._job_return(data)
        except Exception as exc:  # pylint: disable=broad-except
            self.problems.warning("event", "handling %s failed: %s", tag, exc)

    def request_inventory(self, minion_id):
        """Ask ``minion_id`` for ``pkg.list_pkgs`` unless already asked; return
        True if a request went out."""
        now = self.clock()
        self._expire(now)
        if minion_id in self.pending:
            return False
        if len(self.pending) >= self.max_pending:
            self.problems.warning(
                "full",
                "%d inventory requests in flight, dropped the one for %s",
                len(self.pending),
                minion_id,
            )
            return False
        try:
            jid = self.publish(minion_id)
        except Exception as exc:  # pylint: disable=broad-except
            jid = None
            self.problems.warning(
                "publish", "cannot ask %s for %s: %s", minion_id, LIST_FUNCTION, exc
            )
        if not jid:
            return False
        self.pending[minion_id] = now
        return True

    def _expire(self, now):
        for minion_id, asked in list(self.pending.items()):
            if now - asked >= self.request_timeout:
                del self.pending[minion_id]

    def _job_return(self, data):
        minion_id = data.get("id")
        fun = data.get("fun")
        ret = data.get("return")
        if not isinstance(minion_id, str) or not isinstance(ret, dict):
            return
        if fun == LIST_FUNCTION:
            self.pending.pop(minion_id, None)
            if data.get("success", True) and data.get("retcode", 0) == 0:
                self.store.save_inventory(minion_id, ret)
                log.debug("pkgstate engine: stored the inventory of %s", minion_id)
        elif fun in STATE_FUNCTIONS and not _is_test_run(data):
            self._state_return(minion_id, ret, data.get("jid"))

    def _state_return(self, minion_id, ret, jid):
        ran = _state_ids(ret)
        if not ran:
            return
        if any(changed for _, changed in ran.values()):
            self.request_inventory(minion_id)
        if not all(ok for ok, _ in ran.values()):
            return
        grains = self.grains(minion_id)
        resolved = self.store.resolve(minion_id, grains)
        if set(ran) != master.state_ids(resolved):
            log.info(
                "pkgstate engine: %s applied a package state that is not its "
                "current one (saved meanwhile?); not recorded as applied",
                minion_id,
            )
            return
        self.store.record_applied(minion_id, resolved, jid, grains)
        log.debug(
            "pkgstate engine: %s applied digest %s", minion_id, resolved["digest"]
        )


def start(max_pending=500, request_timeout=300, log_interval=60):
    """
    Follow the master's event bus until the master stops the engine.
    """
    opts = __opts__
    client = salt.client.LocalClient(mopts=opts)
    cache = salt.cache.factory(opts)

    def publish(minion_id):
        return client.cmd_async(minion_id, LIST_FUNCTION, tgt_type="list")

    def grains(minion_id):
        return cache.fetch("grains", minion_id) or {}

    tracker = InventoryTracker(
        master.MasterStore(opts),
        publish,
        grains,
        max_pending=max_pending,
        request_timeout=request_timeout,
        log_interval=log_interval,
    )
    with salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True) as bus:
        while True:
            event = bus.get_event(wait=1, full=True, auto_reconnect=True)
            if event is not None:
                tracker.handle(event["tag"], event["data"])
