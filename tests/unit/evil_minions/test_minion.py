"""SimulatedMinion end to end without a master: a targeted publication becomes
one ``_return`` request in the real minion's shape; others are ignored; events
and pillar requests carry the loads Salt's minion sends."""

from __future__ import annotations

import asyncio

import pytest

from evil_minions.config import LatencySpec
from evil_minions.grains import synthetic_grains
from evil_minions.matching import TargetMatcher
from evil_minions.minion import ProcessContext, SimulatedMinion
from evil_minions.status import ProcessStats

from .fakes import RecordingChannel, publication, runtime


@pytest.fixture(scope="module")
def matcher():
    import salt.config

    return TargetMatcher(salt.config.minion_config(None))


def _minion(matcher, minion_id="evil-0001", **timing):
    ctx = ProcessContext(
        runtime=runtime(**timing), matcher=matcher, stats=ProcessStats(0, 0, 1), io_loop=None,
        master_host="127.0.0.1", request_timeout=5, request_tries=1, package_count=40,
    )  # fmt: skip
    minion = SimulatedMinion(
        minion_id, {"id": minion_id, "enable_legacy_startup_events": True}, ctx
    )
    channel = RecordingChannel()
    minion._channel = channel
    minion._tok = b"token"
    minion.authenticated = minion.connected = True
    return minion, channel, ctx


async def _settle(ctx):
    while ctx.tasks:
        await asyncio.gather(*list(ctx.tasks))


def test_targeted_job_returns_in_salts_shape(matcher):
    async def scenario():
        minion, channel, ctx = _minion(matcher)
        assert minion.handle_publication(publication("test.ping", tgt="evil-*"))
        await _settle(ctx)
        return channel.sent, ctx.stats

    sent, stats = asyncio.run(scenario())
    assert sent == [
        {
            "cmd": "_return", "id": "evil-0001", "success": True, "return": True, "retcode": 0,
            "jid": "20260101120000000001", "fun": "test.ping", "fun_args": [], "user": "root",
        }
    ]  # fmt: skip
    assert stats.jobs_seen == 1 and stats.returns_sent == 1


def test_untargeted_job_is_ignored(matcher):
    async def scenario():
        minion, channel, ctx = _minion(matcher)
        other_family = (
            "Debian"
            if synthetic_grains("evil-0001")["os_family"] != "Debian"
            else "Suse"
        )
        assert not minion.handle_publication(publication("test.ping", tgt="other-*"))
        assert not minion.handle_publication(
            publication("test.ping", tgt=f"os_family:{other_family}", tgt_type="grain")
        )
        await _settle(ctx)
        return channel.sent

    assert asyncio.run(scenario()) == []


def test_state_return_carries_the_highstate_outputter(matcher):
    async def scenario():
        minion, channel, ctx = _minion(matcher)
        minion.handle_publication(publication("state.apply"))
        await _settle(ctx)
        return channel.sent[0]

    ret = asyncio.run(scenario())
    assert ret["out"] == "highstate" and ret["retcode"] == 0


def test_concurrency_limit_queues_jobs_and_running_tells_the_truth(matcher):
    async def scenario():
        minion, channel, ctx = _minion(matcher, max_concurrent_jobs=1)
        minion.handle_publication(publication("test.sleep", [0.3], jid="1"))
        minion.handle_publication(publication("test.sleep", [0.3], jid="2"))
        await asyncio.sleep(0.1)
        minion.handle_publication(publication("saltutil.running", jid="3"))
        await asyncio.sleep(0.05)
        waiting = ctx.stats.jobs_waiting
        await _settle(ctx)
        return channel.sent, waiting

    sent, waiting = asyncio.run(scenario())
    assert waiting == 1
    by_jid = {r["jid"]: r for r in sent}
    # saltutil.running is exempt from the limit: it answers while job 2 waits,
    # and lists itself and job 1 only.
    assert sorted(j["jid"] for j in by_jid["3"]["return"]) == ["1", "3"]
    assert [r["jid"] for r in sent] == ["3", "1", "2"]


