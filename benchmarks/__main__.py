"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from harness.argtypes import non_negative, positive
from harness.errors import HarnessError


def _terminate(signum: int, frame: FrameType | None) -> None:
    # unwind like Ctrl-C so every stack the benchmark started is stopped
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="name", required=True, metavar="NAME")
    p = sub.add_parser(
        "minions", help="start-up, fan-out, footprint of simulated minions"
    )
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--processes", type=positive, default=1)
    p.add_argument("--rounds", type=positive, default=3)
    p = sub.add_parser("pillar", help="file pillars vs PostgreSQL (4 variants) + micro")
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--rounds", type=positive, default=10)
    p.add_argument("--workers", type=positive, default=4)
    p.add_argument("--micro-calls", type=positive, default=2000)
    p = sub.add_parser(
        "interfaces", help="loading all execution modules, interfaces on vs off"
    )
    p.add_argument("--rounds", type=positive, default=20)
    p.add_argument("--single-rounds", type=positive, default=30)
    p = sub.add_parser("storm", help="a storm of jobs, rate limiting off vs on")
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--jobs", type=positive, default=200)
    p.add_argument("--processes", type=positive, default=2)
    p.add_argument("--submitters", type=positive, default=4)
    p.add_argument(
        "--max-wait",
        type=positive,
        default=1800,
        help="seconds one variant may take before it is cut short",
    )
    p.add_argument("--decide-calls", type=positive, default=20000)
    p.add_argument(
        "--variants",
        choices=["off", "on", "both"],
        default="both",
        help="run the limiter off, on, or both side by side (default)",
    )
    p.add_argument(
        "--max-master-jobs",
        type=positive,
        default=2000,
        help="rate_limiting:max_master_jobs of the limiter-on master "
        "(default: Salt's default, 2000)",
    )
    p.add_argument(
        "--exempt-pool",
        type=non_negative,
        default=1,
        help="MWorkers of the limiter-on master's worker pool for the exempt "
        "functions (worker_pools:<pool>:functions); 0: no such pool (default: 1)",
    )
    p = sub.add_parser("query", help="query runner vs cache.grains; names; live")
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--rounds", type=positive, default=5)
    p.add_argument(
        "--running", type=positive, default=50, help="simulated minions (live part)"
    )
    p.add_argument(
        "--stopped",
        type=positive,
        default=100,
        help="minions with accepted keys and cached grains but no process",
    )
    p.add_argument("--timeout", type=positive, default=5)
    p.add_argument(
        "--no-live", action="store_true", help="skip the part that starts a stack"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.name == "minions":
            from benchmarks import minions

            path = minions.run(
                minions=args.minions, processes=args.processes, rounds=args.rounds
            )
        elif args.name == "storm":
            from benchmarks import storm

            path = storm.run(
                minions=args.minions,
                jobs=args.jobs,
                processes=args.processes,
                submitters=args.submitters,
                max_wait=args.max_wait,
                decide_calls=args.decide_calls,
                variants=("on", "off") if args.variants == "both" else (args.variants,),
                max_master_jobs=args.max_master_jobs,
                exempt_pool=args.exempt_pool,
            )
        elif args.name == "query":
            from benchmarks import query

            path = query.run(
                minions=args.minions,
                rounds=args.rounds,
                running=args.running,
                stopped=args.stopped,
                timeout=args.timeout,
                live=not args.no_live,
            )
        elif args.name == "interfaces":
            from benchmarks import interfaces_load

            path = interfaces_load.run(args.rounds, args.single_rounds)
        else:
            from benchmarks import pillar

            path = pillar.run(
                minions=args.minions,
                rounds=args.rounds,
                workers=args.workers,
                micro_calls=args.micro_calls,
            )
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", file=sys.stderr)
        return 130
    print(path.read_text())
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
