"""
``SimulatedMinion``: one minion identity on Salt's own request channel.

Each simulated minion owns what makes it a distinct minion to the master: its
id, its RSA key (in its own ``pki_dir``), its ``AsyncAuth`` session and its
``AsyncReqChannel`` to the master's ret port. Everything it sends -- the
sign-in, start events, ``_pillar`` requests, job returns, beacon events --
goes through that channel, so Salt does the framing, encryption, signing and
retries exactly as for a real minion.

What it does not own is a publish subscription: publications are encrypted
with the master's one AES key, identical for every minion, so the worker
process subscribes once (see :mod:`evil_minions.fleet`) and hands every
decoded publication to :meth:`SimulatedMinion.handle_publication`, which
applies Salt's matchers to the minion's own grains and pillar.

On ZeroMQ every Salt ``RequestClient`` would create its own ``zmq.Context``
(an I/O thread and a reaper thread each); the minions of a process share one
context instead (:meth:`ProcessContext.adopt_transport`), which keeps a
1000-minion process at a handful of threads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import Any

from evil_minions.functions import (
    OWN_PILLAR,
    JobOutcome,
    PillarRequest,
    Runtime,
    execute,
)
from evil_minions.grains import os_profile_for, synthetic_grains
from evil_minions.jobs import JobTracker
from evil_minions.keys import load_private_key
from evil_minions.matching import TargetMatcher, match_view
from evil_minions.packages import PackageSet
from evil_minions.returns import ReturnRetry, deliver_return
from evil_minions.status import ProcessStats

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ProcessContext:
    """What the minions of one worker process share."""

    runtime: Runtime
    matcher: TargetMatcher
    stats: ProcessStats
    io_loop: Any
    master_host: str
    request_timeout: float
    request_tries: int
    package_count: int
    #: how returns are tried and given up (Salt's ``return_retry_*`` options)
    return_retry: ReturnRetry = dataclasses.field(
        default_factory=lambda: ReturnRetry.from_opts({})
    )
    #: shared ``zmq.asyncio.Context`` for the minions' request sockets (zeromq only)
    zmq_context: Any = None
    tasks: set[asyncio.Task[Any]] = dataclasses.field(default_factory=set)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a task that shutdown can find and cancel."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def adopt_transport(self, channel: Any) -> None:
        """Make a new channel's ZeroMQ transport use the shared context."""
        transport: Any = getattr(channel, "transport", None)
        if (
            self.zmq_context is not None
            and getattr(transport, "ttype", None) == "zeromq"
        ):
            # RequestClient creates its context lazily on first connect only
            # if none is set, so presetting it is enough.
            transport.context = self.zmq_context

    def release_transport(self, channel: Any) -> None:
        """Detach the shared context so closing one channel does not destroy it."""
        transport = getattr(channel, "transport", None)
        if (
            transport is not None
            and getattr(transport, "context", None) is self.zmq_context
        ):
            transport.context = None


