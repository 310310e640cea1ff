"""``python -m benchmarks NAME [options]``: run one benchmark, write its report."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from benchmarks.storm import options as storm_options
from harness.argtypes import positive
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
    storm_options.add_arguments(p)
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

            path = storm.run(storm_options.from_args(args))
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
