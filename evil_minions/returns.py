"""
How a simulated minion sends a job's return: the tries, timeouts and give-up of a 3008 minion.

A real 3008 minion's job process does not talk to the master itself. It hands
the return to the minion's main process (an event on the minion's own bus)
and waits ``return_retry_tries * return_retry_timer_max`` seconds for the
answer (``Minion._return_pub``); after that it logs "The minion failed to
return the job information for job ..." and ends. The main process sends
the return through its one ``AsyncReqChannel`` with a timeout drawn once per
return, ``random.randint(return_retry_timer, return_retry_timer_max)``, up to
``return_retry_tries`` tries (``Minion.handle_event``). That channel sends one
request at a time (its ``_req_lock``): a return waiting for the lock has no
timeout of its own, a try's timeout starts once it holds the lock, and a
retry queues behind every request already waiting. The job process giving up
does not stop the main process: the return may still reach the master.

:func:`deliver_return` does the same on a simulated minion's channel (Salt's
own ``AsyncReqChannel``, so the lock and the per-try timeout are Salt's) and
counts what happened in :class:`~evil_minions.status.ProcessStats`:

- ``returns_sent``: returns the master acknowledged;
- ``return_retries``: tries after the first;
- ``return_duplicates``: retries after a try that timed out; that try's
  request had gone out, so the master receives the return twice;
- ``returns_given_up``: returns whose job stopped waiting for the answer;
- ``return_errors``: returns whose every try failed. The minion sends
  them no more; a try that timed out may still have reached the master (a
  request waiting in the master's queue is handled after its sender gave
  up), so what is lost for good is counted at the master, not here.

The three options are read from the minion opts under Salt's names, so
their defaults are ``salt.config.DEFAULT_MINION_OPTS``' (5, 10 and 3).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Mapping
from typing import Any, Protocol

from evil_minions.status import ProcessStats

log = logging.getLogger(__name__)


class ReturnChannel(Protocol):
    """The part of Salt's ``AsyncReqChannel`` that sends returns."""

    async def send(
        self, load: dict[str, Any], tries: int | None = ..., timeout: Any = ...
    ) -> Any:
        """Send ``load``; raise (``SaltReqTimeoutError`` on a timeout) if it fails."""


@dataclasses.dataclass(frozen=True)
class ReturnRetry:
    """``return_retry_timer`` / ``return_retry_timer_max`` / ``return_retry_tries``."""

    timer: int
    timer_max: int
    tries: int

    def __post_init__(self) -> None:
        if self.timer < 1 or self.tries < 1 or self.timer_max < 0:
            raise ValueError(
                f"invalid return retry options timer={self.timer} "
                f"timer_max={self.timer_max} tries={self.tries}: need "
                "return_retry_timer >= 1, return_retry_timer_max >= 0 "
                "(0: no randomisation) and return_retry_tries >= 1"
            )
        if self.timer_max and self.timer_max < self.timer:
            raise ValueError(
                f"return_retry_timer_max {self.timer_max} is below "
                f"return_retry_timer {self.timer}"
            )

    @classmethod
    def from_opts(cls, opts: Mapping[str, Any]) -> ReturnRetry:
        """The policy of minion ``opts``, Salt's defaults where they have none."""
        import salt.config

        defaults = salt.config.DEFAULT_MINION_OPTS
        names = ("return_retry_timer", "return_retry_timer_max", "return_retry_tries")
        timer, timer_max, tries = (int(opts.get(n, defaults[n]) or 0) for n in names)
        return cls(timer=timer, timer_max=timer_max, tries=tries)

    def try_timeout(self, rng: random.Random) -> int:
        """The timeout of every try of one return (``Minion._return_retry_timer``)."""
        if self.timer_max:
            return rng.randint(self.timer, self.timer_max)
        return self.timer

    @property
    def job_wait(self) -> int:
        """How long a job waits for its return to be acknowledged before giving up."""
        return self.tries * (self.timer_max or self.timer)


async def deliver_return(
    channel: ReturnChannel,
    load: dict[str, Any],
    *,
    policy: ReturnRetry,
    stats: ProcessStats,
    rng: random.Random,
) -> bool:
    """
    Send one ``_return`` as a 3008 minion does; return whether the master acknowledged it.

    Never raises for a failed send: the outcome is in ``stats`` and the log.

    .. code-block:: python

        policy = ReturnRetry.from_opts(opts)  # Salt's 5-10 s, 3 tries by default
        await deliver_return(channel, load, policy=policy, stats=stats, rng=rng)
    """
    import salt.exceptions

    jid = load.get("jid")
    loop = asyncio.get_running_loop()
    # The job's own wait runs beside the tries, as the job process beside
    # the minion's main process; it changes nothing but what is counted.
    give_up = loop.call_later(policy.job_wait, _gave_up, stats, load)
    timeout = policy.try_timeout(rng)
    try:
        for attempt in range(1, policy.tries + 1):
            try:
                await channel.send(load, tries=1, timeout=timeout)
            except salt.exceptions.SaltReqTimeoutError as exc:
                failure: Exception = exc
                timed_out = True
            except Exception as exc:  # Salt's channel retries on any error too
                failure, timed_out = exc, False
            else:
                stats.returns_sent += 1
                return True
            if attempt < policy.tries:
                stats.return_retries += 1
                stats.return_duplicates += int(timed_out)
        stats.return_errors += 1
        log.warning(
            "%s: return of job %s not acknowledged after %d tries of %d s: %s",
            load.get("id"),
            jid,
            policy.tries,
            timeout,
            failure,
        )
        return False
    finally:
        give_up.cancel()


def _gave_up(stats: ProcessStats, load: Mapping[str, Any]) -> None:
    stats.returns_given_up += 1
    # Salt's own words (Minion._return_pub's timeout handler).
    log.warning(
        "%s: The minion failed to return the job information for job %s.",
        load.get("id"),
        load.get("jid"),
    )
