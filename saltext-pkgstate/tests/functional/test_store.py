"""Package states in a real PostgreSQL that has the extension's schema and
nothing else: revisions, history, assignments, precedence, inventory and
status through saltext.pkgstate.store."""

from __future__ import annotations

import concurrent.futures
import threading

import psycopg2
import pytest

from saltext.pkgstate.model import PkgStateError, parse_entry
from saltext.pkgstate.render import packages_of
from saltext.pkgstate.runners import pkgstate as runner
from saltext.pkgstate.store import PackageStateStore


@pytest.fixture(scope="module")
def fleet(database, add_org):
    """acme with groups web (lower id) and edge; m1 in both, m2 in web only."""
    ids = add_org(database, "acme", {"m1": ["web", "edge"], "m2": ["web"]})
    add_org(database, "other", {})
    return ids


@pytest.fixture
def store(database, fleet):
    with PackageStateStore(database.dsn, author="tester") as store:
        yield store


def _count(database, table):
    conn = database.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM {table}")
            return cur.fetchone()[0]
    finally:
        conn.close()


def test_save_show_history_diff_rollback(store) -> None:
    first = store.create_state("hist", ["nginx>=1.20", "curl"])
    assert first.revision == 1
    second = store.save_revision("hist", ["nginx>=1.22", "vim@latest"], comment="bump")
    assert second.revision == 2
    assert store.show("hist").revision == 2
    assert [str(e) for e in store.show("hist", 1).entries] == ["curl", "nginx>=1.20"]
    history = store.history("hist")
    assert [(r.revision, r.comment, r.author) for r in history] == [
        (1, None, "tester"),
        (2, "bump", "tester"),
    ]
    diff = store.diff("hist", 1, 2)
    assert diff.added == {"vim": "vim@latest"}
    assert diff.removed == {"curl": "curl"}
    assert diff.changed == {"nginx": ("nginx>=1.20", "nginx>=1.22")}
    back = store.rollback("hist", 1)
    assert back.revision == 3
    assert back.comment == "rollback to revision 1"
    assert store.show("hist").entries == first.entries
    assert [r.revision for r in store.history("hist")] == [1, 2, 3]


def test_update_packages_sets_and_unmanages(store) -> None:
    store.create_state("upd", ["nginx", "curl", "vim"])
    rev = store.update_packages("upd", ["nginx@latest"], unmanage=["vim"])
    assert [str(e) for e in rev.entries] == ["curl", "nginx@latest"]
    with pytest.raises(PkgStateError, match="does not manage zsh"):
        store.update_packages("upd", unmanage=["zsh"])
    assert store.show("upd").revision == 2


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (["nginx=>1.2"], "unknown operator '=>'"),
        (["curl@latest>=7"], "cannot be combined with latest"),
        (["nginx>=x.y"], "does not parse"),
        (["nginx", "nginx@latest"], "two entries for package 'nginx'"),
    ],
)
def test_bad_save_stores_nothing(store, database, entries, message) -> None:
    if "bad" not in {s.name for s in store.list_states()}:
        store.create_state("bad", ["keep"])
    before = (_count(database, "pkgstate_revision"), _count(database, "pkgstate_entry"))
    with pytest.raises(PkgStateError, match=message):
        store.save_revision("bad", entries)
    after = (_count(database, "pkgstate_revision"), _count(database, "pkgstate_entry"))
    assert after == before
    assert [str(e) for e in store.show("bad").entries] == ["keep"]


def test_unknown_state_and_revision(store) -> None:
    with pytest.raises(PkgStateError, match="no package state 'nope'"):
        store.save_revision("nope", ["vim"])
    store.create_state("short")
    with pytest.raises(PkgStateError, match="has no revision 7"):
        store.show("short", 7)
    with pytest.raises(PkgStateError, match="already exists"):
        store.create_state("short")


def test_revisions_cannot_be_edited_in_place(store, database) -> None:
    store.create_state("frozen", ["vim"])
    conn = database.connect()
    try:
        for sql in (
            "UPDATE pkgstate_entry SET policy = 'latest'",
            "DELETE FROM pkgstate_revision",
            "TRUNCATE pkgstate_entry",
        ):
            with (
                pytest.raises(psycopg2.Error, match="append-only"),
                conn,
                conn.cursor() as cur,
            ):
                cur.execute(sql)
        # one entry per package and revision, even written by hand
        with (
            pytest.raises(psycopg2.IntegrityError, match="pkgstate_entry_pkey"),
            conn,
            conn.cursor() as cur,
        ):
            cur.execute(
                "INSERT INTO pkgstate_entry SELECT revision_id, package, 'latest',"
                " NULL, NULL FROM pkgstate_entry LIMIT 1"
            )
    finally:
        conn.close()


