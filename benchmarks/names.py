"""The benchmarks ``python -m benchmarks`` runs: each name with its one-line help.

This module imports nothing, so ``noxfile.py`` can load it before the
benchmarks' dependencies (Salt, PostgreSQL, matplotlib ...) are installed and
refuse an unknown name in a second instead of after the install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

BENCHMARKS: Final = {
    "minions": "start-up, fan-out, footprint of simulated minions",
    "pillar": "file pillars vs PostgreSQL (4 variants) + micro",
    "interfaces": "loading all execution modules: pristine 3008.3, interfaces off, on",
    "storm": "a storm of jobs, rate limiting off vs on",
    "query": "query runner vs cache.grains; names; live",
    "pkgstates": "package states: PostgreSQL + ext_pillar vs per-minion SLS files",
    "pillar-compile": "master CPU per _pillar request: pristine 3008.3 vs the series",
    "router": "pool router CPU per request, functions routes vs without",
    "client-drain": "a LocalClient's lag on a busy bus: pristine 3008.3 vs the series",
    "job-cache": "master CPU per return stored in the job cache: pristine 3008.3 vs the series",
}


def unknown_benchmark(args: Sequence[str]) -> str | None:
    """
    The error for ``python -m benchmarks ARGS`` if it names no benchmark, else None.

    Only the name is checked; options (and ``--help``) are left to the CLI.

    .. code-block:: python

        unknown_benchmark(["storm", "--jobs", "5"])  # None
        unknown_benchmark(["strom"])  # "unknown benchmark 'strom': choose ..."
    """
    if not args or args[0].startswith("-") or args[0] in BENCHMARKS:
        return None
    return f"unknown benchmark {args[0]!r}: choose from {', '.join(BENCHMARKS)}"
