"""The stack: start and stop PostgreSQL, a salt-master from the patched tree,
a real salt-minion and simulated minions; look at and change what runs.

Importing this package does not import Salt (``--help`` answers before Salt is
installed). The stack lives in :mod:`harness.stack`; its command line is
:mod:`harness.cli` (``python -m harness``).
"""
