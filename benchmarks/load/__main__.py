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
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks import options
from benchmarks.load.options import LoadOptions
from harness.entrypoint import run_harness_cli


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks.load``: a flag per field of
    :class:`~benchmarks.load.options.LoadOptions`."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.load", description=__doc__
    )
    options.add_arguments(parser, LoadOptions)
    return parser


def parse(argv: Sequence[str] | None) -> LoadOptions:
    """The options ``argv`` gives; a bad one is a usage error (exit 2)."""
    parser = build_parser()
    try:
        return options.from_args(LoadOptions, parser.parse_args(argv))
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; errors are one ``error:`` line and exit 2, Ctrl-C
    or SIGTERM stop everything started and exit 130."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    opts = parse(argv)
    from benchmarks.load import run

    if opts.master_host:
        log_dir = Path(opts.workdir or Path(".saltfleet") / "logs" / "load-workers")
        log_dir.mkdir(parents=True, exist_ok=True)
        return run.run_workers(
            opts.master_host,
            opts.master_port or run.LOCUST_MASTER_PORT,
            opts.workers or 1,
            len(opts.variants) * opts.runs,
            log_dir.resolve(),
        )
    path = run.run(run.LoadSettings.of(opts))
    print(path.read_text())
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
