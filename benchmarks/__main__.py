"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.names import BENCHMARKS
from benchmarks.pillar import DEFAULT_VARIANTS as PILLAR_VARIANTS
from benchmarks.pillar import variant_list as pillar_variants
from benchmarks.pkgstates import options as pkgstates_options
from benchmarks.storm import options as storm_options
from harness.argtypes import positive
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
    p.add_argument(
        "--variants",
        type=pillar_variants,
        default=list(PILLAR_VARIANTS),
        help="comma-separated, in run order: SOURCE[+reuse|+cache], SOURCE one "
        "of files, files-fair, db-function, db-queries, db-upstream "
        "(default: %(default)s)",
    )
    p = sub.add_parser("interfaces", help=BENCHMARKS["interfaces"])
    p.add_argument("--runs", type=positive, default=3, help="at least 3")
    p.add_argument("--loads", type=positive, default=10, help="full loads per run")
    p.add_argument("--warmup", type=positive, default=2)
    p.add_argument("--single-loads", type=positive, default=20)
    p = sub.add_parser("storm", help=BENCHMARKS["storm"])
    storm_options.add_arguments(p)
    p = sub.add_parser("query", help=BENCHMARKS["query"])
    p.add_argument("--minions", type=positive, default=1000)
    p.add_argument("--rounds", type=positive, default=5)
    p.add_argument(
        "--running", type=positive, default=900, help="simulated minions (live part)"
    )
    p.add_argument(
        "--stopped",
        type=positive,
        default=100,
        help="minions with accepted keys and cached grains but no process",
    )
    p.add_argument("--timeout", type=positive, default=15)
    p.add_argument(
        "--no-live", action="store_true", help="skip the part that starts a stack"
    )
    p = sub.add_parser("pkgstates", help=BENCHMARKS["pkgstates"])
    pkgstates_options.add_arguments(p)
    p = sub.add_parser("pillar-compile", help=BENCHMARKS["pillar-compile"])
    p.add_argument("--fleet", type=positive, default=1000, help="minions in top.sls")
    p.add_argument("--requests", type=positive, default=200, help="counted per run")
    p.add_argument("--warmup", type=positive, default=5)
    p.add_argument("--runs", type=positive, default=3)
    p = sub.add_parser("router", help=BENCHMARKS["router"])
    p.add_argument("--runs", type=positive, default=5, help="at least 3")
    p.add_argument("--requests", type=positive, default=2000, help="per run")
    args = parser.parse_args(argv)
    if args.name == "pkgstates":
        try:
            args.pkgstates = pkgstates_options.from_args(args)
        except argparse.ArgumentTypeError as exc:
            p.error(str(exc))
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

        path = storm.run(storm_options.from_args(args))
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
    elif args.name == "pkgstates":
        from benchmarks.pkgstates import run as pkgstates

        path = pkgstates.run(args.pkgstates)
    elif args.name == "pillar-compile":
        from benchmarks import pillar_compile

        path = pillar_compile.run(
            fleet_size=args.fleet,
            requests=args.requests,
            warmup=args.warmup,
            runs=args.runs,
        )
    elif args.name == "router":
        from benchmarks import router_functions

        path = router_functions.run(runs=args.runs, requests_per_run=args.requests)
    elif args.name == "interfaces":
        from benchmarks import interfaces_load

        path = interfaces_load.run(
            runs=args.runs,
            loads=args.loads,
            warmup=args.warmup,
            single_loads=args.single_loads,
        )
    else:
        from benchmarks import pillar

        path = pillar.run(
            minions=args.minions,
            rounds=args.rounds,
            workers=args.workers,
            micro_calls=args.micro_calls,
            names=args.variants,
        )
    return path


if __name__ == "__main__":
    sys.exit(main())
