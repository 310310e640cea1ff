"""The query runner for Salt 3008 masters, as a Salt extension.

``salt-run query.query minion fields=name,os filter='os == "SUSE"'``: chosen
fields of minions, jobs and keys, a status for every value, and filters. The
runner and its library (:mod:`saltext.query.lib`) are built from the
saltfleet patch that proposes them to Salt; :mod:`saltext.query.stock` is
what the extension adds so that a stock master gives an eauth caller only
what its ACL grants.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Final

__version__: Final = "0.1.0"
