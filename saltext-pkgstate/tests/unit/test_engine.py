"""The engine's event handling with a fake store and publisher: beacon events
ask for ``pkg.list_pkgs`` once per minion and within a bound, any
``pkg.list_pkgs`` return stores the inventory and asks for the candidates of
the managed packages, the return of that request stores them, and a
successful non-test state run of the current package state records it as
applied."""

from __future__ import annotations

import pytest

from saltext.pkgstate.engines.pkgstate import InventoryTracker, RateLimitedLog
from saltext.pkgstate.model import parse_entry
from saltext.pkgstate.resolve import Scope, Source, StateRevision, resolve


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeStore:
    """Answers resolve() with a fixed result; records writes."""

    def __init__(self, entries: list[str]) -> None:
        revision = StateRevision(
            "web", 1, {e.name: e for e in map(parse_entry, entries)}
        )
        self.resolved = resolve([Source(Scope.GROUP, "g", (1, 1), revision)])
        self.inventories: dict[str, dict] = {}
        self.available: dict[str, dict] = {}
        self.applied: list[tuple[str, str, str | None]] = []

    def save_inventory(self, minion_id, packages):
        self.inventories[minion_id] = packages

    def save_available(self, minion_id, available):
        if minion_id not in self.inventories:
            return False
        self.available[minion_id] = available
        return True

    def resolve(self, minion_id, grains):
        return self.resolved

    def record_applied(self, minion_id, resolved, jid, grains):
        self.applied.append((minion_id, resolved["digest"], jid))


class FakePublisher:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.requests: list[tuple[str, str, list[str]]] = []
        self.fail = False

    def __call__(self, minion_id, fun, args):
        if self.fail:
            raise RuntimeError("master overloaded")
        self.requests.append((minion_id, fun, list(args)))
        if fun == "pkg.list_pkgs":
            self.asked.append(minion_id)
        return f"2026{len(self.requests):04d}"


@pytest.fixture
def setup():
    store = FakeStore(["bc", "curl>=7.0", "vim@latest", "telnet@removed"])
    publish = FakePublisher()
    clock = Clock()
    tracker = InventoryTracker(
        store,
        publish,
        lambda minion_id: {"os_family": "Debian"},
        max_pending=2,
        request_timeout=300,
        log_interval=60,
        clock=clock,
    )
    return tracker, store, publish, clock


def _beacon(minion_id):
    return f"salt/beacon/{minion_id}/pkgset/changed", {"cookie": "/c", "value": "x 1"}


def _ret(minion_id, fun, ret, jid="1", fun_args=(), success=True):
    return f"salt/job/{jid}/ret/{minion_id}", {
        "id": minion_id,
        "fun": fun,
        "return": ret,
        "jid": jid,
        "fun_args": list(fun_args),
        "success": success,
        "retcode": 0 if success else 1,
    }


def _state_ret(ids, result=True, changes=None):
    return {
        f"pkg_|-{sid}_|-{sid.rsplit('-', 1)[1]}_|-installed": {
            "result": result,
            "changes": changes or {},
            "comment": "",
        }
        for sid in ids
    }


CURRENT = [
    "pkgstate-installed-bc",
    "pkgstate-installed-curl",
    "pkgstate-latest-vim",
    "pkgstate-removed-telnet",
]


def test_a_beacon_event_asks_once_until_the_return(setup):
    tracker, store, publish, _clock = setup
    tracker.handle(*_beacon("web1"))
    tracker.handle(*_beacon("web1"))
    assert publish.asked == ["web1"]
    tracker.handle(*_ret("web1", "pkg.list_pkgs", {"bc": "1.07"}))
    assert store.inventories == {"web1": {"bc": "1.07"}}
    tracker.handle(*_beacon("web1"))
    assert publish.asked == ["web1", "web1"]


def test_a_stored_inventory_asks_for_the_candidates_of_managed_packages(setup):
    tracker, store, publish, _clock = setup
    tracker.handle(*_ret("web1", "pkg.list_pkgs", {"bc": "1.07"}, jid="5"))
    # removed packages cannot be kept orphans: only installed and latest ones
    assert publish.requests == [("web1", "pkg.list_repo_pkgs", ["bc", "curl", "vim"])]
    jid = tracker.pending_candidates["web1"][1]
    # the repositories lack vim; a name not asked for is not stored
    repo = {"bc": ["1.07"], "curl": ["8.0", "7.9"], "nano": ["7.2"]}
    tracker.handle(*_ret("web1", "pkg.list_repo_pkgs", repo, jid=jid))
    assert store.available == {
        "web1": {"bc": ["1.07"], "curl": ["8.0", "7.9"], "vim": []}
    }
    assert tracker.pending_candidates == {}


