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
    else's, replaces the minion's stored inventory. When the minion has
    managed packages that are ``installed`` or ``latest`` (the entries whose
    status reads candidates), the engine then asks it for
    ``pkg.list_repo_pkgs`` of just those names.

``salt/job/<jid>/ret/<id>`` of ``pkg.list_repo_pkgs``
    The return of the engine's own request stores the candidates of the
    names it asked for (``[]`` for a name the repositories lack: a managed
    package installed without a candidate is then ``orphan-kept``). Other
    ``pkg.list_repo_pkgs`` returns are ignored: their arguments (globs,
    ``fromrepo``) need not cover the managed names.

``salt/job/<jid>/ret/<id>`` of ``state.apply``, ``state.highstate`` or ``state.sls``
    A run (not ``test=True``) that applied the minion's package state
    (state IDs ``pkgstate-...``) without a failure records the minion's
    resolved digest as applied, when the run's package state IDs are those
    of the minion's current package state (a save between the run's pillar
    compile and its return is not recorded as applied). A run that changed
    packages also refreshes the inventory.

Work is bounded: at most ``max_pending`` requests (``pkg.list_pkgs`` and
``pkg.list_repo_pkgs`` together) are in flight (further ones are counted and
dropped; the next event of a minion asks again), a minion with a request of
a kind in flight is not asked again for that kind within
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
CANDIDATES_FUNCTION = "pkg.list_repo_pkgs"
#: the policies whose status depends on the repositories' candidates
CANDIDATE_POLICIES = frozenset({"installed", "latest"})
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
    :param publish: ``publish(minion_id, fun, args) -> jid`` (``""`` or ``0``
        on failure)
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
        #: minion id -> (when, jid, names) of its pkg.list_repo_pkgs request
        self.pending_candidates = {}

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
        jid = self._publish(minion_id, LIST_FUNCTION, [])
        if not jid:
            return False
        self.pending[minion_id] = now
        return True

    def request_candidates(self, minion_id, names):
        """Ask ``minion_id`` for ``pkg.list_repo_pkgs`` of ``names`` unless a
        request is in flight; return True if a request went out."""
        now = self.clock()
        self._expire(now)
        if not names or minion_id in self.pending_candidates:
            return False
        names = sorted(names)
        jid = self._publish(minion_id, CANDIDATES_FUNCTION, names)
        if not jid:
            return False
        self.pending_candidates[minion_id] = (now, str(jid), names)
        return True

    def _publish(self, minion_id, fun, args):
        """The jid of a request, or None when it was dropped or failed."""
        in_flight = len(self.pending) + len(self.pending_candidates)
        if in_flight >= self.max_pending:
            self.problems.warning(
                "full",
                "%d requests in flight, dropped the %s one for %s",
                in_flight,
                fun,
                minion_id,
            )
            return None
        try:
            return self.publish(minion_id, fun, args) or None
        except Exception as exc:  # pylint: disable=broad-except
            self.problems.warning(
                "publish", "cannot ask %s for %s: %s", minion_id, fun, exc
            )
            return None

    def _expire(self, now):
        for minion_id, asked in list(self.pending.items()):
            if now - asked >= self.request_timeout:
                del self.pending[minion_id]
        for minion_id, (asked, _, _) in list(self.pending_candidates.items()):
            if now - asked >= self.request_timeout:
                del self.pending_candidates[minion_id]

    def _job_return(self, data):
        minion_id = data.get("id")
        fun = data.get("fun")
        ret = data.get("return")
        if not isinstance(minion_id, str):
            return
        ok = data.get("success", True) and data.get("retcode", 0) == 0
        if fun == LIST_FUNCTION:
            self.pending.pop(minion_id, None)
            if ok and isinstance(ret, dict):
                self.store.save_inventory(minion_id, ret)
                log.debug("pkgstate engine: stored the inventory of %s", minion_id)
                self._ask_candidates(minion_id)
        elif fun == CANDIDATES_FUNCTION:
            self._candidates_return(minion_id, ret, ok, str(data.get("jid")))
        elif (
            fun in STATE_FUNCTIONS and isinstance(ret, dict) and not _is_test_run(data)
        ):
            self._state_return(minion_id, ret, data.get("jid"))

    def _ask_candidates(self, minion_id):
        """Ask for the candidates of the minion's managed packages whose
        status depends on them."""
        resolved = self.store.resolve(minion_id, self.grains(minion_id))
        names = [
            name
            for name, spec in resolved["packages"].items()
            if spec.get("policy") in CANDIDATE_POLICIES
        ]
        self.request_candidates(minion_id, names)

    def _candidates_return(self, minion_id, ret, ok, jid):
        asked = self.pending_candidates.get(minion_id)
        if asked is None or asked[1] != jid:
            return  # not the engine's request: its arguments are unknown
        del self.pending_candidates[minion_id]
        if not ok or not isinstance(ret, dict):
            self.problems.warning(
                "candidates",
                "%s did not list its candidates: %s",
                minion_id,
                str(ret)[:200],
            )
            return
        available = {name: ret.get(name) or [] for name in asked[2]}
        if self.store.save_available(minion_id, available):
            log.debug("pkgstate engine: stored the candidates of %s", minion_id)

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

    def publish(minion_id, fun, args):
        return client.cmd_async(minion_id, fun, arg=list(args), tgt_type="list")

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