class SimulatedMinion:
    """
    One simulated minion: identity, synthetic machine, jobs.

    Lifecycle: :meth:`start` (authenticate, fire start events),
    :meth:`fetch_startup_pillar`, then :meth:`handle_publication` for every
    publication of the process, :meth:`fire_beacon` on request, :meth:`close`.
    """

    __slots__ = (
        "_channel",
        "_ctx",
        "_pillar",
        "_tok",
        "authenticated",
        "connected",
        "grains",
        "jobs",
        "minion_id",
        "opts",
        "packages",
        "view",
    )  # fmt: skip

    def __init__(
        self, minion_id: str, opts: dict[str, Any], ctx: ProcessContext
    ) -> None:
        self.minion_id = minion_id
        self.opts = opts
        self._ctx = ctx
        self.grains = synthetic_grains(minion_id, master=ctx.master_host)
        self.view = match_view(minion_id, self.grains)
        self.packages = PackageSet(
            minion_id, os_profile_for(minion_id).package_style, ctx.package_count
        )
        self.jobs = JobTracker(ctx.runtime.timing.max_concurrent_jobs)
        self._channel: Any = None
        self._tok: bytes | None = None
        self._pillar: dict[str, Any] | None = None
        self.authenticated = False
        self.connected = False

    # -- services for the simulated functions ------------------------------------

    @property
    def pillar(self) -> Mapping[str, Any] | None:
        """The pillar the master compiled for this minion last, if fetched."""
        return self._pillar

    async def fetch_pillar(self, request: PillarRequest = OWN_PILLAR) -> dict[str, Any]:
        """
        Ask the master to compile this minion's pillar (a real ``_pillar`` request).

        The load is the one ``salt.pillar.AsyncRemotePillar`` sends; the reply
        is decrypted and its signature and nonce verified by Salt's channel.
        """
        load = {
            "id": self.minion_id,
            "grains": self.grains,
            "saltenv": request.saltenv or self.opts.get("saltenv"),
            "pillarenv": request.pillarenv or self.opts.get("pillarenv"),
            "pillar_override": dict(request.pillar_override or {}),
            "extra_minion_data": {},
            "ver": "2",
            "cmd": "_pillar",
        }
        import salt.exceptions

        stats = self._ctx.stats
        started = time.monotonic()
        try:
            # The tries of Salt's channel, one at a time, so that every
            # request the master receives is counted (retries included).
            for attempt in range(1, self._ctx.request_tries + 1):
                stats.pillar_requests += 1
                try:
                    pillar = await self._channel.crypted_transfer_decode_dictentry(
                        load,
                        dictkey="pillar",
                        timeout=self._ctx.request_timeout,
                        tries=1,
                    )
                    break
                except salt.exceptions.SaltReqTimeoutError:
                    if attempt == self._ctx.request_tries:
                        raise
        except salt.exceptions.SaltReqTimeoutError as exc:
            stats.pillar_errors += 1
            # The errors AsyncRemotePillar.compile_pillar raises, so that
            # pillar.items fails with the message a real minion returns.
            raise salt.exceptions.SaltClientError(
                f"Pillar timed out after {int(time.monotonic() - started)} seconds"
            ) from exc
        except Exception as exc:
            stats.pillar_errors += 1
            log.warning("%s: pillar request failed: %r", self.minion_id, exc)
            raise salt.exceptions.SaltClientError("Exception getting pillar.") from exc
        if not isinstance(pillar, dict):
            stats.pillar_errors += 1
            raise salt.exceptions.SaltClientError(
                f"master returned a {type(pillar).__name__} as pillar"
            )
        self._pillar = pillar
        self.view["pillar"] = pillar
        return pillar

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """
        Authenticate with the master and announce the start.

        Raises ``salt.exceptions.SaltClientError`` (or a timeout) if the master
        does not accept this minion; the caller retries.
        """
        import salt.channel.client

        stats = self._ctx.stats
        if self._channel is None:
            self._channel = salt.channel.client.AsyncReqChannel.factory(
                self.opts, io_loop=self._ctx.io_loop
            )
            self._ctx.adopt_transport(self._channel)
        auth = self._channel.auth
        if getattr(auth, "_private_key", ...) is None:
            # Salt would load (and expensively validate) the key on first
            # use, through a per-minion cache loader; hand it over instead.
            key = load_private_key(self.opts["pki_dir"])
            auth._private_key = key
        await auth.authenticate()
        self._tok = auth.gen_token(b"salt")
        if not self.authenticated:
            self.authenticated = True
            stats.authenticated += 1
        await self._fire_start_events()
        if not self.connected:
            self.connected = True
            stats.connected += 1

    async def fetch_startup_pillar(self) -> None:
        """
        Fetch the pillar as a starting minion does, so the master caches its
        grains (master-side grain targeting) and ``pillar.get`` has data.
        """
        try:
            await self.fetch_pillar()
        except Exception as exc:
            # A real minion starts without pillar too; pillar.* will retry.
            log.warning("%s: startup pillar failed: %s", self.minion_id, exc)

    async def close(self) -> None:
        """Close the request channel (the shared ZeroMQ context stays)."""
        channel, self._channel = self._channel, None
        if channel is None:
            return
        self._ctx.release_transport(channel)
        try:
            await asyncio.wait_for(channel.close_async(), 6)
        except Exception:
            log.debug("%s: closing channel failed", self.minion_id, exc_info=True)

    # -- publications and jobs ----------------------------------------------------

    def handle_publication(self, load: Mapping[str, Any]) -> bool:
        """Start a job if ``load`` targets this minion; return whether it did."""
        if not self.connected or not self._ctx.matcher.matches(load, self.view):
            return False
        self._ctx.stats.jobs_seen += 1
        self._ctx.spawn(self._run_job(load))
        return True

    async def _run_job(self, load: Mapping[str, Any]) -> None:
        ctx = self._ctx
        fun = str(load.get("fun"))
        jid = str(load["jid"])
        exempt = fun in ctx.runtime.timing.exempt_functions
        ctx.stats.jobs_waiting += 1
        async with self.jobs.slot(exempt=exempt):
            ctx.stats.peak_minion_jobs = max(ctx.stats.peak_minion_jobs, self.jobs.peak)
            ctx.stats.jobs_waiting -= 1
            ctx.stats.jobs_running += 1
            self.jobs.start(load)
            try:
                if load.get("start_event"):
                    await self._fire_job_start_event(load)
                latency = ctx.runtime.timing.latency(
                    fun, ctx.runtime.rng, ctx.runtime.slowdown
                )
                if latency > 0:
                    await asyncio.sleep(latency)
                outcome = await execute(self, ctx.runtime, load)
            finally:
                # A real minion drops the proc file before it sends the return.
                self.jobs.finish(jid)
                ctx.stats.jobs_running -= 1
        await self._send_return(load, outcome)

    async def _send_return(self, load: Mapping[str, Any], outcome: JobOutcome) -> None:
        ret: dict[str, Any] = {
            "cmd": "_return",
            "id": self.minion_id,
            "success": outcome.success,
            "return": outcome.ret,
            "retcode": outcome.retcode,
            "jid": load["jid"],
            "fun": load["fun"],
            "fun_args": load.get("arg", []),
        }
        for key in ("user", "master_id"):
            if key in load:
                ret[key] = load[key]
        if isinstance(load.get("metadata"), dict):
            ret["metadata"] = load["metadata"]
        if outcome.out:
            ret["out"] = outcome.out
        ctx = self._ctx
        await deliver_return(
            self._channel,
            ret,
            policy=ctx.return_retry,
            stats=ctx.stats,
            rng=ctx.runtime.rng,
        )

    # -- events ---------------------------------------------------------------------

    async def _fire_master(
        self,
        *,
        data: Any = None,
        tag: str | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> None:
        """Send a ``_minion_event`` request, the way ``Minion._fire_master`` builds it."""
        load: dict[str, Any] = {
            "id": self.minion_id,
            "cmd": "_minion_event",
            "pretag": None,
            "tok": self._tok,
        }
        if events:
            load["events"] = events
        else:
            load["data"] = data if data is not None else {}
            load["tag"] = tag
        try:
            await self._channel.send(
                load, timeout=self._ctx.request_timeout, tries=self._ctx.request_tries
            )
        except Exception:
            self._ctx.stats.event_errors += 1
            raise
        self._ctx.stats.events_sent += 1

    async def _fire_start_events(self) -> None:
        data = f"Minion {self.minion_id} started at {time.asctime()}"
        if self.opts.get("enable_legacy_startup_events", True):
            await self._fire_master(data=data, tag="minion_start")
        await self._fire_master(data=data, tag=f"salt/minion/{self.minion_id}/start")

    async def _fire_job_start_event(self, load: Mapping[str, Any]) -> None:
        data = {
            "id": self.minion_id, "jid": load["jid"], "fun": load.get("fun"),
            "tgt": load.get("tgt"), "tgt_type": load.get("tgt_type"), "user": load.get("user"),
        }  # fmt: skip
        try:
            await self._fire_master(
                data=data, tag=f"salt/job/{load['jid']}/start/{self.minion_id}"
            )
        except Exception as exc:
            log.warning("%s: job start event failed: %s", self.minion_id, exc)

    async def fire_beacon(
        self, *, change_packages: bool = True, packages: int = 3
    ) -> list[str]:
        """
        Fire ``salt/beacon/<id>/pkgset/changed``, after changing ``packages`` packages.

        The data is the ``pkgset`` beacon's: the package-manager cookie's path
        and line (``<md5> <unix time>``), which changes with the package set.
        Returns the names of the changed packages.
        """
        changed: list[str] = []
        if change_packages:
            changed = self.packages.change(self._ctx.runtime.rng, packages)
        cookie, value = self.packages.cookie()
        event = {
            "tag": f"salt/beacon/{self.minion_id}/pkgset/changed",
            "data": {"cookie": cookie, "value": value, "id": self.minion_id},
            "beacon_name": "pkgset",
        }
        await self._fire_master(events=[event])
        return changed
