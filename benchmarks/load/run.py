"""Load through salt-api: stacks, locust processes, sampling, the report.

For each variant (rate limiting ``off``, then ``on``) one stack is started:
PostgreSQL with the fleet's pillars, a salt-master, salt-api and the
simulated minions. Then:

1. locust runs headless against salt-api with the console users and the
   load shape of :mod:`benchmarks.load.locustfile` (alone, or as a locust
   master with ``workers`` worker processes on loopback), writing its CSVs
   (``--csv-full-history``) and HTML report;
2. meanwhile, once a second, the master's and salt-api's process trees
   (CPU, PSS) and the fleet's returns per second are sampled;
3. afterwards, the cost of salt-api itself: the same number of async-job
   submissions through salt-api and through ``LocalClient`` directly.

The report (Markdown + PNG) lands in ``benchmarks/results/``. With
``master_host`` set, :func:`run_workers` only starts locust workers that
connect to a locust master elsewhere (see the README).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from benchmarks import proctree, report
from benchmarks.hostspeed import probed
from benchmarks.load.shape import LoadProfile
from benchmarks.load.summary import (
    ApiCost,
    ReportContext,
    ResourceSample,
    VariantRun,
    read_locust,
    render,
    timeline_plot,
)
from benchmarks.load.traffic import PASSWORD_ENV
from benchmarks.salt_trees import (
    MASTER_MWORKERS,
    extract_pristine,
    rotated,
    tuned_options,
)
from harness.errors import HarnessError
from harness.processes import ManagedProcess, remove_tree
from harness.ratelimit import QueueProbe, RateLimiting

if TYPE_CHECKING:
    from benchmarks.load.options import LoadOptions
    from harness.fleet import SimulatedFleet
    from harness.stack import Stack

PROJECT_ROOT: Final = Path(__file__).resolve().parents[2]
LOCUSTFILE: Final = Path(__file__).resolve().parent / "locustfile.py"
#: locust's default port for workers to reach the master
LOCUST_MASTER_PORT: Final = 5557
#: how long locust may run beyond its load shape before it is stopped
LOCUST_GRACE_S: Final = 120.0
SAMPLE_INTERVAL_S: Final = 1.0
#: seconds a limiter sample waits for the queue manager
LIMITER_PROBE_TIMEOUT_S: Final = 2.0
#: locust's output and the daemons' logs, per run, unless a workdir is given
WORKDIR_ROOT: Final = PROJECT_ROOT / ".saltfleet" / "load"
#: how long the cost measurement's login may wait for the master after a load
AFTER_LOAD_LOGIN_S: Final = 120.0
#: workers on this machine get this long to connect to the locust master
WORKERS_CONNECT_S: Final = 60
#: workers on other machines get this long: someone starts them by hand
REMOTE_WORKERS_CONNECT_S: Final = 600


@dataclass(frozen=True)
class LocustWorkers:
    """Where locust's users run: in the one locust process (no workers), or
    in worker processes here and on other machines."""

    local: int = 0
    #: workers on other machines the locust master waits for
    remote: int = 0
    #: where the locust master listens for workers
    bind_host: str = "127.0.0.1"
    #: None: a free port, or locust's default when workers come from elsewhere
    port: int | None = None

    @property
    def expected(self) -> int:
        """Workers the locust master waits for."""
        return self.local + self.remote

    @property
    def connect_s(self) -> int:
        """Seconds the locust master waits for its workers."""
        return REMOTE_WORKERS_CONNECT_S if self.remote else WORKERS_CONNECT_S

    def master_port(self) -> int:
        """The port the locust master listens on for workers."""
        from harness.ports import free_port

        if self.port is not None:
            return self.port
        return LOCUST_MASTER_PORT if self.remote else free_port()

    def describe(self) -> str:
        """One line for the report."""
        if not self.expected:
            return "one process"
        where = f"{self.local} worker(s) on loopback"
        if self.remote:
            where += f" and {self.remote} on other machines"
        return f"a locust master and {where}"


def _default_limits() -> RateLimiting:
    """The limiter of the load command's defaults (they live in its options)."""
    from benchmarks.load.options import LoadOptions

    return LoadOptions().rate_limiting()


