"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import options
from benchmarks.names import BENCHMARKS
from benchmarks.pkgstates.options import PkgstatesOptions
from benchmarks.plain_options import (
    ClientDrainOptions,
    InterfacesOptions,
    JobCacheOptions,
    MinionsOptions,
    PillarCompileOptions,
    PillarOptions,
    QueryOptions,
    RouterOptions,
)
from benchmarks.storm.options import StormOptions
from harness.entrypoint import run_harness_cli


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m benchmarks``; returns the exit code."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="name", required=True, metavar="NAME")
    for name, (_, options_class) in RUNS.items():
        options.add_arguments(
            sub.add_parser(name, help=BENCHMARKS[name]), options_class
        )
    args = parser.parse_args(argv)
    module_name, options_class = RUNS[args.name]
    try:
        value = options.from_args(options_class, args)
    except argparse.ArgumentTypeError as exc:
        sub.choices[args.name].error(str(exc))
    # imported only now: each benchmark pulls in Salt's loader or matplotlib
    path: Path = importlib.import_module(module_name).run(value)
    print(path.read_text())
    print(f"report: {path}")
    return 0


#: each benchmark: the module whose ``run`` takes its options, and their class
RUNS: Final[dict[str, tuple[str, type[Any]]]] = {
    "minions": ("benchmarks.minions", MinionsOptions),
    "pillar": ("benchmarks.pillar", PillarOptions),
    "interfaces": ("benchmarks.interfaces_load", InterfacesOptions),
    "storm": ("benchmarks.storm.run", StormOptions),
    "query": ("benchmarks.query", QueryOptions),
    "pkgstates": ("benchmarks.pkgstates.run", PkgstatesOptions),
    "pillar-compile": ("benchmarks.pillar_compile", PillarCompileOptions),
    "router": ("benchmarks.router_functions", RouterOptions),
    "client-drain": ("benchmarks.client_drain", ClientDrainOptions),
    "job-cache": ("benchmarks.job_cache", JobCacheOptions),
}


if __name__ == "__main__":
    sys.exit(main())
