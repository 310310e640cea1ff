"""Resolved package entries to Salt SLS data and to SLS text (the export).

One state per managed package, ID ``pkgstate-<policy>-<name>``, in package
name order:

=========================  ===================================================
entry                      SLS
=========================  ===================================================
``nginx``                  ``pkg.installed: [{name: nginx}]``
``nginx>=1.20``            ``pkg.installed: [{name: nginx}, {version: '>=1.20'}]``
``nginx=1.2``              ``pkg.installed: [{name: nginx}, {version: '1.2'}]``
``curl@latest``            ``pkg.latest: [{name: curl}]``
``telnet@removed``         ``pkg.removed: [{name: telnet}]``
``telnet@purged``          ``pkg.purged: [{name: telnet}]``
``telnet@absent<2.0``      ``pkg.removed: [{name: telnet}, {version: '<2.0'}]``
=========================  ===================================================

An exact version is written without ``=`` (Salt's plain form; both mean the
same to ``pkg.installed`` and ``pkg.removed``). ``absent`` uses ``pkg.removed``
with a version condition: Salt's ``pkg.removed`` removes a package only when
an installed version fulfills ``version`` (operators allowed, as in
``pkg.installed``), so no ``onlyif`` guard is needed.

An exact version of an installed package is a lock: when holds are supported
an extra ``pkgstate-held-<name>`` ``pkg.held`` state (``version``, requiring
the install) follows the install.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import yaml

from saltext.pkgstate.model import Entry, Operator, Policy

STATE_ID_PREFIX: Final = "pkgstate-"

_FUNCTION: Final = {
    Policy.INSTALLED: "pkg.installed",
    Policy.LATEST: "pkg.latest",
    Policy.REMOVED: "pkg.removed",
    Policy.PURGED: "pkg.purged",
    Policy.ABSENT: "pkg.removed",
}

SlsData = dict[str, dict[str, list[dict[str, Any]]]]


def state_id(policy: str, name: str) -> str:
    """The stable state ID of one package's state."""
    return f"{STATE_ID_PREFIX}{policy}-{name}"


def _salt_version(op: str, version: str) -> str:
    return version if op == Operator.EQ.value else f"{op}{version}"


def render_sls(
    packages: Mapping[str, Mapping[str, Any]],
    *,
    holds_supported: bool | None = None,
) -> SlsData:
    """SLS data for a resolved ``packages`` mapping (or :func:`packages_of`).

    ``holds_supported``: ``None`` uses each entry's ``hold`` (``True`` adds
    ``pkg.held``); a bool decides for every exact-version entry.
    """
    data: SlsData = {}
    for name in sorted(packages):
        spec = packages[name]
        policy = Policy(spec["policy"])
        op = spec.get("op")
        version = spec.get("version")
        args: list[dict[str, Any]] = [{"name": name}]
        if op and version:
            args.append({"version": _salt_version(op, version)})
        sid = state_id(policy.value, name)
        data[sid] = {_FUNCTION[policy]: args}
        if policy is Policy.INSTALLED and op == Operator.EQ.value:
            hold = (
                spec.get("hold") is True if holds_supported is None else holds_supported
            )
            if hold:
                data[state_id("held", name)] = {
                    "pkg.held": [
                        {"name": name},
                        {"version": version},
                        {"require": [{"pkg": sid}]},
                    ]
                }
    return data


def packages_of(entries: Iterable[Entry]) -> dict[str, dict[str, str]]:
    """A ``packages`` mapping (without ``decided_by``) from revision entries."""
    return {entry.name: entry.as_dict() for entry in entries}


def to_sls_text(data: SlsData, *, header: str | None = None) -> str:
    """SLS data as YAML an operator can read (and Salt's yaml renderer loads)."""
    text: str = yaml.safe_dump(
        data, default_flow_style=False, sort_keys=False, allow_unicode=True
    )
    if data == {}:
        text = "{}\n"
    if header:
        comment = "".join(
            f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines()
        )
        text = comment + text
    return text


def export_revision(
    state: str,
    revision: int,
    entries: Iterable[Entry],
    *,
    holds_supported: bool = False,
) -> str:
    """The SLS text of one state revision, as if it alone reached a minion."""
    data = render_sls(packages_of(entries), holds_supported=holds_supported)
    return to_sls_text(data, header=f"pkgstate {state} revision {revision}")


def export_resolved(minion_id: str, resolved: Mapping[str, Any]) -> str:
    """The SLS text a minion gets: its resolved result rendered."""
    sources = ", ".join(
        f"{s['state']}@{s['revision']}" for s in resolved.get("sources", [])
    )
    header = f"pkgstate for minion {minion_id}\nsources: {sources or 'none'}"
    return to_sls_text(render_sls(resolved["packages"]), header=header)


def canonical(data: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """SLS data in a form that compares as data, whatever wrote it.

    Accepts :func:`render_sls` output, YAML loaded from an export, and
    ``state.show_sls`` output (``{"pkg": [{...}, "installed", {"order": N}],
    "__sls__": ..., "__env__": ...}``). Returns ``{id: {"pkg.<fun>": {arg:
    value}}}``, without Salt's bookkeeping keys (``__*__``, ``order``).
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for sid, body in data.items():
        if not isinstance(body, Mapping):
            continue
        states: dict[str, dict[str, Any]] = {}
        for key, value in body.items():
            if key.startswith("__"):
                continue
            fun = key if "." in key else None
            args: dict[str, Any] = {}
            for item in value or []:
                if isinstance(item, str):
                    fun = f"{key}.{item}"
                elif isinstance(item, Mapping):
                    args.update(item)
            args.pop("order", None)
            if fun is not None:
                states[fun] = args
        out[str(sid)] = states
    return out