@dataclass(frozen=True)
class LoadSettings:
    """One load run; defaults are the lead's full-size run."""

    minions: int = 1000
    #: worker processes of the simulated fleet
    processes: int = 2
    profile: LoadProfile = field(default_factory=LoadProfile)
    variants: tuple[str, ...] = ("off", "on")
    #: runs of every variant, in a rotated order
    runs: int = 1
    workers: LocustWorkers = field(default_factory=LocustWorkers)
    #: async-job submissions for the salt-api vs LocalClient comparison; 0: skip
    submissions: int = 200
    #: the limiter-on master's ``rate_limiting`` and exempt pool (its MWorkers
    #: are taken from :data:`MASTER_MWORKERS`); ``pools`` has its worker pools
    limits: RateLimiting = field(default_factory=_default_limits)
    presence_targets: int = 10
    group_size: int = 50
    #: where salt-api listens: another address of this machine for workers elsewhere
    api_host: str = "127.0.0.1"
    #: report file name (without .md) in benchmarks/results/
    name: str = "load"
    workdir: Path | None = None
    keys_dir: Path | None = None
    #: the command line shown as how to regenerate the report
    command: str = ""

    @classmethod
    def of(cls, opts: LoadOptions) -> LoadSettings:
        """The run the command line's options describe."""
        return cls(
            minions=opts.minions,
            processes=opts.processes,
            profile=opts.profile(),
            variants=opts.variants,
            runs=opts.runs,
            workers=LocustWorkers(
                local=opts.workers,
                remote=opts.remote_workers,
                bind_host=opts.bind_host,
                port=opts.master_port,
            ),
            submissions=opts.submissions,
            limits=opts.rate_limiting(),
            presence_targets=opts.presence_targets,
            group_size=opts.group_size,
            api_host=opts.api_host,
            name=opts.name,
            workdir=Path(opts.workdir).resolve() if opts.workdir else None,
            command=opts.reproduce_command(),
        )


@dataclass
class LocustCommand:
    """Builds locust's command lines for one run (pure: tested as such)."""

    host: str
    profile: LoadProfile
    out_prefix: Path
    presence_targets: int = 10
    group_size: int = 50
    #: the master has the series' ``ratelimit`` runner (pristine Salt has not)
    ratelimit_runner: bool = True
    extra: list[str] = field(default_factory=list)

    def _base(self) -> list[str]:
        return [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]

    def _profile_args(self) -> list[str]:
        p = self.profile
        return [
            f"--load-users={p.users}",
            f"--load-spike-users={p.spike_users}",
            f"--load-ramp={p.ramp_s}",
            f"--load-steady={p.steady_s}",
            f"--load-spike={p.spike_s}",
            f"--load-recover={p.recover_s}",
        ]

    def headless(
        self, workers: LocustWorkers | None = None, port: int = 0
    ) -> list[str]:
        """The locust that runs the shape and writes CSVs and HTML; a master
        listening on ``port`` for ``workers``, if any."""
        argv = [
            *self._base(),
            "--host",
            self.host,
            "--headless",
            "--only-summary",
            "--csv",
            str(self.out_prefix),
            "--csv-full-history",
            "--html",
            f"{self.out_prefix}.html",
            # failures are what this run measures, not a reason to fail
            "--exit-code-on-error=0",
            f"--run-time={int(self.profile.duration_s + 10)}s",
            f"--presence-targets={self.presence_targets}",
            f"--group-size={self.group_size}",
            *self._profile_args(),
        ]
        if not self.ratelimit_runner:
            argv.append("--salt-without-ratelimit")
        if workers is not None and workers.expected:
            argv += [
                "--master",
                f"--master-bind-host={workers.bind_host}",
                f"--master-bind-port={port}",
                f"--expect-workers={workers.expected}",
                f"--expect-workers-max-wait={workers.connect_s}",
            ]
        return argv + self.extra


def worker_command(master_host: str, master_port: int) -> list[str]:
    """A locust worker that takes its options (host, shape, targets) from
    the locust master it connects to."""
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--worker",
        f"--master-host={master_host}",
        f"--master-port={master_port}",
    ]


