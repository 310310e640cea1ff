"""The patch-series workflow: vendor Salt, export the series, build and check
the pull requests to Salt, run upstream's tests.

::

    vendor.py          salt/src = the pinned sdist as a git repository plus
                       patches/series; export-patches back, byte for byte
    cli.py             python -m series vendor | export-patches
    upstream/          python -m series.upstream: the series as pull requests
    timing_reruns.py   upstream's tests, rerunning those only its
                       slow-callback check failed
    pytest_plugins/    the plugin timing_reruns loads into upstream's pytest

It sits on the stack package (:mod:`harness`: its errors, its command-line
entry, where the Salt tree lives) and imports neither the tour nor the
benchmarks. Importing it does not import Salt: ``vendor`` runs before any Salt
is installed.
"""
