"""``python -m tour`` (``nox -s demo``): the product tour on a stack of its own.

A stack with a fleet, every scenario, a report with plots, then everything
started is stopped. A user error is one ``error:`` line and exit 2; a failed
scenario is exit 1.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from harness import argtypes
from harness.cli import add_stack_options, stack_settings
from harness.entrypoint import run_harness_cli
from tour.options import DEFAULT_REPORT_DIR, DemoOptions

#: the command that runs this CLI from the README's set-up, for usage
TOUR = "nox -s demo --"
LOGS = Path(".saltfleet") / "logs" / "demo"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m tour``: the stack's options and the tour's."""
    parser = argparse.ArgumentParser(
        prog=TOUR,
        description="the product tour: a stack with a fleet, every scenario, "
        "a report, stop",
    )
    add_stack_options(parser)
    defaults = DemoOptions()
    parser.set_defaults(minions=defaults.minions)
    for action in parser._actions:
        if action.dest == "minions":  # the stack's option, with the tour's default
            action.type = argtypes.positive
            action.help = (
                f"simulated minions beside the real one (default {defaults.minions}; "
                "1000 for full scale)"
            )
    parser.add_argument(
        "--storm-jobs",
        type=argtypes.positive,
        default=defaults.storm_jobs,
        help=f"jobs in the rate-limiting storm (default {defaults.storm_jobs})",
    )
    parser.add_argument(
        "--pillar-sample",
        type=argtypes.positive,
        default=defaults.pillar_sample,
        help="simulated minions whose pillar.items is checked against the rows "
        f"(default {defaults.pillar_sample})",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_REPORT_DIR,
        help=f"where report.md and its plots go (default {DEFAULT_REPORT_DIR}); "
        "replaced on every run",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m tour``; returns the exit code."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    # Salt is imported by the tour itself, after the options were checked
    from tour.run import check_options, run_tour

    args = build_parser().parse_args(argv)
    options = DemoOptions(
        minions=args.minions,
        storm_jobs=args.storm_jobs,
        pillar_sample=args.pillar_sample,
        report_dir=args.report_dir,
    )
    check_options(options)
    logs = LOGS.resolve()
    shutil.rmtree(logs, ignore_errors=True)
    code = run_tour(options, stack_settings(args, logs_dir=logs))
    print(f"logs: {logs}")
    return code