def test_only_the_engines_own_candidate_request_is_stored(setup):
    tracker, store, _publish, _clock = setup
    tracker.handle(*_ret("web1", "pkg.list_pkgs", {"bc": "1.07"}))
    # somebody's pkg.list_repo_pkgs with other arguments (another jid)
    tracker.handle(*_ret("web1", "pkg.list_repo_pkgs", {"bc": ["1.07"]}, jid="1"))
    assert store.available == {}
    jid = tracker.pending_candidates["web1"][1]
    # a failed or unavailable function stores nothing and ends the request
    tracker.handle(
        *_ret(
            "web1",
            "pkg.list_repo_pkgs",
            "'pkg.list_repo_pkgs' is not available.",
            jid=jid,
        )
    )
    assert store.available == {} and tracker.pending_candidates == {}


def test_candidate_requests_share_the_bound(setup):
    tracker, _store, publish, clock = setup
    tracker.handle(*_ret("a", "pkg.list_pkgs", {"bc": "1"}))
    tracker.handle(*_ret("b", "pkg.list_pkgs", {"bc": "1"}))
    tracker.handle(*_beacon("c"))  # max_pending=2: two candidate requests in flight
    assert [r[0] for r in publish.requests] == ["a", "b"]
    tracker.handle(*_ret("a", "pkg.list_pkgs", {"bc": "1"}))  # a: still in flight
    assert len(publish.requests) == 2
    clock.now += 300
    tracker.handle(*_beacon("c"))
    assert publish.requests[-1] == ("c", "pkg.list_pkgs", [])


def test_requests_in_flight_are_bounded_and_expire(setup):
    tracker, _store, publish, clock = setup
    for minion in ("a", "b", "c"):
        tracker.handle(*_beacon(minion))
    assert publish.asked == ["a", "b"]  # max_pending=2: c is dropped
    clock.now += 300  # the requests of a and b time out
    tracker.handle(*_beacon("c"))
    assert publish.asked == ["a", "b", "c"]


def test_any_list_pkgs_return_refreshes_but_a_failed_one_does_not(setup):
    tracker, store, _publish, _clock = setup
    tracker.handle(*_ret("web2", "pkg.list_pkgs", {"vim": "9.0"}, jid="99"))
    tracker.handle(*_ret("web3", "pkg.list_pkgs", {"x": "1"}, success=False))
    tracker.handle(*_ret("web4", "pkg.list_pkgs", "'pkg.list_pkgs' is not available."))
    assert store.inventories == {"web2": {"vim": "9.0"}}


def test_an_applied_current_state_is_recorded(setup):
    tracker, store, publish, _clock = setup
    tracker.handle(*_ret("web1", "state.apply", _state_ret(CURRENT), jid="7"))
    assert store.applied == [("web1", store.resolved["digest"], "7")]
    assert publish.asked == []  # nothing changed: no inventory request


def test_test_runs_failures_and_other_states_are_not_recorded(setup):
    tracker, store, _publish, _clock = setup
    tracker.handle(
        *_ret(
            "web1",
            "state.apply",
            _state_ret(CURRENT),
            fun_args=["pkgstate", {"test": True}],
        )
    )
    tracker.handle(*_ret("web1", "state.highstate", _state_ret(CURRENT, result=False)))
    stale = CURRENT[:1]  # applied before the others were added
    tracker.handle(*_ret("web1", "state.sls", _state_ret(stale)))
    tracker.handle(
        *_ret("web1", "state.apply", {"file_|-motd_|-/etc/motd_|-managed": {}})
    )
    assert store.applied == []


def test_a_run_that_changed_packages_refreshes_the_inventory(setup):
    tracker, store, publish, _clock = setup
    changes = {"bc": {"old": "", "new": "1.07"}}
    tracker.handle(*_ret("web1", "state.apply", _state_ret(CURRENT, changes=changes)))
    assert publish.asked == ["web1"]
    assert len(store.applied) == 1


def test_a_failing_publish_is_logged_not_raised(setup, caplog):
    tracker, _store, publish, _clock = setup
    publish.fail = True
    for _ in range(5):
        tracker.handle(*_beacon("web1"))
    assert tracker.pending == {}
    warnings = [r for r in caplog.records if "cannot ask web1" in r.getMessage()]
    assert len(warnings) == 1


def test_rate_limited_log_counts_what_it_held_back(caplog):
    clock = Clock()
    limited = RateLimitedLog(60, clock)
    for _ in range(3):
        limited.warning("full", "queue full")
    clock.now += 61
    limited.warning("full", "queue full")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "pkgstate engine: queue full",
        "pkgstate engine: queue full (3 times since the last report)",
    ]


@pytest.mark.parametrize(
    "tag",
    ["salt/beacon/web1/inotify/changed", "salt/beacon//pkgset/changed", "salt/auth"],
)
def test_other_events_are_ignored(setup, tag):
    tracker, store, publish, _clock = setup
    tracker.handle(tag, {})
    assert publish.asked == [] and store.inventories == {}
