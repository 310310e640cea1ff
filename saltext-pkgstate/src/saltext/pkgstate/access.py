"""Which minions the caller of a runner function may act on.

Salt's master authorizes a runner call only as a whole (``@runner`` or
``{"@runner": [names]}``): a runner that publishes jobs or writes what
minions will apply must itself keep an eauth user to the minions its grants
name. Salt passes the runner its caller only as ``__user__``: the eauth
user's name through salt-api or ``salt-run --eauth``, the local user for a
plain ``salt-run`` (the master's own user when run with sudo), and
``UNKNOWN`` for the Python API (:class:`salt.runner.RunnerClient`), which
only code with the master's configuration and keys can use.

The caller's grants are compiled from ``external_auth`` as Salt's
``LoadAuth.get_auth_list`` does for a name. The runner is not told which
eauth backend authenticated the caller, so it counts only the backends
whose grants for the name allow the runner function called (no other could
have let the call through) and refuses a name that such backends give
different grants: a union would give a caller authenticated by one backend
the other's minions. A name with no such grant may act on no minion. A
caller that is the master's own user (or ``root``) and is named in no
``external_auth`` backend is the local operator and unrestricted, as for
Salt's own commands.

A grant for a minion is checked with Salt's ``CkMinions.auth_check`` for
the function the action amounts to: ``pkg.list_pkgs`` to read what a minion
has, ``state.apply`` to change what it will apply, and the functions a
refresh publishes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import salt.utils.minions
import salt.utils.stringutils

from saltext.pkgstate.model import PkgStateError

#: the function that reading a minion's package state or inventory stands for
READ_FUNCTION: Final = "pkg.list_pkgs"
#: the function that changing what a minion will apply stands for
APPLY_FUNCTION: Final = "state.apply"
#: what Salt passes as ``__user__`` when it does not know the caller
UNKNOWN_USER: Final = "UNKNOWN"


class AccessDenied(PkgStateError):
    """The caller may not act on some of the minions a call concerns."""


@dataclass(frozen=True)
class Caller:
    """The caller of a runner function and its grants (None: unrestricted)."""

    name: str
    grants: tuple[Any, ...] | None

    @property
    def restricted(self) -> bool:
        """Whether the caller is limited to the minions its grants name."""
        return self.grants is not None


def _backends(opts: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        str(name): dict(backend)
        for name, backend in (opts.get("external_auth") or {}).items()
        if isinstance(backend, Mapping)
    }


def named(opts: Mapping[str, Any], name: str) -> bool:
    """Whether an ``external_auth`` backend has an entry for ``name`` itself
    (not only the ``*`` catch-all or a group)."""
    return any(
        key != "*"
        and not str(key).endswith("%")
        and salt.utils.stringutils.expr_match(str(key), name)
        for backend in _backends(opts).values()
        for key in backend
    )


def grants_for(opts: Mapping[str, Any], name: str, function: str) -> list[Any]:
    """The grants ``external_auth`` gives ``name`` in the backends whose
    grants allow the runner ``function`` (Salt's ``fill_auth_list`` per
    backend, without groups: the runner cannot ask the backend for them);
    none when no backend does.

    :raises AccessDenied: when two such backends give ``name`` different
        grants.
    """
    ckminions = salt.utils.minions.CkMinions(dict(opts))
    found: dict[str, list[Any]] = {}
    for backend, entries in _backends(opts).items():
        granted = ckminions.fill_auth_list(entries, name, [])
        if granted and ckminions.runner_check(granted, function, {}) is True:
            found[backend] = granted
    if len({repr(granted) for granted in found.values()}) > 1:
        raise AccessDenied(
            f"user {name!r} has different grants in the external_auth backends "
            f"{', '.join(found)} and the runner is not told which one "
            "authenticated the call; give the user one set of grants; nothing "
            "was done"
        )
    return next(iter(found.values()), [])


def caller(opts: Mapping[str, Any], user: str | None, function: str) -> Caller:
    """Who called (``__user__``) the runner ``function`` (``pkgstate.set``)
    and what it may do.

    :raises AccessDenied: see :func:`grants_for`.
    """
    name = user or UNKNOWN_USER
    local = name in {UNKNOWN_USER, "root", opts.get("user") or "root"}
    if local and not named(opts, name):
        return Caller(name, None)
    return Caller(name, tuple(grants_for(opts, name, function)))


def refused(
    opts: Mapping[str, Any],
    who: Caller,
    functions: Sequence[str],
    minions: Iterable[str],
) -> list[str]:
    """Of ``minions``, those ``who`` may not run all of ``functions`` on."""
    wanted = sorted(set(minions))
    if not who.restricted:
        return []
    ckminions = salt.utils.minions.CkMinions(dict(opts))
    grants = list(who.grants or ())
    return [
        minion
        for minion in wanted
        if not all(
            ckminions.auth_check(grants, fun, [], minion, "list", minions=[minion])
            for fun in functions
        )
    ]


def require(
    opts: Mapping[str, Any],
    who: Caller,
    functions: Sequence[str],
    minions: Iterable[str],
    what: str,
) -> None:
    """Raise :class:`AccessDenied` naming the minions ``who`` may not run
    ``functions`` on for ``what``; nothing is done then."""
    denied = refused(opts, who, functions, minions)
    if denied:
        shown = ", ".join(denied[:10]) + (
            f" and {len(denied) - 10} more" if len(denied) > 10 else ""
        )
        raise AccessDenied(
            f"user {who.name!r} may not {what} minion(s) {shown}: its eauth "
            f"grants do not allow {', '.join(functions)} there; nothing was done"
        )


def require_everywhere(
    opts: Mapping[str, Any], who: Caller, everyone: Iterable[str], what: str
) -> None:
    """Changes that reach minions through organizations, groups, grain
    matches or named states need the right to apply on every minion."""
    require(opts, who, [APPLY_FUNCTION], everyone, what)
