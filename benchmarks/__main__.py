"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

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
        "--no-live",
        dest="live",
        action="store_false",
        help="skip the part that starts a stack",
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


#: each benchmark that takes plain keywords: its module, and the keywords of
#: its ``run`` (``keyword=option`` where the option is named otherwise)
PLAIN_RUNS: Final[dict[str, tuple[str, str]]] = {
    "minions": ("benchmarks.minions", "minions processes rounds"),
    "pillar": (
        "benchmarks.pillar",
        "minions rounds workers micro_calls names=variants",
    ),
    "interfaces": ("benchmarks.interfaces_load", "runs loads warmup single_loads"),
    "query": ("benchmarks.query", "minions rounds running stopped timeout live"),
    "pillar-compile": (
        "benchmarks.pillar_compile",
        "fleet_size=fleet requests warmup runs",
    ),
    "router": ("benchmarks.router_functions", "runs requests_per_run=requests"),
}


def plain_keywords(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of benchmark ``name``'s ``run`` from the parsed options."""
    pairs = (word.partition("=") for word in PLAIN_RUNS[name][1].split())
    return {key: getattr(args, option or key) for key, _, option in pairs}


def _run(args: argparse.Namespace) -> Path:
    """Run the benchmark ``args.name``; return its report's path."""
    if args.name == "storm":
        from benchmarks import storm

        return storm.run(storm_options.from_args(args))
    if args.name == "pkgstates":
        from benchmarks.pkgstates import run as pkgstates

        return pkgstates.run(args.pkgstates)
    # imported on demand: each benchmark pulls in Salt's loader or matplotlib
    module = importlib.import_module(PLAIN_RUNS[args.name][0])
    path: Path = module.run(**plain_keywords(args.name, args))
    return path


if __name__ == "__main__":
    sys.exit(main())
