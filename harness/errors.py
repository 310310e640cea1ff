"""The harness's exception tree.

::

    HarnessError                     anything the user can fix; the CLI prints it, exits 2
    ├── salttree.SaltTreeError       salt/UPSTREAM unreadable, the vendored tree unusable
    ├── postgres.PostgresError       embedded server or external DSN
    ├── migrations.MigrationError    a migration file is misnamed or failed to apply
    ├── processes.StartupError       a daemon did not come up (its log tail attached)
    ├── ports.PortInUseError         a requested port is taken
    ├── pillar.files.PillarTreeError files of a pillar tree are unusable
    ├── saltapi.ApiError             a request to salt-api failed (HTTP status kept)
    │   └── saltapi.LoginError       POST /login returned no token
    └── errors.SimulatorError        the simulated minions refused their settings or
                                     failed (any evil_minions.EvilMinionsError)

The packages above the stack derive their own errors from these, so the
same entry helper reports them: the series workflow's ``VendorError`` (a
``SaltTreeError``: sdist, sha256, patch series, export) and ``UpstreamError``
(the PR map, a patch, a base or an option of ``nox -s upstream``).

Errors carry a message that names what failed and what to do about it. The
command lines turn them into one ``error:`` line and exit code 2 through
:func:`harness.entrypoint.run_cli`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class HarnessError(Exception):
    """Base class for every error the harness reports without a traceback."""


class SimulatorError(HarnessError):
    """The simulated minions (evil_minions) refused their settings or failed."""


@contextlib.contextmanager
def simulator_errors() -> Iterator[None]:
    """Re-raise any simulator error inside the block as a :class:`SimulatorError`.

    .. code-block:: python

        with simulator_errors():
            ensure_keys(keys_dir, ids)
    """
    # Imported here: the stack's CLI answers --help and usage errors before Salt loads.
    from evil_minions import EvilMinionsError

    try:
        yield
    except EvilMinionsError as exc:
        raise SimulatorError(f"simulated minions: {exc}") from exc
