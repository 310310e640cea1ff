"""
How a simulated minion sends a job's return: the tries, timeouts and give-up of a 3008 minion.

What a real 3008.3 minion does with one job return (``salt/minion.py``,
``salt/channel/client.py``, ``salt/transport/zeromq.py``):

- The job's process (or thread) does not talk to the master itself.
  ``Minion._return_pub`` removes the job's proc file (the job no longer counts
  in ``saltutil.running`` nor against ``process_count_max``), fires the load
  on the minion's own event bus (``_send_req_sync``) and waits for the answer
  ``max(timeout, return_retry_tries * return_retry_timer_max)`` seconds, the
  caller's ``timeout`` being that same product: 30 s with Salt's defaults
  (``return_retry_timer`` when ``return_retry_timer_max`` is 0). This clock
  starts when the return is queued, not when it is sent.
- The minion's main process picks the event up in ``Minion.handle_event``,
  one task per event, and sends the load with ``req_channel.send(load,
  timeout=_return_retry_timer(), tries=return_retry_tries)``. The timeout is
  drawn once per return, ``random.randint(return_retry_timer,
  return_retry_timer_max)`` (5..10 s by default), and every try uses it.
- ``AsyncReqChannel.send`` makes up to ``return_retry_tries`` (3) tries, on a
  timeout or any other error. Each try takes the channel's ``_req_lock``
  (a FIFO lock: one request at a time per minion) and the try's timeout only
  starts once it holds the lock and hands the request to the transport. So a
  return queued behind others has no timeout while it waits: it waits as long
  as the requests ahead of it take; and a retry queues again, behind every
  request already waiting.
- A try that times out is not withdrawn: ZeroMQ has sent it, and a master
  that was only slow still handles it, so the retry's copy reaches the master
  too and it stores the first and logs the second as a duplicate (both fire
  ``salt/job/<jid>/ret/<id>``). Duplicates can only be counted at the master.
- When every try failed with a timeout, the main process logs at error
  "Timeout encountered while sending ... request" and tells the job process,
  which logs at warning "The minion failed to return the job information for
  job <jid>. This is often due to the master being shut down or
  overloaded. ..." and ends. The job process logs the same and ends when its
  own wait elapses first, which is what happens to a return that waited in
  the queue; the main process goes on with the tries regardless, so such a
  return may still reach the master. Nothing retries it after the last try:
  a return whose every try failed is lost unless one of its timed-out tries
  reached the master.

:func:`deliver_return` does the same on a simulated minion's channel (Salt's
own ``AsyncReqChannel``, so the lock and the per-try timeout are Salt's) and
counts what happened in :class:`~evil_minions.status.ProcessStats`:

- ``returns_sent``: returns the master acknowledged;
- ``return_tries``: tries sent, first tries included;
- ``return_retries``: tries after the first;
- ``return_timeouts``: tries that timed out; each may still reach the master
  (a duplicate if another try of the same return does too);
- ``returns_given_up``: returns whose job logged Salt's "failed to return"
  warning: its wait elapsed or every try failed, whichever came first;
- ``return_errors``: returns whose every try failed. The minion sends
  them no more; a try that timed out may still have reached the master (a
  request waiting in the master's queue is handled after its sender gave
  up), so what is lost for good is counted at the master, not here.

A minion with ``return_priority_functions`` (a minion option of the
series, empty by default) sends the returns of those functions as urgent
requests (``send(..., urgent=True)``): on its channel they go before the
requests waiting that are not, at every try, as Salt's ``RequestLock`` has
them do; the request in flight is not interrupted.

The options are read from the minion opts under Salt's names, so their
defaults are ``salt.config.DEFAULT_MINION_OPTS``'.
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
        self,
        load: dict[str, Any],
        tries: int | None = ...,
        timeout: Any = ...,
        urgent: bool = ...,
    ) -> Any:
        """Send ``load``; raise (``SaltReqTimeoutError`` on a timeout) if it fails."""


#: the minion option of the series that sends some returns first; a Salt
#: without it (pristine 3008.3) has no such default
PRIORITY_OPTION = "return_priority_functions"


@dataclasses.dataclass(frozen=True)
class ReturnRetry:
    """``return_retry_timer`` / ``return_retry_timer_max`` /
    ``return_retry_tries``, and ``return_priority_functions``."""

    timer: int
    timer_max: int
    tries: int
    #: functions whose returns go before the others waiting on the channel
    priority_functions: frozenset[str] = frozenset()

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
        priority = opts.get(PRIORITY_OPTION, defaults.get(PRIORITY_OPTION)) or ()
        if priority and PRIORITY_OPTION not in defaults:
            raise ValueError(
                f"{PRIORITY_OPTION} needs a Salt that has it (the saltfleet "
                f"series'); {salt.__file__} does not"
            )
        return cls(
            timer=timer,
            timer_max=timer_max,
            tries=tries,
            priority_functions=frozenset(priority),
        )

    def urgent(self, load: Mapping[str, Any]) -> bool:
        """Whether the return ``load`` goes before the others
        (``Minion._urgent_request``): a job of several functions keeps its
        place."""
        fun = load.get("fun")
        return (
            load.get("cmd") == "_return"
            and isinstance(fun, str)
            and fun in self.priority_functions
        )

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
    # only when urgent: a pristine 3008.3 channel has no such keyword
    urgent = {"urgent": True} if policy.urgent(load) else {}
    for attempt in range(1, policy.tries + 1):
        stats.return_tries += 1
        stats.return_retries += attempt > 1
        try:
            await channel.send(load, tries=1, timeout=timeout, **urgent)
        except salt.exceptions.SaltReqTimeoutError as exc:
            failure: Exception = exc
            stats.return_timeouts += 1
        except Exception as exc:  # Salt's channel retries on any error too
            failure = exc
        else:
            give_up.cancel()
            stats.returns_sent += 1
            return True
    stats.return_errors += 1
    timed_out = isinstance(failure, salt.exceptions.SaltReqTimeoutError)
    log.error(
        "%s: %s while sending the return of job %s, %d tries of %d s: %s",
        load.get("id"),
        # Salt's main process's words after a timeout
        "Timeout encountered" if timed_out else "Error encountered",
        jid,
        policy.tries,
        timeout,
        failure,
    )
    # Salt's main process tells the waiting job after a timeout only; after
    # any other error the job waits out its own wait.
    if timed_out and not give_up.cancelled() and loop.time() < give_up.when():
        give_up.cancel()
        _gave_up(stats, load)
    return False


def _gave_up(stats: ProcessStats, load: Mapping[str, Any]) -> None:
    stats.returns_given_up += 1
    # Salt's own words (Minion._return_pub's timeout handler).
    log.warning(
        "%s: The minion failed to return the job information for job %s. "
        "This is often due to the master being shut down or overloaded.",
        load.get("id"),
        load.get("jid"),
    )
