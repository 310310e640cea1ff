"""Start and stop a saltfleet stack: PostgreSQL, a salt-master from the patched
tree, a real salt-minion and simulated minions; run scenarios against it.

Importing this package does not import Salt: ``vendor`` runs before any Salt is
installed. The stack lives in :mod:`harness.stack`.
"""
