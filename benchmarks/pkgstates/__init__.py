"""Package states (issue 13): save-to-visible, compile time and a highstate
round, PostgreSQL + ext_pillar side by side with per-minion SLS files.

    python -m benchmarks pkgstates --minions 1000   (or nox -s bench -- pkgstates ...)
"""
