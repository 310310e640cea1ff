"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.names import BENCHMARKS
from harness.argtypes import non_negative, positive
from harness.entrypoint import run_harness_cli


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m benchmarks``; returns the exit code."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="name", required=True, metavar="NAME")
    p = sub.add_parser("minions", help=BENCHMARKS["minions"])
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--processes", type=positive, default=1)
    p.add_argument("--rounds", type=positive, default=3)
    p = sub.add_parser("pillar", help=BENCHMARKS["pillar"])
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--rounds", type=positive, default=10)
    p.add_argument("--workers", type=positive, default=4)
    p.add_argument("--micro-calls", type=positive, default=2000)
    p = sub.add_parser("interfaces", help=BENCHMARKS["interfaces"])
    p.add_argument("--rounds", type=positive, default=20)
    p.add_argument("--single-rounds", type=positive, default=30)
    p = sub.add_parser("storm", help=BENCHMARKS["storm"])
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
    args = parser.parse_args(argv)
    path = _run(args)
    print(path.read_text())
    print(f"report: {path}")
    return 0


def _run(args: argparse.Namespace) -> Path:
    """Run the benchmark ``args.name``; return its report's path."""
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
    return path


if __name__ == "__main__":
    sys.exit(main())
