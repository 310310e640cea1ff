"""``python -m benchmarks.load``: load through salt-api with locust.

Without ``--master-host``: start a stack per variant (simulated minions,
salt-api, rate limiting off and on), run locust headless against it (alone,
or a locust master with ``--workers`` workers here and ``--remote-workers``
elsewhere), write the report to benchmarks/results/NAME.md. With
``--master-host``: start only ``--workers`` locust workers for the locust
master on that host, once per variant (give both machines the same
``--variants``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.load.shape import LoadProfile
from harness.argtypes import function_names, non_negative, port, positive, seconds
from harness.entrypoint import run_harness_cli
from harness.ratelimit import RateLimiting


def regenerate_command(argv: Sequence[str], name: str) -> str:
    """The report's "Regenerate" command: these arguments, with ``--name``
    added when they left it at its default, so the command names the file."""
    words = list(argv)
    if not any(w == "--name" or w.startswith("--name=") for w in words):
        words += ["--name", name]
    return f"nox -s load -- {shlex.join(words)}"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks.load``."""
    d = LoadProfile()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.load", description=__doc__
    )
    parser.add_argument(
        "--minions",
        type=positive,
        default=1000,
        help="simulated minions (default 1000)",
    )
    parser.add_argument(
        "--processes",
        type=positive,
        default=2,
        help="processes of the simulated fleet (default 2)",
    )
    # the load shape (benchmarks.load.shape.LoadProfile)
    for flag, kind, default, text in (
        ("--users", positive, d.users, "console users, steady"),
        ("--spike-users", positive, d.spike_users, "users during the spike"),
        ("--ramp", seconds, d.ramp_s, "seconds of the ramp to --users"),
        ("--steady", seconds, d.steady_s, "seconds at --users"),
        ("--spike", seconds, d.spike_s, "seconds at --spike-users"),
        ("--recover", seconds, d.recover_s, "seconds back at --users"),
    ):
        parser.add_argument(
            flag, type=kind, default=default, help=f"{text} (default {default:g})"
        )
    parser.add_argument(
        "--variants",
        choices=["off", "on", "both"],
        default="both",
        help="rate limiting off, on, or both side by side (default)",
    )
    salt = RateLimiting()  # Salt's own defaults
    parser.add_argument(
        "--max-master-jobs",
        type=positive,
        default=salt.max_master_jobs,
        help="rate_limiting:max_master_jobs when on "
        f"(default {salt.max_master_jobs}, Salt's)",
    )
    parser.add_argument(
        "--max-queue",
        type=positive,
        default=salt.max_queue,
        help=f"rate_limiting:max_queue when on (default {salt.max_queue}, Salt's); "
        "a small one shows how the console meets an overloaded master",
    )
    parser.add_argument(
        "--exempt-pool",
        type=non_negative,
        default=1,
        help="MWorkers of the limiter-on master's own pool for the exempt "
        "functions (test.ping, saltutil.find_job, ...); 0: no such pool "
        "(default 1)",
    )
    parser.add_argument(
        "--exempt",
        type=function_names,
        default=None,
        metavar="FUN[,FUN...]",
        help="rate_limiting:exempt of the limiter-on master: functions that "
        "bypass its queue (and go to the exempt pool), e.g. "
        "test.ping,pillar.get,pillar.items; saltutil.find_job and "
        "saltutil.running are always exempt (default: Salt's list)",
    )
    parser.add_argument(
        "--slice-min-targets",
        type=non_negative,
        default=100,
        help="the limiter-on master publishes a job in slices of at least this "
        "many minions as its max_master_jobs budget frees "
        "(rate_limiting:slices:min_targets); 0: every job to all its minions "
        "at once (default 100)",
    )
    parser.add_argument(
        "--submissions",
        type=non_negative,
        default=200,
        help="async jobs for the salt-api vs LocalClient cost; 0 skips it (default 200)",
    )
    parser.add_argument(
        "--presence-targets",
        type=positive,
        default=10,
        help="minions per presence check (default 10)",
    )
    parser.add_argument(
        "--group-size",
        type=positive,
        default=50,
        help="minions per group job (default 50)",
    )
    dist = parser.add_argument_group(
        "distributed locust",
        "a locust master here with workers here and elsewhere, or only workers",
    )
    dist.add_argument(
        "--workers",
        type=non_negative,
        default=0,
        help="locust worker processes on this machine (0: locust runs alone); "
        "with --master-host: the workers to start (default 1 then)",
    )
    dist.add_argument(
        "--remote-workers",
        type=non_negative,
        default=0,
        help="workers on other machines the locust master waits for (up to "
        "10 min); start them there with --master-host",
    )
    dist.add_argument(
        "--bind-host",
        default="127.0.0.1",
        help="where the locust master listens for workers (default 127.0.0.1; "
        "0.0.0.0 for workers on other machines)",
    )
    dist.add_argument(
        "--api-host",
        default="127.0.0.1",
        help="the address of this machine salt-api listens on and workers "
        "use (default 127.0.0.1; another one for workers on other machines: "
        "then TLS only, with a certificate made in WORKDIR/tls that the "
        "workers need at the same path)",
    )
    dist.add_argument(
        "--master-host",
        help="only start workers, for the locust master on HOST",
    )
    dist.add_argument(
        "--master-port",
        type=port,
        help="the locust master's port (default: 5557 with --master-host or "
        "--remote-workers, else a free one)",
    )
    parser.add_argument(
        "--name",
        default="load",
        help="report name: benchmarks/results/NAME.md (default load)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="locust output and daemon logs (default .saltfleet/load/NAME, replaced each run)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; errors are one ``error:`` line and exit 2, Ctrl-C
    or SIGTERM stop everything started and exit 130."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    from benchmarks.load import run

    variants = ("off", "on") if args.variants == "both" else (args.variants,)
    if args.master_host:
        log_dir = args.workdir or Path(".saltfleet") / "logs" / "load-workers"
        log_dir.mkdir(parents=True, exist_ok=True)
        return run.run_workers(
            args.master_host,
            args.master_port or run.LOCUST_MASTER_PORT,
            args.workers or 1,
            len(variants),
            log_dir.resolve(),
        )
    settings = run.LoadSettings(
        minions=args.minions,
        processes=args.processes,
        profile=LoadProfile(
            args.users,
            args.spike_users,
            args.ramp,
            args.steady,
            args.spike,
            args.recover,
        ),
        variants=variants,
        workers=run.LocustWorkers(
            local=args.workers,
            remote=args.remote_workers,
            bind_host=args.bind_host,
            port=args.master_port,
        ),
        submissions=args.submissions,
        max_master_jobs=args.max_master_jobs,
        max_queue=args.max_queue,
        exempt_pool=args.exempt_pool,
        exempt=args.exempt,
        slice_min_targets=args.slice_min_targets,
        presence_targets=args.presence_targets,
        group_size=args.group_size,
        api_host=args.api_host,
        name=args.name,
        workdir=args.workdir.resolve() if args.workdir else None,
        command=regenerate_command(sys.argv[1:] if argv is None else argv, args.name),
    )
    path = run.run(settings)
    print(path.read_text())
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
