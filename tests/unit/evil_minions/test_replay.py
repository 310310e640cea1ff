"""Replay files: recorded returns of a real minion, replayed with the simulated
minion's own id substituted; the recorder drives Salt's LocalClient."""

from __future__ import annotations

import json

import pytest

from evil_minions.replay import (
    FORMAT,
    ReplayCall,
    ReplayEntry,
    ReplayError,
    ReplayStore,
    record_from_client,
    record_from_returns,
    split_publication_args,
    substitute_id,
)

from .fakes import FakeLocalClient


def test_substitute_id_in_strings_keys_and_nesting():
    value = {"real-1": ["real-1.example.com", 3, {"host": "real-1"}], "other": None}
    assert substitute_id(value, "real-1", "evil-0001") == {
        "evil-0001": ["evil-0001.example.com", 3, {"host": "evil-0001"}],
        "other": None,
    }


def test_split_publication_args():
    args, kwargs = split_publication_args(
        ["a", 2, {"x": 1, "__kwarg__": True, "__pub_jid": "j"}, {"plain": "dict"}]
    )
    assert args == ["a", 2, {"plain": "dict"}]
    assert kwargs == {"x": 1}


def test_lookup_prefers_exact_arguments_then_falls_back_to_the_function():
    store = ReplayStore(
        "real-1",
        [
            ReplayEntry("cmd.run", ["uptime"], {}, "up 1 day"),
            ReplayEntry("cmd.run", ["uname"], {}, "Linux"),
        ],
    )
    assert store.lookup("cmd.run", ["uname"], {}).ret == "Linux"
    assert store.lookup("cmd.run", ["whoami"], {}).ret == "up 1 day"
    assert store.lookup("pkg.version", [], {}) is None
    assert "cmd.run" in store and store.functions() == ["cmd.run"]


def test_save_and_load_round_trip(tmp_path):
    path = tmp_path / "replay.json"
    record_from_returns(
        "real-1",
        {
            "network.get_hostname": "real-1",
            ReplayCall("cmd.run", ("id",), {"runas": "root"}): "uid=0",
        },
        path,
    )
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["minion_id"] == "real-1"
    store = ReplayStore.load(path)
    entry = store.lookup("cmd.run", ["id"], {"runas": "root"})
    assert entry is not None and entry.ret == "uid=0"
    assert (
        store.replay(store.lookup("network.get_hostname", [], {}), "evil-0005")
        == "evil-0005"
    )


def test_record_from_client(tmp_path):
    client = FakeLocalClient(
        {"network.interfaces": {"eth0": {"up": True}}, "test.version": "3008.3"}
    )
    store = record_from_client(
        client,
        "real-1",
        ["test.version", ReplayCall("network.interfaces", kwargs={"x": 1})],
        tmp_path / "r.json",
    )
    assert store.salt_version == "3008.3"
    assert client.calls == [
        ("test.version", [], None),
        ("network.interfaces", [], {"x": 1}),
    ]
    assert ReplayStore.load(tmp_path / "r.json").lookup(
        "network.interfaces", [], {"x": 1}
    ).ret == {"eth0": {"up": True}}


def test_record_from_client_names_a_call_that_got_no_answer(tmp_path):
    client = FakeLocalClient({})
    with pytest.raises(ReplayError, match=r"real-1 did not return pkg\.info"):
        record_from_client(client, "real-1", ["pkg.info"], tmp_path / "r.json")


@pytest.mark.parametrize("content", ["not json", "{}", json.dumps({"format": FORMAT})])
def test_bad_files_raise_replay_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReplayError):
        ReplayStore.load(path)


def test_missing_file_raises_replay_error(tmp_path):
    with pytest.raises(ReplayError, match="cannot read replay file"):
        ReplayStore.load(tmp_path / "nope.json")
