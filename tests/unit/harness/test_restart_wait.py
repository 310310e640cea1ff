"""After ``restart master``: waiting for the minions says how far it is, and a
master that does not take a publication yet, or does not answer it in
time, is asked again."""

from __future__ import annotations

import salt.client
import salt.exceptions

from harness import restart


class _Client:
    """A LocalClient whose master first refuses, then gains a minion per call."""

    calls = 0

    def __init__(self, c_path: str) -> None:
        pass

    def cmd(self, tgt, fun, tgt_type, timeout):
        _Client.calls += 1
        if _Client.calls == 1:
            raise salt.exceptions.SaltPublishTimeoutError("not responding")
        if _Client.calls == 2:
            raise salt.exceptions.SaltReqTimeoutError("no answer in time")
        return {m: True for m in sorted(tgt)[:1]}

    def destroy(self) -> None:
        pass


def test_the_wait_retries_and_says_how_many_answered(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(salt.client, "LocalClient", _Client)
    monkeypatch.setattr(restart, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(restart.time, "sleep", lambda seconds: None)
    said: list[str] = []
    silent = restart.wait_for_minions(
        tmp_path / "master", ["a", "b", "c"], 60, said.append
    )
    assert silent == []
    counts = [line.split(" minions")[0].strip() for line in said]
    assert counts == ["0 of 3", "0 of 3", "0 of 3", "1 of 3", "2 of 3"]
