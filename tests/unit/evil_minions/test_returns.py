"""A simulated minion tries, retries and gives up a job return as a real 3008
minion does (return_retry_timer..return_retry_timer_max per try,
return_retry_tries tries, the job giving up after tries * timer_max), and
counts retries, duplicates, give-ups and losses; it used to wait 60 s per try
and count none of them."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from evil_minions.config import ConfigError, FleetConfig
from evil_minions.returns import ReturnRetry, deliver_return
from evil_minions.saltopts import base_opts
from evil_minions.status import RETURN_COUNTERS, ProcessStats

LOAD = {"cmd": "_return", "id": "evil-0001", "jid": "20260101120000000001"}


class FlakyChannel:
    """Times out the first ``timeouts`` tries, then acknowledges; records each try."""

    def __init__(self, timeouts: int = 0, *, error: Exception | None = None) -> None:
        self.timeouts = timeouts
        self.error = error
        self.tries: list[tuple[int | None, Any]] = []

    async def send(
        self, load: dict[str, Any], tries: int | None = None, timeout: Any = None
    ) -> Any:
        import salt.exceptions

        self.tries.append((tries, timeout))
        if self.error is not None:
            raise self.error
        if len(self.tries) <= self.timeouts:
            raise salt.exceptions.SaltReqTimeoutError("Message timed out")
        return {}


class StuckChannel:
    """A channel whose request waits (as behind a backlog) until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def send(
        self, load: dict[str, Any], tries: int | None = None, timeout: Any = None
    ) -> Any:
        await self.release.wait()
        return {}


def _deliver(channel, policy: ReturnRetry) -> tuple[bool, ProcessStats]:
    stats = ProcessStats(0, 0, 1)
    sent = asyncio.run(
        deliver_return(
            channel, dict(LOAD), policy=policy, stats=stats, rng=random.Random(1)
        )
    )
    return sent, stats


def _counts(stats: ProcessStats) -> dict[str, int]:
    return {name: getattr(stats, name) for name in RETURN_COUNTERS}


def test_salts_defaults_come_from_salt():
    import salt.config

    defaults = salt.config.DEFAULT_MINION_OPTS
    policy = ReturnRetry.from_opts({})
    assert (policy.timer, policy.timer_max, policy.tries) == (
        defaults["return_retry_timer"],
        defaults["return_retry_timer_max"],
        defaults["return_retry_tries"],
    )
    assert policy.job_wait == policy.tries * policy.timer_max


def test_a_timed_out_try_is_retried_with_the_same_timeout_and_counted():
    channel = FlakyChannel(timeouts=1)
    sent, stats = _deliver(channel, ReturnRetry(timer=5, timer_max=10, tries=3))
    assert sent
    assert _counts(stats) == {
        "returns_sent": 1,
        "return_tries": 2,
        "return_retries": 1,
        "return_timeouts": 1,
        "returns_given_up": 0,
        "return_errors": 0,
    }
    # one try per send, each with the return's one random timer in 5..10
    (first, timeout), second = channel.tries
    assert first == 1 and 5 <= timeout <= 10 and second == (1, timeout)


def test_a_return_is_not_tried_again_after_its_last_try(caplog):
    """Every try timed out: the job gives up at once (it does not wait out its
    30 s), with Salt's warning, and the return counts as an error."""
    channel = FlakyChannel(timeouts=99)
    with caplog.at_level("WARNING", logger="evil_minions.returns"):
        sent, stats = _deliver(channel, ReturnRetry(timer=5, timer_max=10, tries=3))
    assert not sent and len(channel.tries) == 3
    assert _counts(stats) == {
        "returns_sent": 0,
        "return_tries": 3,
        "return_retries": 2,
        "return_timeouts": 3,
        "returns_given_up": 1,
        "return_errors": 1,
    }
    assert "The minion failed to return the job information for job" in caplog.text
    assert "Timeout encountered while sending the return of job" in caplog.text


def test_a_send_error_is_retried_but_is_no_timeout():
    channel = FlakyChannel(error=OSError("socket not ready"))
    sent, stats = _deliver(channel, ReturnRetry(timer=1, timer_max=0, tries=2))
    assert not sent and channel.tries == [(1, 1), (1, 1)]
    assert stats.return_retries == 1 and stats.return_timeouts == 0
    # only a timeout is reported back to the job: it waits out its own wait
    assert stats.returns_given_up == 0


