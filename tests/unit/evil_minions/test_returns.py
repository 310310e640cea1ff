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
    """A transport to a master that answers the first request too late (it is
    busy) and every later one at once; records the jids in sending order."""

    ttype = "zeromq"

    def __init__(self) -> None:
        self.jids: list[str] = []

    async def send(self, load, timeout=60):
        import salt.exceptions

        self.jids.append(load["load"]["jid"])
        if len(self.jids) == 1:
            try:
                await asyncio.wait_for(asyncio.Event().wait(), timeout)
            except TimeoutError:
                # what Salt's ZeroMQ RequestClient raises
                raise salt.exceptions.SaltReqTimeoutError("Message timed out") from None
        return {}


def test_on_salts_channel_a_queued_return_waits_without_timing_out(tmp_path):
    """Two returns on one of Salt's AsyncReqChannel: the second waits behind
    the first's timed-out try (longer than its own timeout) and still goes
    out on its first try; the first's retry queues behind it."""
    import salt.channel.client
    import salt.config

    opts = dict(salt.config.minion_config(None), id="evil-0001", pki_dir=str(tmp_path))
    master = BusyMaster()
    policy = ReturnRetry(timer=1, timer_max=1, tries=2)

    async def scenario() -> ProcessStats:
        channel = salt.channel.client.AsyncReqChannel(opts, master, _Auth())
        stats = ProcessStats(0, 0, 1)
        loads = [dict(LOAD, jid=jid) for jid in ("first", "second")]
        sent = await asyncio.gather(
            *(
                deliver_return(
                    channel, load, policy=policy, stats=stats, rng=random.Random(1)
                )
                for load in loads
            )
        )
        assert sent == [True, True]
        return stats

    stats = asyncio.run(scenario())
    assert master.jids == ["first", "second", "first"]
    assert _counts(stats) == {
        "returns_sent": 2,
        "return_tries": 3,
        "return_retries": 1,
        "return_timeouts": 1,
        "returns_given_up": 0,
        "return_errors": 0,
    }
