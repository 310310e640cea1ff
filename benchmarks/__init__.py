"""Benchmarks: each runs its comparison side by side in one process run and
writes a Markdown report (with a PNG plot where it helps) to ``results/``.

Run them with ``nox -s bench -- <name>``; names are listed by
``python -m benchmarks --help``.
"""