def _release_after_give_up(
    channel: StuckChannel, tries: int
) -> tuple[bool, ProcessStats]:
    """Deliver one return on ``channel`` (1 s per try) and release the
    channel once the job gave up waiting, as a backlog ahead of it clears."""

    async def scenario() -> tuple[bool, ProcessStats]:
        stats = ProcessStats(0, 0, 1)
        policy = ReturnRetry(timer=1, timer_max=1, tries=tries)
        delivery = asyncio.create_task(
            deliver_return(
                channel, dict(LOAD), policy=policy, stats=stats, rng=random.Random(1)
            )
        )
        while not stats.returns_given_up:
            await asyncio.sleep(0.05)
        assert not delivery.done()
        channel.release.set()
        return await delivery, stats

    return asyncio.run(scenario())


def test_the_job_gives_up_waiting_but_the_return_still_goes_out():
    sent, stats = _release_after_give_up(StuckChannel(), tries=1)
    assert sent and stats.returns_given_up == 1 and stats.returns_sent == 1


class StuckThenTimeout(StuckChannel):
    """A request that waits (behind a backlog), then times out when released."""

    async def send(
        self, load: dict[str, Any], tries: int | None = None, timeout: Any = None
    ) -> Any:
        import salt.exceptions

        await super().send(load, tries, timeout)
        raise salt.exceptions.SaltReqTimeoutError("Message timed out")


def test_a_queued_return_is_given_up_once_then_counted_an_error():
    """The job stops waiting while its return is still queued; its tries
    then all time out: one give-up, one error, nothing sent."""
    sent, stats = _release_after_give_up(StuckThenTimeout(), tries=2)
    assert not sent
    assert _counts(stats) == {
        "returns_sent": 0,
        "return_tries": 2,
        "return_retries": 1,
        "return_timeouts": 2,
        "returns_given_up": 1,
        "return_errors": 1,
    }


def test_an_acknowledged_return_is_not_given_up():
    sent, stats = _deliver(FlakyChannel(), ReturnRetry(timer=1, timer_max=1, tries=1))
    assert sent and stats.returns_given_up == 0 and stats.return_retries == 0


def test_the_fleet_passes_salts_option_names_to_its_minions(tmp_path):
    cfg = FleetConfig(return_retry_timer=2, return_retry_timer_max=4)
    opts = base_opts(cfg, str(tmp_path))
    assert (opts["return_retry_timer"], opts["return_retry_timer_max"]) == (2, 4)
    assert ReturnRetry.from_opts(opts).tries == ReturnRetry.from_opts({}).tries
    assert FleetConfig.from_json(cfg.to_json()) == cfg


def test_inconsistent_options_are_a_config_error():
    with pytest.raises(ConfigError, match="return_retry_timer_max 3 is below"):
        FleetConfig(return_retry_timer=5, return_retry_timer_max=3)


def test_priority_functions_reach_the_minions_opts(tmp_path):
    cfg = FleetConfig(return_priority_functions=("test.ping", "saltutil.find_job"))
    opts = base_opts(cfg, str(tmp_path))
    assert opts["return_priority_functions"] == ["test.ping", "saltutil.find_job"]
    policy = ReturnRetry.from_opts(opts)
    assert policy.urgent(dict(LOAD, fun="saltutil.find_job"))
    assert not policy.urgent(dict(LOAD, fun="state.apply"))
    assert not policy.urgent({"cmd": "_minion_event", "fun": "test.ping"})
    assert not policy.urgent(dict(LOAD, fun=["test.ping", "cmd.run"]))
    assert FleetConfig.from_json(cfg.to_json()) == cfg
    # by default none, as on Salt (a Salt without the option has no such key)
    assert not base_opts(FleetConfig(), str(tmp_path)).get("return_priority_functions")


def test_priority_functions_on_a_salt_without_them_are_a_config_error(monkeypatch):
    import salt.config

    defaults = dict(salt.config.DEFAULT_MINION_OPTS)
    defaults.pop("return_priority_functions", None)
    monkeypatch.setattr(salt.config, "DEFAULT_MINION_OPTS", defaults)
    with pytest.raises(ConfigError, match="return_priority_functions needs a Salt"):
        FleetConfig(return_priority_functions=("test.ping",))
    # without the option the fleet runs on such a Salt as before
    assert FleetConfig().return_retry().priority_functions == frozenset()