def test_import_from_list_pkgs(store) -> None:
    list_pkgs = {"bash": "5.1-2", "kernel": ["5.14.0-1", "5.14.0-2"], "vim": "2:9.0"}
    rev = store.import_packages("imported", list_pkgs, exact=True)
    assert rev.revision == 1
    assert [str(e) for e in rev.entries] == ["bash=5.1-2", "kernel", "vim=2:9.0"]
    again = store.import_packages("imported", {"bash": "5.2-1"})
    assert again.revision == 2
    assert [str(e) for e in again.entries] == ["bash"]
    with pytest.raises(PkgStateError, match="cannot import"):
        store.import_packages("imported", {"bad name": "1"})
    assert store.show("imported").revision == 2


def test_assign_refuses_missing_targets_and_keeps_what_was_there(
    store, database
) -> None:
    store.create_state("assigned", ["vim"])
    store.assign("assigned", group="acme/web")
    before = _count(database, "pkgstate_assignment")
    for kwargs, message in (
        ({"group": "nosuch"}, "no group 'nosuch'"),
        ({"group": 999999}, "no group 999999"),
        ({"org": "nosuch"}, "no organization 'nosuch'"),
        ({"grain": "P@os:(Debian"}, "does not compile"),
        ({"grain": "os"}, "does not compile"),
        ({"minions": []}, "non-empty list"),
        ({}, "give a target"),
        # a good target with a bad one: neither is stored
        ({"org": "acme", "group": "nosuch"}, "no group"),
    ):
        with pytest.raises(PkgStateError, match=message):
            store.assign("assigned", **kwargs)
    assert _count(database, "pkgstate_assignment") == before
    with pytest.raises(PkgStateError, match="own state"):
        store.assign("minion:m1", org="acme")
    with pytest.raises(PkgStateError, match="not assigned to group 'acme/edge'"):
        store.unassign("assigned", group="acme/edge")
    # a misspelt target is a caller's error, not an assignment to nothing
    with pytest.raises(TypeError, match="groups"):
        store.unassign("assigned", groups="acme/web")
    assert [a.target for a in store.assignments("assigned")] == ["acme/web"]


def test_precedence_in_the_database(store, fleet) -> None:
    store.create_state("p-org", ["nginx", "curl", "vim", "zsh", "git"])
    store.create_state("p-web", ["nginx>=1.20", "curl@removed"])
    store.create_state("p-edge", ["nginx=1.22"])
    store.create_state("p-ubuntu", ["curl@latest", "vim@purged"])
    store.create_state("p-listed", ["vim@removed"])
    store.save_revision("minion:m1", ["zsh@absent<5"])
    store.assign("p-org", org="acme")
    store.assign("p-web", group=fleet["web"])
    store.assign("p-edge", group="edge")
    store.assign("p-ubuntu", grain="G@os:Ubuntu")
    store.assign("p-listed", minions=["m1", "elsewhere"])
    try:
        ubuntu = {"os": "Ubuntu", "os_family": "Debian"}
        result = store.resolve_all({"m1": ubuntu, "m2": {"os": "Fedora"}, "m3": ubuntu})
        m1 = {n: s["decided_by"] for n, s in result["m1"]["packages"].items()}
        assert m1 == {
            "nginx": "p-edge",
            "curl": "p-ubuntu",
            "vim": "p-listed",
            "zsh": "minion:m1",
            "git": "p-org",
        }
        assert result["m1"]["packages"]["nginx"]["hold"] is True
        m2 = {
            n: str(parse_entry(n + _spec(s)))
            for n, s in result["m2"]["packages"].items()
        }
        assert m2 == {
            "nginx": "nginx>=1.20",
            "curl": "curl@removed",
            "vim": "vim",
            "zsh": "zsh",
            "git": "git",
        }
        # m3 is in no org or group: only the grain match reaches it
        assert set(result["m3"]["packages"]) == {"curl", "vim"}
        assert store.resolve_for_minion("m1", ubuntu) == result["m1"]
        # a group save reaches every member at once
        store.save_revision("p-web", ["nginx>=1.24", "curl@removed"])
        after = store.resolve_all({"m1": ubuntu, "m2": {"os": "Fedora"}})
        assert after["m2"]["packages"]["nginx"]["version"] == "1.24"
        assert after["m2"]["digest"] != result["m2"]["digest"]
        assert after["m1"]["digest"] == result["m1"]["digest"]  # edge still wins
    finally:
        store.unassign("p-org", org="acme")
        store.unassign("p-web", group="acme/web")
        store.unassign("p-edge", group="acme/edge")
        store.unassign("p-ubuntu", grain="G@os:Ubuntu")
        store.unassign("p-listed", minions=["m1", "elsewhere"])


def _spec(spec):
    policy = spec["policy"]
    head = "" if policy == "installed" else "@" + policy
    return head + spec.get("op", "") + spec.get("version", "")


