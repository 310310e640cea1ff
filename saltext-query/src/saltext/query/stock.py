"""Who called the query runner, on a master that does not say.

A master with the query runner built in passes the runner the ACL of a
caller authenticated by eauth (``__auth_list__``). A stock 3008 master passes
only the caller's name (``__user__``), so the extension compiles the ACL the
way the master did, from ``external_auth``, and refuses what it cannot tell:

- a name with entries in ``external_auth`` (by name, and the
  ``*`` catch-all, as Salt's ``fill_auth_list`` matches them) gets what
  those entries grant, and sees only the minions, keys and jobs they allow;
  entries for groups (``name%``) do not count: the runner cannot ask the
  backend which groups the caller is in;
- only backends whose grants allow ``query.query`` count (the master let
  the call through with one of them); the same name with different such
  grants in two backends is refused: the master does not say which backend
  authenticated the call;
- a name without entries is the master's own only if it is the master's
  user, ``root``, a ``sudo_`` user (``salt-run`` under sudo), the reactor
  or ``UNKNOWN`` (Salt's Python API, which needs the master's configuration
  and keys); anyone else is refused, e.g. an account whose grants come from
  a group or from a backend's own ``acl`` function (``rest``).

Name no eauth account like the master's own users: the runner cannot tell
the two apart.
"""

from __future__ import annotations

from typing import Any

import salt.client.mixins
import salt.utils.minions
import salt.utils.stringutils
from salt.exceptions import SaltInvocationError

import saltext.query.lib.acl

#: besides the master's user: ``root``, the reactor, and the name Salt's
#: Python API (``RunnerClient``) runs under
OWN_USERS = frozenset({"root", "Reactor", "UNKNOWN"})


#: the runner function whose callers this module places
RUNNER_FUNCTION = "query.query"


def master_passes_acl() -> bool:
    """Whether this master hands runners the caller's ACL itself."""
    return "__auth_list__" in salt.client.mixins.CLIENT_INTERNAL_KEYWORDS


def caller(
    opts: dict[str, Any], user: str | None, auth_list: list[Any] | None
) -> saltext.query.lib.acl.Caller:
    """The caller of a query with the ACL that limits what it sees."""
    if not master_passes_acl():
        auth_list = acl_of(opts, user)
    return saltext.query.lib.acl.Caller(opts, user=user, auth_list=auth_list)


def masters_own(opts: dict[str, Any], user: str) -> bool:
    """Whether ``user`` is the master itself rather than an eauth account."""
    return user in OWN_USERS or user == opts.get("user") or user.startswith("sudo_")


def _backends(opts: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    configured = opts.get("external_auth") or {}
    return [
        (name, dict(entries))
        for name, entries in sorted(configured.items())
        if isinstance(entries, dict)
    ]


def _named(opts: dict[str, Any], user: str) -> bool:
    """Whether an entry names ``user`` as Salt matches names (not ``*``)."""
    return any(
        entry != "*"
        and not str(entry).endswith("%")
        and salt.utils.stringutils.expr_match(str(entry), user)
        for _, entries in _backends(opts)
        for entry in entries
    )


def acl_of(opts: dict[str, Any], user: str | None) -> list[Any] | None:
    """
    The ACL of ``user`` from ``external_auth``; ``None`` for the master's own
    rights.

    :raises SaltInvocationError: when the caller cannot be told, saying why.
    """
    if not user:
        raise SaltInvocationError(
            "the query runner cannot tell who called it (no user name), "
            "and shows nothing to an unknown caller"
        )
    if masters_own(opts, user) and not _named(opts, user):
        # the operator on the master; a "*" entry is for eauth accounts
        return None
    ckminions = salt.utils.minions.CkMinions(opts)
    found: dict[str, list[Any]] = {}
    for backend, entries in _backends(opts):
        granted = ckminions.fill_auth_list(entries, user, [])
        # only a backend whose grants allow this runner can have let the
        # call through
        if granted and ckminions.runner_check(granted, RUNNER_FUNCTION, {}) is True:
            found[backend] = granted
    grants = {repr(granted) for granted in found.values()}
    if len(grants) == 1:
        return next(iter(found.values()))
    if grants:
        raise SaltInvocationError(
            f"user {user!r} has different grants in the external_auth backends "
            f"{', '.join(found)}, and this master does not tell the query "
            "runner which one authenticated the call; give the user one set "
            "of grants, or use a master with the query runner built in"
        )
    raise SaltInvocationError(
        f"user {user!r} has no grants in external_auth that allow "
        f"{RUNNER_FUNCTION} and that the query runner can read (grants through "
        "a group do not reach a runner), and is not "
        "the master's own user; it shows nothing to a caller whose rights it "
        "cannot tell: give the user an external_auth entry by name, or run "
        f"salt-run as {opts.get('user') or 'root'!r}"
    )