# -- on Salt's own request channel ---------------------------------------------------


class _Plain:
    """A session Crypticle that leaves loads as they are."""

    @staticmethod
    def dumps(load):
        return load


class _Auth:
    """An AsyncAuth that has signed in; loads go out unencrypted."""

    mpub = "minion_master.pub"
    authenticated = True
    session_crypticle = _Plain()

    def gen_token(self, _):
        return b"token"


class BusyMaster:
    """A transport to a master busy with the first request and answering every
    later one at once; records the jids in sending order. The first request
    is answered too late (it times out) or, with ``first_takes``, after
    that many seconds."""

    ttype = "zeromq"

    def __init__(self, first_takes: float | None = None) -> None:
        self.first_takes = first_takes
        self.jids: list[str] = []

    async def send(self, load, timeout=60):
        import salt.exceptions

        self.jids.append(load["load"]["jid"])
        if len(self.jids) == 1 and self.first_takes is not None:
            await asyncio.sleep(self.first_takes)
        elif len(self.jids) == 1:
            try:
                await asyncio.wait_for(asyncio.Event().wait(), timeout)
            except TimeoutError:
                # what Salt's ZeroMQ RequestClient raises
                raise salt.exceptions.SaltReqTimeoutError("Message timed out") from None
        return {}


def _on_salts_channel(
    tmp_path, master: BusyMaster, policy: ReturnRetry, loads: list[dict[str, Any]]
) -> tuple[list[bool], ProcessStats]:
    """Deliver ``loads`` at once on one of Salt's AsyncReqChannel to ``master``."""
    import salt.channel.client
    import salt.config

    opts = dict(salt.config.minion_config(None), id="evil-0001", pki_dir=str(tmp_path))

    async def scenario() -> tuple[list[bool], ProcessStats]:
        channel = salt.channel.client.AsyncReqChannel(opts, master, _Auth())
        stats = ProcessStats(0, 0, 1)
        sent = await asyncio.gather(
            *(
                deliver_return(
                    channel, load, policy=policy, stats=stats, rng=random.Random(1)
                )
                for load in loads
            )
        )
        return list(sent), stats

    return asyncio.run(scenario())


def test_on_salts_channel_a_queued_return_waits_without_timing_out(tmp_path):
    """Two returns on one of Salt's AsyncReqChannel: the second waits behind
    the first's timed-out try (longer than its own timeout) and still goes
    out on its first try; the first's retry queues behind it."""
    master = BusyMaster()
    policy = ReturnRetry(timer=1, timer_max=1, tries=2)
    loads = [dict(LOAD, jid=jid) for jid in ("first", "second")]
    sent, stats = _on_salts_channel(tmp_path, master, policy, loads)
    assert sent == [True, True]
    assert master.jids == ["first", "second", "first"]
    assert _counts(stats) == {
        "returns_sent": 2,
        "return_tries": 3,
        "return_retries": 1,
        "return_timeouts": 1,
        "returns_given_up": 0,
        "return_errors": 0,
    }


@pytest.mark.parametrize(
    "priority,order",
    [
        (["test.ping"], ["job-1", "ping", "job-2", "job-3"]),
        ([], ["job-1", "job-2", "job-3", "ping"]),
    ],
    ids=["test.ping first", "in order"],
)
def test_on_salts_channel_a_priority_return_goes_before_queued_ones(
    tmp_path, priority, order
):
    """A ping's return queued behind job returns on Salt's AsyncReqChannel
    goes out right after the return in flight when test.ping is in
    return_priority_functions, and last without."""
    master = BusyMaster(first_takes=0.05)
    policy = ReturnRetry.from_opts({"return_priority_functions": priority})
    loads = [
        dict(LOAD, jid="job-1", fun="state.apply"),
        dict(LOAD, jid="job-2", fun="state.apply"),
        dict(LOAD, jid="job-3", fun="cmd.run"),
        dict(LOAD, jid="ping", fun="test.ping"),
    ]
    sent, _ = _on_salts_channel(tmp_path, master, policy, loads)
    assert sent == [True] * 4
    assert master.jids == order
