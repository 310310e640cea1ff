"""
Target matching with Salt's own matcher modules.

A real minion decides whether a publication is meant for it by calling the
matcher named by the publication's ``tgt_type`` (``salt/matchers/*_match.py``)
on its own opts. The matchers accept an ``opts`` argument, so one matcher
loader serves every simulated minion of a process: each minion passes a small
opts-like view (``id``, ``grains``, ``pillar``, ``nodegroups``) instead of
owning a loader. That keeps Salt's semantics (glob, list, pcre, grain,
grain_pcre, pillar, ipcidr, compound with nested engines, nodegroup) without
one ``LazyLoader`` per minion.

Nodegroups: the master expands ``-N group`` into a compound expression before
publishing, so minions only see ``compound``. A publication that still says
``nodegroup`` is handled like a real minion handles it: the nodegroup matcher
gets no nodegroup definitions and does not match.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

log = logging.getLogger(__name__)

#: Keys a publication needs before a minion considers it at all.
_REQUIRED_LOAD_KEYS: Final = ("tgt", "jid", "fun", "arg")
#: Matchers that take a ``delimiter`` argument from the publication.
_DELIMITED: Final = frozenset(
    {"grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact"}
)


def match_view(
    minion_id: str, grains: Mapping[str, Any], pillar: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The opts-like dict a minion hands to the matchers."""
    return {
        "id": minion_id,
        "grains": grains,
        "pillar": dict(pillar or {}),
        "nodegroups": {},
    }


class TargetMatcher:
    """
    Decides, with Salt's matcher modules, which minions a publication targets.

    .. code-block:: python

        matcher = TargetMatcher(salt.config.minion_config(None))
        view = match_view("evil-0001", synthetic_grains("evil-0001"))
        matcher.matches({"tgt": "os_family:Suse", "tgt_type": "grain",
                         "jid": "1", "fun": "test.ping", "arg": []}, view)
    """

    def __init__(self, opts: Mapping[str, Any]) -> None:
        # Imported lazily: salt.loader is heavy and not needed by the pure
        # helpers of this package (grains, keys, replay).
        import salt.loader

        context: MutableMapping[str, Any] = {}
        self._matchers = salt.loader.matchers(dict(opts), context=context)
        # compound_match loads a second matcher loader into __context__ on
        # first use, from the opts it is called with. Those are our small
        # per-minion views, too small for a loader, so hand it this one.
        context["matchers"] = self._matchers

    def matches(self, load: Mapping[str, Any], view: Mapping[str, Any]) -> bool:
        """
        Whether the publication ``load`` targets the minion described by ``view``.

        Invalid publications and unknown target types never match; a matcher
        that raises is logged and counts as no match, as on a real minion
        where the publication would be dropped.
        """
        if any(key not in load for key in _REQUIRED_LOAD_KEYS):
            return False
        tgt_type = load.get("tgt_type", "glob")
        func = self._matchers.get(f"{tgt_type}_match.match")
        if func is None:
            log.debug("no matcher for tgt_type %r", tgt_type)
            return False
        kwargs: dict[str, Any] = {"opts": view}
        if tgt_type in _DELIMITED:
            kwargs["delimiter"] = load.get("delimiter", ":")
        try:
            return bool(func(load["tgt"], **kwargs))
        except Exception:
            log.warning(
                "matcher %s failed on %r for %s",
                tgt_type,
                load["tgt"],
                view.get("id"),
                exc_info=True,
            )
            return False
