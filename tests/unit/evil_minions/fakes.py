"""Hand-written fakes for evil_minions unit tests: a minion without a master,
a request channel that records what would go over the wire, a LocalClient."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any

from evil_minions.config import LatencySpec, TimingModel
from evil_minions.functions import OWN_PILLAR, PillarRequest, Runtime
from evil_minions.grains import os_profile_for, synthetic_grains
from evil_minions.jobs import JobTracker
from evil_minions.packages import PackageSet


class FakeMinion:
    """Implements evil_minions.functions.MinionServices without any network."""

    def __init__(
        self, minion_id: str = "evil-0001", pillar: Mapping[str, Any] | None = None
    ) -> None:
        self.minion_id = minion_id
        self.grains = synthetic_grains(minion_id)
        self.packages = PackageSet(
            minion_id, os_profile_for(minion_id).package_style, 50
        )
        self.jobs = JobTracker()
        self.master_pillar = dict(pillar or {"role": "web", "nested": {"key": "value"}})
        self.pillar: Mapping[str, Any] | None = None
        self.pillar_fetches: list[dict[str, Any]] = []

    async def fetch_pillar(self, request: PillarRequest = OWN_PILLAR) -> dict[str, Any]:
        self.pillar_fetches.append(dataclasses.asdict(request))
        self.pillar = dict(self.master_pillar)
        return dict(self.master_pillar)


def runtime(**timing: Any) -> Runtime:
    """A runtime with no latency, 0.01 s state runs and a fixed seed."""
    timing.setdefault("state_duration", LatencySpec(0.01, 0.01))
    return Runtime(timing=TimingModel(**timing), rng=random.Random(7), state_count=4)


def publication(
    fun: str,
    arg: list[Any] | None = None,
    *,
    jid: str = "20260101120000000001",
    tgt: Any = "*",
    tgt_type: str = "glob",
) -> dict[str, Any]:
    """A decoded publication as the master sends it."""
    return {
        "fun": fun,
        "arg": arg or [],
        "tgt": tgt,
        "tgt_type": tgt_type,
        "jid": jid,
        "ret": "",
        "user": "root",
    }


class RecordingChannel:
    """Stands in for AsyncReqChannel: records loads, answers pillar requests."""

    def __init__(self, pillar: Mapping[str, Any] | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.pillar = dict(pillar or {"role": "db"})
        self.pillar_loads: list[dict[str, Any]] = []

    async def send(
        self,
        load: dict[str, Any],
        timeout: float | None = None,
        tries: int | None = None,
    ) -> dict[str, Any]:
        self.sent.append(load)
        return {}

    async def crypted_transfer_decode_dictentry(
        self,
        load: dict[str, Any],
        dictkey: str | None = None,
        timeout: float | None = None,
        tries: int | None = None,
    ) -> dict[str, Any]:
        assert dictkey == "pillar"
        self.pillar_loads.append(load)
        return dict(self.pillar)


class FakeLocalClient:
    """The part of salt.client.LocalClient that replay recording uses."""

    def __init__(self, returns: Mapping[str, Any], minion_id: str = "real-1") -> None:
        self.returns = returns
        self.minion_id = minion_id
        self.calls: list[tuple[str, list[Any], Any]] = []

    def cmd(
        self,
        tgt: str,
        fun: str,
        arg: Any = (),
        timeout: Any = None,
        tgt_type: str = "glob",
        ret: str = "",
        jid: str = "",
        full_return: bool = False,
        kwarg: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        self.calls.append((fun, list(arg), kwarg))
        if fun not in self.returns or tgt != self.minion_id:
            return {}
        return {tgt: {"ret": self.returns[fun], "retcode": 0, "jid": "1"}}
