"""
Add the ``pkgstate`` SLS to the highstate of every minion with managed
packages.

.. versionadded:: 0.1.0

A minion whose resolved package state manages at least one package gets
``pkgstate`` in its ``base`` top; the SLS (shipped in
``saltext.pkgstate.SLS_ROOT``, which must be in ``file_roots``) reads the
``pkgstate`` pillar of the ext_pillar.

If the database cannot be reached, ``pkgstate`` is added anyway: the
ext_pillar then fails the pillar compile too, and the highstate refuses to
run instead of silently skipping the package state.

Configuration, in the master config:

.. code-block:: yaml

    master_tops:
      pkgstate: {}
"""

import logging
from typing import Any

from saltext.pkgstate import master
from saltext.pkgstate.model import PkgStateError
from saltext.pkgstate.store import PkgStateStoreError

# Salt's loader injects these into the module when it loads it.
__opts__: dict[str, Any]
__context__: dict[str, Any]

log = logging.getLogger(__name__)

__virtualname__ = "pkgstate"
SLS = "pkgstate"
SALTENV = "base"


def __virtual__():
    return __virtualname__


def top(**kwargs):
    """
    ``{"base": ["pkgstate"]}`` for a minion with managed packages, else ``{}``.
    """
    opts = kwargs.get("opts") or {}
    minion_id = opts.get("id")
    if not minion_id:
        return {}
    grains = kwargs.get("grains") or None
    try:
        resolved = master.resolve_for_minion(__opts__, minion_id, grains)
    except (PkgStateStoreError, PkgStateError) as exc:
        log.error(
            "master_tops pkgstate: cannot resolve the package state of %s (%s); "
            "adding %s so that the highstate fails with the pillar error",
            minion_id,
            exc,
            SLS,
        )
        return {SALTENV: [SLS]}
    if not resolved["packages"]:
        return {}
    return {SALTENV: [SLS]}
