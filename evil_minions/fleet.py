"""
``FleetWorker``: one worker process running many simulated minions on one event loop.

The supervisor (:mod:`evil_minions.supervisor`) starts one worker per
``--processes`` and gives each a slice of the minion ids. A worker:

1. subscribes once to the master's publisher with Salt's ``AsyncPubChannel``
   (authenticated as its first minion), because every publication is
   encrypted with the master's shared AES key and one subscription sees them
   all;
2. starts its minions at the configured ramp-up rate, at most
   ``auth_concurrency`` sign-ins in flight, retrying failed ones with backoff;
3. hands every publication to every started minion, which matches it with
   Salt's matchers and runs the job if it is targeted;
4. serves control requests on ``control-<k>.sock`` and writes its counters to
   ``status-<k>.json`` every ``status_interval`` seconds;
5. on SIGTERM or SIGINT (or when the supervisor disappears) cancels the jobs,
   closes every channel and exits; SIGUSR1 writes the status file at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import random
import resource
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from evil_minions.config import FleetConfig
from evil_minions.control import ControlServer, socket_path
from evil_minions.functions import Runtime
from evil_minions.keys import RUN_PKI_DIR
from evil_minions.matching import TargetMatcher
from evil_minions.minion import ProcessContext, SimulatedMinion
from evil_minions.replay import ReplayStore
from evil_minions.returns import ReturnRetry
from evil_minions.saltopts import base_opts, minion_opts
from evil_minions.status import (
    ProcessStats,
    current_rss_kb,
    process_status_path,
    write_json_atomic,
)

log = logging.getLogger(__name__)

FLEET_FILE: Final = "fleet.json"
#: Publications remembered for de-duplication, as ``minion_jid_queue_hwm``.
_JID_MEMORY: Final = 100
#: Minions matched per event loop turn, so returns keep flowing while a big
#: publication is dispatched.
_DISPATCH_BATCH: Final = 200
_START_TIMEOUT: Final = 300.0
_MAX_BACKOFF: Final = 60.0
_CLOSE_TIMEOUT: Final = 15.0
#: Sockets and file descriptors beyond one per minion (publisher, sign-ins,
#: control socket, logs).
_SPARE_SOCKETS: Final = 256
#: File descriptors a minion needs: its request socket's TCP connection and
#: the ZeroMQ mailbox of that socket, plus one transient sign-in channel.
_FDS_PER_MINION: Final = 3


def write_fleet_file(
    run_dir: str, cfg: FleetConfig, slices: list[list[str]], started_at: float
) -> Path:
    """The supervisor's hand-over to its workers: config and id slices."""
    path = Path(run_dir) / FLEET_FILE
    write_json_atomic(
        path,
        {
            "config": json.loads(cfg.to_json()),
            "slices": slices,
            "started_at": started_at,
        },
    )
    return path


def read_fleet_file(run_dir: str) -> tuple[FleetConfig, list[list[str]], float]:
    """Inverse of :func:`write_fleet_file`."""
    with open(Path(run_dir) / FLEET_FILE, encoding="utf-8") as handle:
        data = json.load(handle)
    return (
        FleetConfig.from_json(json.dumps(data["config"])),
        data["slices"],
        float(data["started_at"]),
    )


