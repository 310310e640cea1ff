"""Package states: which packages a minion should have, kept in PostgreSQL.

A package state is a named, versioned list of per-package entries
(``nginx>=1.20``, ``curl@latest``, ``telnet@purged``). States are assigned to
organizations, groups, grain matches and minion lists; every minion also has
its own implicit state ``minion:<id>``. The library modules have no Salt
imports:

- :mod:`saltext.pkgstate.model`   entries, their syntax, version comparison
- :mod:`saltext.pkgstate.resolve` precedence of states for one minion
- :mod:`saltext.pkgstate.status`  status of managed packages
- :mod:`saltext.pkgstate.render`  resolved entries to SLS data and text
- :mod:`saltext.pkgstate.store`   PostgreSQL access, one module per concern
  behind it (``revisions``, ``assignments``, ``resolution``, ``inventory``,
  ``applied``, on one ``db`` connection)
- :mod:`saltext.pkgstate.schema`  the tables, as migrations shipped here

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__version__: Final = "0.1.0"

#: The directory to add to the master's ``file_roots``: it holds the shipped
#: ``pkgstate/init.sls``.
SLS_ROOT: Final = str(Path(__file__).resolve().parent / "files")

__all__ = ["SLS_ROOT", "__version__"]