def test_start_events_are_legacy_and_namespaced(matcher):
    async def scenario():
        minion, channel, _ = _minion(matcher)
        await minion._fire_start_events()
        return channel.sent

    sent = asyncio.run(scenario())
    assert [load["tag"] for load in sent] == [
        "minion_start",
        "salt/minion/evil-0001/start",
    ]
    assert all(
        load["cmd"] == "_minion_event" and load["tok"] == b"token" for load in sent
    )
    assert sent[1]["data"].startswith("Minion evil-0001 started at ")


def test_beacon_changes_packages_and_fires_pkgset_event(matcher):
    async def scenario():
        minion, channel, _ = _minion(matcher)
        before = minion.packages.list_pkgs()
        changed = await minion.fire_beacon(packages=2)
        await minion.fire_beacon(change_packages=False)
        return channel.sent, before, minion.packages.list_pkgs(), changed

    sent, before, after, changed = asyncio.run(scenario())
    [event] = sent[0]["events"]
    assert event["tag"] == "salt/beacon/evil-0001/pkgset/changed"
    assert event["beacon_name"] == "pkgset"
    # the pkgset beacon's data: the plugin cookie's path and "<md5> <unix time>"
    assert event["data"]["id"] == "evil-0001"
    assert event["data"]["cookie"] in (
        "/var/cache/salt/minion/rpmdb.cookie",
        "/var/cache/salt/minion/dpkg.cookie",
    )
    checksum, stamp = event["data"]["value"].split(" ")
    assert len(checksum) == 32 and int(stamp) > 0
    # no package change, same cookie line
    assert sent[1]["events"][0]["data"] == event["data"]
    assert len(changed) == 2 and all(before[p] != after[p] for p in changed)


def test_pillar_request_is_a_real_pillar_load(matcher):
    async def scenario():
        minion, channel, _ = _minion(matcher)
        pillar = await minion.fetch_pillar()
        return channel.pillar_loads[0], pillar, minion

    load, pillar, minion = asyncio.run(scenario())
    assert load["cmd"] == "_pillar" and load["ver"] == "2" and load["id"] == "evil-0001"
    assert load["grains"]["machine_id"] == minion.grains["machine_id"]
    assert pillar == {"role": "db"}
    # the fetched pillar is what pillar targeting matches against
    assert minion.view["pillar"] == {"role": "db"}


def test_failed_return_is_counted_not_raised(matcher):
    class FailingChannel(RecordingChannel):
        async def send(self, load, timeout=None, tries=None):
            raise TimeoutError("master gone")

    async def scenario():
        minion, _, ctx = _minion(matcher)
        minion._channel = FailingChannel()
        minion.handle_publication(publication("test.ping"))
        await _settle(ctx)
        return ctx.stats

    stats = asyncio.run(scenario())
    assert stats.return_errors == 1 and stats.returns_sent == 0 and stats.errors == 1


def test_latency_delays_the_return(matcher):
    async def scenario():
        minion, _, ctx = _minion(
            matcher, default_latency=LatencySpec(0.1, 0.1), slowdown=2.0
        )
        loop = asyncio.get_running_loop()
        start = loop.time()
        minion.handle_publication(publication("test.ping"))
        await _settle(ctx)
        return loop.time() - start

    assert asyncio.run(scenario()) >= 0.2


def test_pillar_timeout_is_the_real_minions_error(matcher):
    import salt.exceptions

    class SlowMaster(RecordingChannel):
        async def crypted_transfer_decode_dictentry(
            self, load, dictkey=None, timeout=None, tries=None
        ):
            raise salt.exceptions.SaltReqTimeoutError("Message timed out")

    async def scenario():
        minion, _, ctx = _minion(matcher)
        slow = SlowMaster()
        minion._channel = slow
        minion.handle_publication(publication("pillar.items"))
        await _settle(ctx)
        return slow.sent[0], ctx.stats

    ret, stats = asyncio.run(scenario())
    assert (
        ret["return"]
        == "ERROR executing 'pillar.items': Pillar timed out after 0 seconds"
    )
    assert ret["retcode"] == 1 and ret["success"] is False
    assert stats.pillar_errors == 1
