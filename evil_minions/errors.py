"""
The simulator's exception tree: one base class, one subclass per module.

::

    EvilMinionsError                  anything a user can fix; the CLI prints it
    ├── config.ConfigError            a bad setting (also a ValueError); exit 2
    ├── keys.KeyStoreError            a key cannot be generated, read or seeded
    ├── supervisor.FleetError         the fleet cannot start (run dir, sockets)
    ├── status.FleetStoppedError      the fleet failed or stopped while awaited
    │                                 (also a RuntimeError)
    ├── control.ControlError          a running fleet cannot be reached
    └── replay.ReplayError            a replay file cannot be read or written

``python -m evil_minions`` reports a ``ConfigError`` with exit code 2 (the
command line was wrong) and every other one with exit code 1 (the command
line was right but the run failed), each as one ``evil_minions: error: ...``
line (see :mod:`evil_minions.entrypoint`). The harness turns any of them into
its own ``harness.errors.SimulatorError``. Messages name what failed and what
to do about it.
"""

from __future__ import annotations


class EvilMinionsError(Exception):
    """Base class for every error the simulator reports without a traceback."""