def _locust_env(password: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    if password is not None:
        env[PASSWORD_ENV] = password
    return env


def start_workers(
    count: int, master_host: str, master_port: int, log_dir: Path
) -> list[ManagedProcess]:
    """Start ``count`` locust workers for the master at ``master_host:master_port``."""
    workers = []
    for index in range(count):
        worker = ManagedProcess(
            f"locust-worker-{index + 1}",
            worker_command(master_host, master_port),
            log_dir / f"locust-worker-{index + 1}.log",
            env=_locust_env(),
            cwd=PROJECT_ROOT,
        )
        worker.start()
        workers.append(worker)
    return workers


def run_locust(
    command: LocustCommand, password: str, workers: LocustWorkers, log_dir: Path
) -> None:
    """Run locust headless to the end of its shape, with ``workers``. Every
    process started here is stopped by pid before returning."""
    port = workers.master_port() if workers.expected else 0
    main = ManagedProcess(
        "locust",
        command.headless(workers, port),
        log_dir / "locust.log",
        env=_locust_env(password),
        cwd=PROJECT_ROOT,
    )
    started: list[ManagedProcess] = []
    try:
        main.start()
        started.append(main)
        if workers.local:
            started += start_workers(workers.local, "127.0.0.1", port, log_dir)
        limit = command.profile.duration_s + workers.connect_s + LOCUST_GRACE_S
        deadline = time.monotonic() + limit
        while main.running():
            if time.monotonic() > deadline:
                raise HarnessError(
                    f"locust still running {limit:.0f}s after it started; "
                    f"stopped it. Last lines of its log:\n{main.log_tail()}"
                )
            time.sleep(0.5)
        if main.returncode() != 0:
            raise main.fail(f"exited with code {main.returncode()}")
    finally:
        for process in reversed(started):
            process.stop()


def run_workers(
    master_host: str, master_port: int, count: int, rounds: int, log_dir: Path
) -> int:
    """Only workers, for a locust master on another machine: ``count``
    workers for each of ``rounds`` locust runs (one per variant; a worker
    ends with its run). 0 once all rounds ended well, else 1."""
    for round_ in range(1, rounds + 1):
        workers = start_workers(count, master_host, master_port, log_dir)
        print(
            f"run {round_}/{rounds}: {count} locust worker(s) for the locust "
            f"master at {master_host}:{master_port}; logs in {log_dir}",
            flush=True,
        )
        try:
            while any(w.running() for w in workers):
                time.sleep(1)
        finally:
            for worker in workers:
                worker.stop()
        failed = [w for w in workers if w.returncode() != 0]
        for worker in failed:
            print(
                f"{worker.name} exited with {worker.returncode()}:\n{worker.log_tail()}"
            )
        if failed:
            return 1
    return 0


class ResourceSampler(threading.Thread):
    """Samples the master's and salt-api's trees, the fleet and the limiter's
    queue manager (``probe``, if any), once a second."""

    def __init__(
        self,
        master_pid: int,
        api_pid: int,
        fleet: SimulatedFleet | None,
        probe: QueueProbe | None = None,
    ) -> None:
        super().__init__(name="load-sampler", daemon=True)
        self.master_pid = master_pid
        self.api_pid = api_pid
        self.fleet = fleet
        #: the limiter-on master's queue manager; None: no limiter
        self.probe = probe
        self.samples: list[ResourceSample] = []
        self._stop_event = threading.Event()

    def _returns(self) -> int:
        status = self.fleet.status() if self.fleet is not None else None
        sent = status.get("returns_sent") if status else None
        return sent if isinstance(sent, int) else 0

    def run(self) -> None:
        """Sample once a second until :meth:`stop`."""
        started = last = time.monotonic()
        cpu = (
            proctree.cpu_seconds(self.master_pid),
            proctree.cpu_seconds(self.api_pid),
        )
        returns = self._returns()
        while not self._stop_event.wait(SAMPLE_INTERVAL_S):
            now = time.monotonic()
            new_cpu = (
                proctree.cpu_seconds(self.master_pid),
                proctree.cpu_seconds(self.api_pid),
            )
            new_returns = self._returns()
            elapsed = max(now - last, 1e-6)
            self.samples.append(
                ResourceSample(
                    t=now - started,
                    master_cpu_pct=(new_cpu[0] - cpu[0]) / elapsed * 100,
                    master_pss_mb=sum(proctree.pss_by_role(self.master_pid).values()),
                    api_cpu_pct=(new_cpu[1] - cpu[1]) / elapsed * 100,
                    api_pss_mb=sum(proctree.pss_by_role(self.api_pid).values()),
                    returns_per_s=max(0, new_returns - returns) / elapsed,
                    limiter=self.probe.state() if self.probe else None,
                )
            )
            last, cpu, returns = now, new_cpu, new_returns

    def stop(self) -> list[ResourceSample]:
        """End the sampling; the samples taken."""
        self._stop_event.set()
        self.join(timeout=10)
        return self.samples


def measure_api_cost(stack: Stack, submissions: int) -> ApiCost:
    """``submissions`` ``local_async test.ping`` to one minion through
    salt-api (one kept-alive HTTP session, one token), then as many
    ``LocalClient.run_job`` calls; both one after the other."""
    import requests

    from harness.saltapi import login

    assert stack.fleet is not None and stack.api is not None
    target = stack.fleet.ids[0]
    credentials = stack.api.credentials
    low = [{"client": "local_async", "tgt": target, "fun": "test.ping"}]
    with requests.Session() as session:
        session.headers.update(
            {
                # right after locust the master is still draining the load's
                # returns: a login may wait longer than an idle one
                "X-Auth-Token": login(credentials, timeout=AFTER_LOAD_LOGIN_S),
                "Accept": "application/json",
            }
        )
        began = time.perf_counter()
        for _ in range(submissions):
            reply = session.post(
                credentials.url + "/",
                json=low,
                timeout=60,
                verify=credentials.ca_file or True,
            )
            reply.raise_for_status()
        api_s = time.perf_counter() - began
    with stack.client() as client:
        began = time.perf_counter()
        for _ in range(submissions):
            client.run_job(target, "test.ping")
        local_s = time.perf_counter() - began
    return ApiCost(submissions, api_s, local_s)


def _limiter_options(settings: LoadSettings, variant: str) -> dict[str, Any]:
    """The master options of ``variant``; with an exempt pool (the limiter
    on, or ``pools``), the pool takes its MWorkers from the same
    :data:`MASTER_MWORKERS` as the limiter-off master has (equal masters);
    ``tuned`` has 3008.3's own knobs."""
    if variant == "off":
        return {}
    if variant == "tuned":
        return tuned_options(MASTER_MWORKERS)
    limits = settings.limits
    options = limits.master_options(MASTER_MWORKERS - limits.exempt_pool_workers)
    if variant == "pools":
        return {"worker_pools": options["worker_pools"]}
    return options


def _stack(
    settings: LoadSettings,
    variant: str,
    root: Path,
    out_dir: Path,
    salt_tree: Path | None = None,
) -> Stack:
    """The stack of one variant in ``root``: simulated minions, pillars in
    PostgreSQL, salt-api; the master options of ``variant``, its daemons on
    the ``salt`` of ``salt_tree`` if given. Its logs are kept in
    ``out_dir/logs``."""
    from harness.fleet import FleetConfig
    from harness.pillar.variants import db_ext_pillar
    from harness.saltapi import ApiSettings
    from harness.stack import fleet_stack

    fleet = FleetConfig(processes=settings.processes)
    if settings.keys_dir is not None:
        fleet = replace(fleet, keys_dir=str(settings.keys_dir))
    return fleet_stack(
        settings.minions,
        root=root,
        fleet=fleet,
        ext_pillar=db_ext_pillar(),
        master_opts=_limiter_options(settings, variant),
        worker_threads=MASTER_MWORKERS,
        master_salt_tree=salt_tree,
        logs_dir=out_dir / "logs",
        # beyond loopback: one certificate for every variant, so that
        # workers on other machines need one copy (README, "More than one machine")
        api=ApiSettings(host=settings.api_host, tls_dir=out_dir.parent / "tls"),
    )


def run_variant(
    settings: LoadSettings,
    variant: str,
    workdir: Path,
    run_no: int = 1,
    salt_tree: Path | None = None,
) -> VariantRun:
    """One stack, one locust run, its samples and (optionally) the API cost."""
    out_dir = workdir / (variant if settings.runs == 1 else f"{variant}-{run_no}")
    out_dir.mkdir(parents=True, exist_ok=True)
    # short: the master's unix sockets live under it (107 bytes at most)
    with probed(f"[{variant}]") as probe:
        root = Path(tempfile.mkdtemp(prefix="saltfleet-load-"))
        root.chmod(0o755)  # an unprivileged PostgreSQL must enter it
        try:
            with _stack(settings, variant, root, out_dir, salt_tree) as stack:
                result = _load(
                    stack, settings, variant, out_dir, pristine=salt_tree is not None
                )
        finally:
            # PostgreSQL's data and the master's keys; the logs are in out_dir
            remove_tree(root, lambda line: print(f"[{variant}] {line}", flush=True))
    result.run = run_no
    result.cpu_probe_before_ms, result.cpu_probe_after_ms = (
        probe.before_ms,
        probe.after_ms,
    )
    return result


def _ca_option(ca_file: str | None) -> list[str]:
    """Locust's option that verifies salt-api's self-signed certificate
    (salt-api serves TLS beyond loopback); none for plain HTTP."""
    return [] if ca_file is None else [f"--salt-ca-file={ca_file}"]


def _load(
    stack: Stack,
    settings: LoadSettings,
    variant: str,
    out_dir: Path,
    pristine: bool = False,
) -> VariantRun:
    from harness.pillar.generate import generate
    from harness.pillar.store import store_fleet

    assert stack.api and stack.master and stack.pg and stack.fleet
    store_fleet(stack.pg, generate(list(stack.fleet.ids)))
    command = LocustCommand(
        host=stack.api.url,
        profile=settings.profile,
        out_prefix=out_dir / "locust",
        presence_targets=settings.presence_targets,
        group_size=settings.group_size,
        ratelimit_runner=not pristine,
        extra=[
            f"--salt-minions={','.join(stack.fleet.ids)}",
            f"--salt-user={stack.api.credentials.user}",
            *_ca_option(stack.api.credentials.ca_file),
        ],
    )
    # a short timeout: a busy queue manager is a sample missed, not a stall
    probe = (
        QueueProbe(stack.master.settings.sock_dir, timeout=LIMITER_PROBE_TIMEOUT_S)
        if variant == "on"
        else None
    )
    sampler = ResourceSampler(
        stack.master.process.pid, stack.api.process.pid, stack.fleet, probe
    )
    sampler.start()
    try:
        print(f"[{variant}] locust: {settings.profile.describe()}", flush=True)
        run_locust(command, stack.api.credentials.password, settings.workers, out_dir)
    finally:
        samples = sampler.stop()
    cost, cost_error = None, ""
    if settings.submissions:
        print(
            f"[{variant}] {settings.submissions} submissions: salt-api vs LocalClient",
            flush=True,
        )
        import requests
        import salt.exceptions

        try:
            cost = measure_api_cost(stack, settings.submissions)
        except (
            HarnessError,
            requests.RequestException,
            salt.exceptions.SaltException,
        ) as exc:
            # the load's numbers stand; the report says why this part is missing
            cost_error = str(exc)
            print(f"[{variant}] salt-api cost not measured: {exc}", flush=True)
    return VariantRun(
        name=variant,
        limiter="off" if variant == "off" else f"on ({_limits(settings)})",
        locust=read_locust(command.out_prefix),
        samples=samples,
        cost=cost,
        cost_error=cost_error,
        html_report=str(command.out_prefix) + ".html",
    )


def _limits(settings: LoadSettings) -> str:
    limits = settings.limits
    words = [
        f"max_master_jobs {limits.max_master_jobs}",
        f"max_queue {limits.max_queue}",
    ]
    if limits.exempt is not None:
        words.append(f"exempt: {', '.join(limits.exempt_functions())}")
    if limits.exempt_pool_workers:
        words.append(
            f"exempt functions' pool of {limits.exempt_pool_workers} MWorker(s) "
            f"of the {MASTER_MWORKERS} every variant's master has"
        )
    if limits.exempt_max_targets:
        words.append(
            f"jobs to at most {limits.exempt_max_targets} minion(s) bypass "
            "the queue (exempt_max_targets)"
        )
    if limits.exempt_pool_max_targets:
        words.append(_small_publications(limits, "that pool"))
    if limits.slices:
        words.append(
            f"slices of at least {limits.slice_min_targets} minions, "
            + limits.describe_budget()
        )
    return ", ".join(words)


def _small_publications(limits: RateLimiting, pool: str) -> str:
    """What ``worker_pools:<pool>:max_targets`` routes, for a report."""
    return (
        f"publications naming at most {limits.exempt_pool_max_targets} "
        f"minion(s) by id routed to {pool}"
    )


def _setup_lines(settings: LoadSettings) -> list[str]:
    from benchmarks.load import traffic as lf
    from harness.saltapi import ApiSettings

    where = (
        f"on {settings.api_host} with TLS"
        if ApiSettings(host=settings.api_host).tls
        else "on loopback without TLS"
    )
    return [
        f"{settings.minions} simulated minions ({settings.processes} simulator "
        "processes), pillars in PostgreSQL (`salt_pillar_rows`), salt-api "
        f"`rest_cherrypy` {where}, eauth `sharedsecret`; the load user is "
        "granted only the functions the console calls, by exact name "
        "(`harness.saltapi.LOAD_PERMISSIONS`, docs/SECURITY.md)",
        f"load shape: {settings.profile.describe()}",
        f"locust: {settings.workers.describe()}",
        f"`ConsoleUser` think time {lf.CONSOLE_THINK_S[0]:g}-{lf.CONSOLE_THINK_S[1]:g} s; "
        f"task weights: presence {lf.WEIGHT_PRESENCE} (test.ping to "
        f"{settings.presence_targets} minions, timeout {lf.PRESENCE_TIMEOUT_S} s), "
        f"job lookup {lf.WEIGHT_JOB_LOOKUP}, group job {lf.WEIGHT_JOB_GROUP} "
        f"({settings.group_size} minions), pillar.items {lf.WEIGHT_PILLAR_ITEMS}, "
        f"pillar.get {lf.WEIGHT_PILLAR_GET}, runner {lf.WEIGHT_RUNNER}, job to all "
        f"{lf.WEIGHT_JOB_ALL}; one `EventFollower` reading `/events` for "
        f"{lf.EVENTS_WINDOW_S:g} s windows",
        "variants: " + "; ".join(_describe(v, settings) for v in settings.variants),
        f"runs: {settings.runs} of every variant, in a rotated order; every "
        f"master has {MASTER_MWORKERS} MWorkers in all",
    ]


def _describe(variant: str, settings: LoadSettings) -> str:
    """What the master of ``variant`` is."""
    if variant == "off":
        return "off: rate limiting off, one pool"
    if variant == "on":
        return f"on: rate limiting ({_limits(settings)}, Salt's other defaults)"
    if variant == "pools":
        limits = settings.limits
        small = (
            f", {_small_publications(limits, 'it')}"
            if limits.exempt_pool_max_targets
            else ""
        )
        return (
            "pools: limiter on's pools (an exempt pool of "
            f"{limits.exempt_pool_workers} MWorker(s){small}), no rate limiting"
        )
    return (
        "tuned: pristine 3008.3 (salt-master and salt-api) with "
        "`master_async_mworker: True` and a worker pool of its own for `publish`"
    )


def run(settings: LoadSettings) -> Path:
    """Every variant side by side; the report's path."""
    workdir = settings.workdir
    if workdir is None:
        workdir = WORKDIR_ROOT / settings.name
        shutil.rmtree(workdir, ignore_errors=True)  # the previous run's output
    workdir.mkdir(parents=True, exist_ok=True)
    pristine = None
    if "tuned" in settings.variants:
        print("extracting pristine 3008.3 for the tuned master", flush=True)
        # a --workdir given again still holds the last run's tree
        shutil.rmtree(workdir / "pristine", ignore_errors=True)
        pristine = extract_pristine(workdir)
    runs = []
    for run_no in range(1, settings.runs + 1):
        for variant in rotated(settings.variants, run_no - 1):
            print(f"run {run_no} of {settings.runs}: {variant}", flush=True)
            tree = pristine if variant == "tuned" else None
            runs.append(run_variant(settings, variant, workdir, run_no, tree))
    # one run of each variant: every run's lines in one panel would hide them
    first = [r for r in runs if r.run == 1]
    plot = timeline_plot(first, report.RESULTS / f"{settings.name}-timeline.png")
    context = ReportContext(
        title="Load through salt-api: an operator console, "
        + " vs ".join(settings.variants),
        command=settings.command or default_command(settings),
        environment=report.environment(),
        setup=_setup_lines(settings),
        plot=plot.name,
    )
    report.write_data(settings.name, {"settings": settings, "runs": runs})
    return report.write(settings.name, render(context, runs))


def default_command(settings: LoadSettings) -> str:
    """The ``nox -s load`` command line that writes the same report."""
    return f"nox -s load -- --name {shlex.quote(settings.name)}"