def test_status_pending_consistent_inconsistent_orphan(store) -> None:
    store.save_revision(
        "minion:st1", ["nginx>=1.20", "curl@latest", "telnet@removed", "oldtool"]
    )
    store.write_inventory(
        "st1",
        {"nginx": "1.22-1", "curl": "7.1", "telnet": "0.17", "oldtool": "1.0"},
        available={
            "nginx": ["1.22-1"],
            "curl": ["7.1", "8.0"],
            "telnet": ["0.17"],
            "oldtool": [],
        },
    )
    status = store.status("st1")
    assert {p["status"] for p in status["packages"].values()} == {"pending"}
    resolved = store.resolve_for_minion("st1")
    assert store.record_applied("st1", resolved["digest"], jid="1") is True
    status = store.status("st1")
    assert {n: p["status"] for n, p in status["packages"].items()} == {
        "nginx": "consistent",
        "curl": "inconsistent",  # 7.1 installed, 8.0 available
        "telnet": "inconsistent",  # still installed
        "oldtool": "orphan-kept",  # installed, no candidate
    }
    # a save after the apply: only the changed package is pending
    store.save_revision(
        "minion:st1", ["nginx>=1.24", "curl@latest", "telnet@removed", "oldtool"]
    )
    status = store.status("st1")
    assert status["packages"]["nginx"]["status"] == "pending"
    assert status["packages"]["oldtool"]["status"] == "orphan-kept"
    # the minion applies it and changes outside Salt are seen in the inventory
    store.record_applied("st1", store.resolve_for_minion("st1")["digest"])
    store.write_inventory(
        "st1",
        {"nginx": "1.24-1", "curl": "8.0"},
        available={"nginx": ["1.24-1"], "curl": ["8.0"], "telnet": ["0.17"]},
    )
    status = store.status("st1")
    assert {n: p["status"] for n, p in status["packages"].items()} == {
        "nginx": "consistent",
        "curl": "consistent",
        "telnet": "consistent",
        "oldtool": "inconsistent",  # kept orphan that went away
    }
    assert status["counts"] == {"consistent": 3, "inconsistent": 1}


def test_candidates_are_kept_until_looked_up_again(store) -> None:
    store.save_revision("minion:st2", ["oldtool", "nginx"])
    assert store.write_available("st2", {"oldtool": []}) is False  # no inventory
    store.write_inventory("st2", {"oldtool": "1.0", "nginx": "1.22-1"})
    store.record_applied("st2", store.resolve_for_minion("st2")["digest"])

    def statuses():
        return {n: p["status"] for n, p in store.status("st2")["packages"].items()}

    # never looked up: no package is a kept orphan
    assert statuses() == {"oldtool": "consistent", "nginx": "consistent"}
    assert store.write_available("st2", {"oldtool": [], "nginx": ["1.22-1"]})
    assert statuses() == {"oldtool": "orphan-kept", "nginx": "consistent"}
    # a new pkg.list_pkgs return keeps the candidates looked up before
    store.write_inventory("st2", {"oldtool": "1.0", "nginx": "1.24-1"})
    assert statuses() == {"oldtool": "orphan-kept", "nginx": "consistent"}
    inventory = store.inventory("st2")
    assert inventory is not None
    assert inventory.available == {"oldtool": [], "nginx": ["1.22-1"]}
    with pytest.raises(PkgStateError, match="versions must be"):
        store.write_available("st2", {"nginx": 1})
    assert store.inventory("st2").available == inventory.available


def test_render_of_a_stored_revision(store) -> None:
    rev = store.create_state("render-me", ["nginx>=1.20"])
    assert packages_of(rev.entries) == {
        "nginx": {"policy": "installed", "op": ">=", "version": "1.20"}
    }


@pytest.mark.parametrize("name", ["raced", "minion:raced-minion"])
def test_twenty_concurrent_first_saves_become_twenty_revisions(
    database, fleet, name, monkeypatch
) -> None:
    """`pkgstate.set` of a state that does not exist yet, 20 times at once:
    every save ends as a revision of its own, numbered 1 to 20 by the
    database's row lock; none fails (none says "already exists")."""
    count = 20
    monkeypatch.setattr(
        runner, "__opts__", {"pkgstate": {"dsn": database.dsn}}, raising=False
    )
    monkeypatch.setattr(runner, "__context__", {}, raising=False)
    start = threading.Barrier(count)

    def save(n: int) -> dict[str, object]:
        start.wait(timeout=60)
        return runner.set_(name, f"pkg{n}", comment=f"save {n}")

    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        saved = list(pool.map(save, range(count)))
    assert [s.get("error") for s in saved] == [None] * count
    assert sorted(s["revision"] for s in saved) == list(range(1, count + 1))
    with PackageStateStore(database.dsn) as store:
        history = store.history(name)
    assert sorted(rev.comment for rev in history) == sorted(
        f"save {n}" for n in range(count)
    )


def test_a_huge_package_name_is_refused_and_nothing_is_stored(store, database) -> None:
    before = _count(database, "pkgstate_revision")
    with pytest.raises(PkgStateError, match="100000 characters"):
        store.save_revision("minion:huge", ["x" * 100_000])
    assert _count(database, "pkgstate_revision") == before
