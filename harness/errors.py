"""The harness's exception tree.

::

    HarnessError                 anything the user can fix; the CLI prints it, exits 2
    ├── vendor.VendorError       sdist, sha256, patch series, export
    ├── postgres.PostgresError   embedded server or external DSN
    ├── processes.StartupError   a daemon did not come up (its log tail attached)
    └── ports.PortInUseError     a requested port is taken

Errors carry a message that names what failed and what to do about it.
"""


class HarnessError(Exception):
    """Base class for every error the harness reports without a traceback."""
