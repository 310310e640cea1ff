"""
Serve each minion's resolved package state as pillar data.

.. versionadded:: 0.1.0

The pillar key ``pkgstate`` holds what the shipped ``pkgstate`` SLS applies:

.. code-block:: yaml

    pkgstate:
      packages:
        nginx: {policy: installed, op: ">=", version: "1.20", decided_by: "web"}
        curl: {policy: latest, decided_by: "minion:web1"}
      sources:
        - {state: base, scope: org, target: acme, revision: 3}
        - {state: web, scope: group, target: acme/web, revision: 7}
      digest: "<sha256 of the packages>"

It is resolved from PostgreSQL on every pillar compile, so a highstate right
after a save applies the new revision; nothing is generated at save time.
A minion that no state reaches gets an empty ``packages`` mapping.

Errors fail closed: if the database cannot be reached or refuses the query,
the compile fails (the minion's pillar carries ``_errors`` and a highstate
refuses to run) instead of serving an empty package set that would look like
"manage nothing".

Configuration, in the master config:

.. code-block:: yaml

    pkgstate:
      dsn: "host=db.example.com dbname=salt user=salt"
    ext_pillar:
      - pkgstate: {}
"""

import logging
from typing import Any

from salt.exceptions import SaltException

from saltext.pkgstate import master
from saltext.pkgstate.model import PkgStateError
from saltext.pkgstate.store import PkgStateStoreError

# Salt's loader injects these into the module when it loads it.
__opts__: dict[str, Any]
__context__: dict[str, Any]

log = logging.getLogger(__name__)

__virtualname__ = "pkgstate"
PILLAR_KEY = "pkgstate"


def __virtual__():
    return __virtualname__


def ext_pillar(minion_id, pillar, **kwargs):  # pylint: disable=unused-argument
    """
    The ``pkgstate`` pillar of ``minion_id``; raises on any database error.
    """
    grains = __opts__.get("grains") or None
    try:
        resolved = master.resolve_for_minion(__opts__, minion_id, grains)
    except (PkgStateStoreError, PkgStateError) as exc:
        raise SaltException(
            f"ext_pillar pkgstate: cannot resolve the package state of {minion_id}: {exc}"
        ) from exc
    return {PILLAR_KEY: resolved}
