"""Package states on the stack's master: the options that switch them on.

The ``saltext.pkgstate`` extension (``saltext-pkgstate/``) is found by Salt
through its loader entry point; what it needs from the master is
configuration: its shipped SLS tree in ``file_roots``, the database under
``pkgstate:dsn``, and its ext_pillar, master_tops and engine enabled.
:func:`master_options` adds exactly that to a rendered master configuration.
"""

from __future__ import annotations

from typing import Any, Final

from harness.errors import HarnessError
from harness.postgres import ConnectionInfo

#: the name of every piece (runner, ext_pillar, master_tops, engine)
MODULE: Final = "pkgstate"


def sls_root() -> str:
    """Where ``saltext.pkgstate`` ships its ``pkgstate`` SLS tree."""
    try:
        from saltext.pkgstate import SLS_ROOT
    except ImportError:
        raise HarnessError(
            "package states need the saltext.pkgstate extension: "
            "pip install -e ./saltext-pkgstate (nox sessions install it)"
        ) from None
    return str(SLS_ROOT)


def master_options(
    opts: dict[str, Any], postgres: ConnectionInfo | None
) -> dict[str, Any]:
    """The options to update ``opts`` (a rendered master configuration) with
    so that the master serves package states from ``postgres``."""
    if postgres is None:
        raise HarnessError("package states need the stack's PostgreSQL")
    file_roots = {env: list(paths) for env, paths in opts["file_roots"].items()}
    file_roots.setdefault("base", []).append(sls_root())
    return {
        "file_roots": file_roots,
        MODULE: {"dsn": postgres.dsn},
        "ext_pillar": [*opts.get("ext_pillar", []), {MODULE: {}}],
        "master_tops": {**opts.get("master_tops", {}), MODULE: {}},
        "engines": [*opts.get("engines", []), {MODULE: {}}],
    }
