"""``python -m series``: vendor Salt and export the patch series.

``vendor`` unpacks the pinned sdist into ``salt/src`` and applies
``patches/series`` (``nox -s vendor``); ``export-patches`` writes the commits
after the upstream tag back to ``patches/`` (``nox -s export-patches``). A
user error is one ``error:`` line and exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from harness.entrypoint import run_harness_cli
from series import vendor


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m series`` and its two sub-commands."""
    parser = argparse.ArgumentParser(prog="python -m series", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser(
        "vendor", help="download, verify and unpack Salt; apply patches/series"
    )
    p.add_argument(
        "--force", action="store_true", help="discard unexported work in salt/src"
    )
    sub.add_parser("export-patches", help="write salt/src commits to patches/")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m series``; returns the exit code."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "vendor":
        vendor.vendor(force=args.force)
    else:
        vendor.export_patches()
    return 0