class FleetWorker:
    """The minions of one worker process and the loop they share."""

    def __init__(
        self, cfg: FleetConfig, index: int, minion_ids: list[str], run_dir: str
    ) -> None:
        self.cfg = cfg
        self.index = index
        self.ids = minion_ids
        self.run_dir = run_dir
        #: the run's own pki dirs (evil_minions.keys.run_pki_dirs)
        self._pki_root = str(Path(run_dir) / RUN_PKI_DIR)
        self.stats = ProcessStats(index=index, pid=os.getpid(), minions=len(minion_ids))
        self._minions: dict[str, SimulatedMinion] = {}
        self._started: list[SimulatedMinion] = []
        self._recent_jids: collections.OrderedDict[tuple[str, str, Any], None] = (
            collections.OrderedDict()
        )
        self._stop = asyncio.Event()
        self._pub: Any = None
        # Startup pillars are throttled separately from sign-ins: they cost
        # the master far more and must not hold up the next sign-ins.
        self._pillar_slots = asyncio.Semaphore(cfg.auth_concurrency)
        self._ctx: ProcessContext | None = None
        self._base_opts: dict[str, Any] = {}
        self._parent = os.getppid()
        self._rng = random.Random(cfg.seed if cfg.seed is None else cfg.seed + index)

    # -- entry point -------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        asyncio.run(self._main())
        return 0

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stop.set)
        loop.add_signal_handler(signal.SIGUSR1, self._write_status)
        self._ctx = self._build_context()
        self.stats.baseline_rss_kb = current_rss_kb()
        control = ControlServer(
            socket_path(self.run_dir, self.index), self._handle_control
        )
        await control.start()
        status_task = asyncio.create_task(self._status_loop())
        ramp_task = asyncio.create_task(self._run())
        try:
            await self._stop.wait()
        finally:
            self.stats.state = "stopping"
            self._write_status()
            ramp_task.cancel()
            await control.close()
            await self._shutdown()
            status_task.cancel()
            self.stats.state = "stopped"
            self._write_status()

    def _build_context(self) -> ProcessContext:
        import tornado.ioloop

        cfg = self.cfg
        self._base_opts = base_opts(cfg, self.run_dir)
        replay = ReplayStore.load(cfg.replay_file) if cfg.replay_file else None
        runtime = Runtime(
            timing=cfg.timing,
            rng=self._rng,
            state_count=cfg.state_count,
            state_pillar=cfg.state_pillar,
            replay=replay,
            replay_first=cfg.replay_first,
        )
        zmq_context = None
        if cfg.transport == "zeromq":
            import zmq.asyncio

            zmq_context = zmq.asyncio.Context()
            # libzmq allows 1023 sockets per context by default; every
            # minion's request socket lives in this one.
            zmq_context.set(zmq.MAX_SOCKETS, len(self.ids) + _SPARE_SOCKETS)
        return ProcessContext(
            runtime=runtime,
            matcher=TargetMatcher(self._base_opts),
            stats=self.stats,
            io_loop=tornado.ioloop.IOLoop.current(),
            master_host=cfg.master_host,
            request_timeout=cfg.request_timeout,
            request_tries=cfg.request_tries,
            package_count=cfg.package_count,
            return_retry=ReturnRetry.from_opts(self._base_opts),
            zmq_context=zmq_context,
        )

    # -- start-up --------------------------------------------------------------------

    async def _run(self) -> None:
        await self._connect_publisher()
        await self._ramp_up()

    async def _connect_publisher(self) -> None:
        """Subscribe to the master's publisher, retrying until it answers."""
        import salt.channel.client

        assert self._ctx is not None
        opts = minion_opts(self._base_opts, self._pki_root, self.ids[0])
        backoff = 1.0
        while not self._stop.is_set():
            channel = salt.channel.client.AsyncPubChannel.factory(
                opts, io_loop=self._ctx.io_loop
            )
            # The channel announces "__master_connected" on the local minion
            # event bus of a real minion; there is no such bus here.
            if channel.event is not None:
                channel.event.destroy()
                channel.event = None
            try:
                await channel.connect()
            except Exception as exc:
                # The subscription signs in as the first minion: a failure
                # here is that minion's authentication failing.
                self.stats.auth_failures += 1
                log.warning(
                    "publisher subscription failed, retrying in %.0fs: %s", backoff, exc
                )
                channel.close()
                await self._sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            channel.on_recv(self._on_publication)
            self._pub = channel
            self.stats.pub_connected = True
            log.info("subscribed to the master's publisher as %s", self.ids[0])
            return

    async def _ramp_up(self) -> None:
        """Start the minions at the per-process share of the ramp rate."""
        assert self._ctx is not None
        loop = asyncio.get_running_loop()
        rate = self.cfg.ramp_rate / self.cfg.processes
        in_flight = asyncio.Semaphore(self.cfg.auth_concurrency)
        begin = loop.time()
        for position, minion_id in enumerate(self.ids):
            if rate > 0:
                delay = begin + position / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            await in_flight.acquire()
            minion = SimulatedMinion(
                minion_id,
                minion_opts(self._base_opts, self._pki_root, minion_id),
                self._ctx,
            )
            self._minions[minion_id] = minion
            self._started.append(minion)
            self.stats.started += 1
            self._ctx.spawn(self._start_minion(minion, in_flight))

    async def _start_minion(
        self, minion: SimulatedMinion, in_flight: asyncio.Semaphore
    ) -> None:
        """Bring one minion up, retrying with backoff; frees its sign-in slot after the first try."""
        if await self._sign_in(minion, in_flight) and self.cfg.startup_pillar:
            async with self._pillar_slots:
                await minion.fetch_startup_pillar()

    async def _sign_in(
        self, minion: SimulatedMinion, in_flight: asyncio.Semaphore
    ) -> bool:
        backoff = 2.0
        holding = True
        try:
            while not self._stop.is_set():
                try:
                    await asyncio.wait_for(minion.start(), _START_TIMEOUT)
                    return True
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if not minion.authenticated:
                        self.stats.auth_failures += 1
                    log.warning(
                        "%s: start failed, retrying in ~%.0fs: %s",
                        minion.minion_id,
                        backoff,
                        exc or type(exc).__name__,
                    )
                if holding:
                    in_flight.release()
                    holding = False
                await self._sleep(backoff * self._rng.uniform(0.5, 1.5))
                backoff = min(backoff * 2, _MAX_BACKOFF)
            return False
        finally:
            if holding:
                in_flight.release()

    # -- publications ------------------------------------------------------------------

    async def _on_publication(self, payload: Mapping[str, Any]) -> None:
        load = payload.get("load") if isinstance(payload, Mapping) else None
        if not isinstance(load, dict):
            return
        self.stats.publications += 1
        # A publication delivered twice is dropped, but not the next slice of
        # a job a rate-limiting master publishes in slices under one jid:
        # a real minion checks its jid_queue only once the target matched it.
        key = (str(load.get("jid", "")), repr(load.get("tgt")), load.get("tgt_type"))
        if key in self._recent_jids:
            return
        self._recent_jids[key] = None
        if len(self._recent_jids) > _JID_MEMORY:
            self._recent_jids.popitem(last=False)
        for position, minion in enumerate(list(self._started)):
            minion.handle_publication(load)
            if position % _DISPATCH_BATCH == _DISPATCH_BATCH - 1:
                await asyncio.sleep(0)

    # -- control -------------------------------------------------------------------------

    async def _handle_control(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        op = request["op"]
        if op == "status":
            self._refresh_stats()
            return {"ok": True, "status": self.stats.to_dict()}
        if op == "beacon":
            return await self._fire_beacons(request)
        if op == "slowdown":
            factor = float(request.get("factor", 0))
            if factor <= 0:
                return {"ok": False, "error": f"invalid slowdown {factor}: must be > 0"}
            assert self._ctx is not None
            self._ctx.runtime.slowdown = factor
            return {"ok": True, "slowdown": factor}
        if op == "ids":
            return {"ok": True, "ids": self.ids}
        return {
            "ok": False,
            "error": f"unknown op {op!r}: choose status, beacon, slowdown or ids",
        }

    async def _fire_beacons(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        ids = request.get("ids")
        if ids is None:
            targets = list(self._started)
        elif isinstance(ids, list):
            targets = [self._minions[i] for i in ids if i in self._minions]
        else:
            return {"ok": False, "error": '"ids" must be a list of minion ids or null'}
        change = bool(request.get("change_packages", True))
        count = int(request.get("packages", 3))
        ready = [m for m in targets if m.connected]
        results = await asyncio.gather(
            *(m.fire_beacon(change_packages=change, packages=count) for m in ready),
            return_exceptions=True,
        )
        outcomes = list(zip(ready, results, strict=True))
        fired = [m.minion_id for m, r in outcomes if not isinstance(r, BaseException)]
        failed = [m.minion_id for m, r in outcomes if isinstance(r, BaseException)]
        failed += [m.minion_id for m in targets if not m.connected]
        return {"ok": True, "fired": fired, "failed": failed}

    # -- status ----------------------------------------------------------------------------

    def _refresh_stats(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.stats.cpu_seconds = round(usage.ru_utime + usage.ru_stime, 2)
        self.stats.rss_kb = current_rss_kb()
        self.stats.updated_at = time.time()
        if (
            self.stats.state == "starting"
            and self.stats.connected >= len(self.ids)
            and self.stats.pub_connected
        ):
            self.stats.state = "ready"

    def _write_status(self) -> None:
        self._refresh_stats()
        try:
            write_json_atomic(
                process_status_path(self.run_dir, self.index), self.stats.to_dict()
            )
        except OSError as exc:
            log.warning("cannot write status file: %s", exc)

    async def _status_loop(self) -> None:
        while True:
            self._write_status()
            if os.getppid() != self._parent:
                log.warning("supervisor %s is gone, stopping", self._parent)
                self._stop.set()
            await asyncio.sleep(self.cfg.status_interval)

    # -- shutdown ----------------------------------------------------------------------------

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake up early when the worker is asked to stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    async def _shutdown(self) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        tasks = list(ctx.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_CLOSE_TIMEOUT)
        if self._pub is not None:
            self._pub.on_recv(None)
            self._pub.close()
            self._pub = None
        if self._started:
            await asyncio.wait(
                [asyncio.ensure_future(m.close()) for m in self._started],
                timeout=_CLOSE_TIMEOUT,
            )
        if ctx.zmq_context is not None:
            ctx.zmq_context.destroy(linger=0)
            ctx.zmq_context = None


def setup_worker_logging(run_dir: str, index: int, level: str) -> None:
    """Log this worker (and Salt inside it) to ``<run_dir>/worker-<k>.log``."""
    handler = logging.FileHandler(Path(run_dir) / f"worker-{index}.log")
    handler.setFormatter(
        logging.Formatter("%(asctime)s [%(name)s][%(levelname)s] %(message)s")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    try:
        import salt._logging

        # Salt prints early log records to stderr until logging is set up.
        salt._logging.shutdown_temp_handler()
    except (ImportError, AttributeError):
        pass


def raise_fd_limit(minions: int) -> None:
    """Raise the soft open-files limit to the hard one; warn if even that is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = minions * _FDS_PER_MINION + _SPARE_SOCKETS
    if hard != resource.RLIM_INFINITY and hard < needed:
        log.warning(
            "open files hard limit %d is below the ~%d that %d minions need; "
            "raise it (ulimit -Hn) or use more --processes",
            hard, needed, minions,
        )  # fmt: skip
    if soft != resource.RLIM_INFINITY and soft < needed and soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_worker(run_dir: str, index: int) -> int:
    """Entry point of ``python -m evil_minions worker``."""
    cfg, slices, _ = read_fleet_file(run_dir)
    setup_worker_logging(run_dir, index, cfg.log_level)
    raise_fd_limit(len(slices[index]))
    worker = FleetWorker(cfg, index, slices[index], run_dir)
    return worker.run()
