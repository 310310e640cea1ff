"""
Manage package states: which packages minions should have, kept in
PostgreSQL and applied by highstates.

.. versionadded:: 0.1.0

A package state is a named list of entries, one per package; every save is a
new revision, and nothing is ever edited in place::

    salt-run pkgstate.set web nginx 'openssl>=3.0' curl@latest telnet@removed
    salt-run pkgstate.assign web group=acme/web
    salt-run pkgstate.show minion=web1
    salt-run pkgstate.export minion=web1
    salt-run pkgstate.history web
    salt-run pkgstate.rollback web revision=1

Entries: ``nginx`` (installed, any version), ``nginx>=1.20`` (operators
``<``, ``<=``, ``=``/``==``, ``>=``, ``>``), ``curl@latest``,
``telnet@removed`` (configuration kept), ``telnet@purged`` (configuration
removed), ``telnet@absent<2.0`` (removed while the installed version
matches). On the ``salt-run`` command line ``nginx=1.2`` is read as an
option: write ``nginx==1.2``, or pass ``packages='{nginx: "1.2"}'``.

Every minion also has its own state ``minion:<id>``, always the most
specific. Per package, organization states < group states (ascending group
id) < grain-match states < states assigned to a minion list < the minion's
own state; ``show minion=<id>`` says which state decided each package.

Bad input (an unknown operator such as ``=>``, an operator with ``latest``, a
version that does not parse, a package named twice, a missing group, a grain
match that does not compile) returns ``{"error": ..., "retcode": 1}`` and
``salt-run`` exits non-zero; nothing stored changes.

Callers authenticated by eauth (salt-api, ``salt-run --eauth``) act only
on the minions their ``external_auth`` grants let them target: reading a
minion's state or inventory needs ``pkg.list_pkgs`` there, saving its own
state or assigning a state to it needs ``state.apply``, and ``refresh``
needs the functions it publishes on every targeted minion. Named states and
assignments to organizations, groups and grain matches reach every minion:
changing them needs ``state.apply`` on every accepted minion. A refused
call names the minions and changes nothing. The master's own user, running
``salt-run`` without eauth, is not limited.

Configuration, in the master config:

.. code-block:: yaml

    pkgstate:
      dsn: "host=db.example.com dbname=salt user=salt"

The tables are created by ``salt-run pkgstate.migrate`` (or the
``saltext-pkgstate-migrate`` command).
"""

import collections
import contextvars
import logging
from typing import Any

import salt.cache
import salt.client
import salt.key
import salt.utils.args
from salt.exceptions import SaltException, SaltInvocationError

from saltext.pkgstate import access, master, render, schema
from saltext.pkgstate.model import (
    PkgStateError,
    entries_from_mapping,
    minion_state_name,
    parse_entry,
    validate_revision,
)
from saltext.pkgstate.store import PackageStateStore, PkgStateStoreError

# Salt's loader injects these into the module when it loads it.
__opts__: dict[str, Any]
__context__: dict[str, Any]

log = logging.getLogger(__name__)

__virtualname__ = "pkgstate"
__func_alias__ = {"import_": "import", "set_": "set"}

LIST_FUNCTION = "pkg.list_pkgs"
CANDIDATES_FUNCTION = "pkg.list_repo_pkgs"
#: the policies whose status depends on the repositories' candidates
CANDIDATE_POLICIES = frozenset({"installed", "latest"})
DEFAULT_TIMEOUT = 60
#: the runner function being called (``pkgstate.set``), whose grants count
#: for the caller; :func:`_call` sets it for the call
_FUNCTION: contextvars.ContextVar[str] = contextvars.ContextVar("pkgstate_function")


def __virtual__():
    return __virtualname__


def _error(message):
    # "retcode" in the return is what makes salt-run exit non-zero.
    __context__["retcode"] = 1
    return {"error": message, "retcode": 1}


def _call(function, action, kwargs):
    """Run ``action(store)`` for the runner ``function`` (its name without
    the module) on a store that records the caller as author; every bad
    input or database problem becomes an error return."""
    token = _FUNCTION.set(f"{__virtualname__}.{function}")
    try:
        return _store_call(action, kwargs)
    finally:
        _FUNCTION.reset(token)


def _store_call(action, kwargs):
    # Salt injects the caller (the eauth user through salt-api) as __user__
    author = globals().get("__user__") or kwargs.get("__pub_user") or None
    if author == "UNKNOWN":
        author = None
    try:
        with PackageStateStore(master.dsn_from_opts(__opts__), author=author) as store:
            return action(store)
    except (PkgStateError, PkgStateStoreError, SaltException) as exc:
        return _error(str(exc))


def _caller(function=None):
    """The caller Salt named (``__user__``) and its grants for the runner
    ``function`` (default: the one :func:`_call` runs)."""
    return access.caller(
        __opts__, globals().get("__user__"), function or _FUNCTION.get()
    )


def _may(functions, minions, what):
    """Refuse the call unless the caller may run ``functions`` on
    ``minions`` (a list, or a function that lists them, called only for a
    restricted caller)."""
    who = _caller()
    if who.restricted:
        listed = minions() if callable(minions) else minions
        access.require(__opts__, who, functions, listed, what)


def _may_change_state(name, what):
    """A minion's own state changes that minion; any other state (and the
    assignments to organizations, groups and grain matches) may reach every
    minion."""
    if name.startswith("minion:"):
        _may([access.APPLY_FUNCTION], [name[len("minion:") :]], what)
    else:
        _may([access.APPLY_FUNCTION], _accepted_minions, f"{what} {name!r} on")


def _known(minion):
    """Refuse a minion the master has no accepted key of, as Salt's own
    commands do for a target that matches nothing."""
    if minion not in _accepted_minions():
        raise SaltInvocationError(
            f"minion {minion!r} is unknown: the master has no accepted key for it "
            "(salt-key -L lists the keys)"
        )


def _options(kwargs):
    """The caller's keyword arguments without Salt's ``__pub_*`` ones."""
    return salt.utils.args.clean_kwargs(**kwargs)


def _refuse_options(kwargs):
    """Refuse keyword arguments the function does not know.

    ``nginx=1.2`` and ``nginx=>1.2`` reach a runner as options (``nginx``);
    they are read back as entries to say what is wrong with them.
    """
    stray = _options(kwargs)
    for key, value in sorted(stray.items()):
        if value is None or value == "":
            # e.g. nginx=>1 through salt-api: YAML read ">1" as a block scalar
            raise SaltInvocationError(
                f"unknown option {key!r} (with no value): pass entries as "
                "arguments or as packages=[...]"
            )
        text = f"{key}={value}"
        parse_entry(text)  # raises, naming the entry, e.g. for "=>"
        raise SaltInvocationError(
            f"{text!r} was read as an option, not an entry: on the salt-run command "
            f"line write {key}=={value} or use packages='{{{key}: \"{value}\"}}'"
        )


def _entries(entries, packages):
    """Entries from positional entry strings and ``packages`` (a list of
    entry strings or a ``{name: spec}`` mapping)."""
    items = list(entries)
    if packages is None:
        pass
    elif isinstance(packages, dict):
        items.extend(entries_from_mapping(packages))
    elif isinstance(packages, (list, tuple)):
        items.extend(packages)
    elif isinstance(packages, str):
        items.extend(p for p in packages.split(",") if p.strip())
    else:
        raise SaltInvocationError(
            "packages must be a list of entries or a mapping of package to "
            f"spec, got {packages!r}"
        )
    return validate_revision(items)


def _grains(minion_id):
    """The minion's grains as the master last cached them, or None."""
    try:
        return salt.cache.factory(__opts__).fetch("grains", minion_id) or None
    except Exception as exc:  # pylint: disable=broad-except
        log.debug("no cached grains for %s: %s", minion_id, exc)
        return None


def _revision(rev):
    """A stored revision as plain data."""
    return {
        "state": rev.state,
        "revision": rev.revision,
        "created_at": rev.created_at.isoformat() if rev.created_at else None,
        "author": rev.author,
        "comment": rev.comment,
        "packages": {e.name: str(e) for e in rev.entries},
    }


def _assignment(assignment):
    return {
        "state": assignment.state,
        "scope": assignment.scope.value,
        "target": assignment.target,
        "id": assignment.id,
    }


def _number(value, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        raise SaltInvocationError(f"{what} must be a revision number, got {value!r}")
    return value


def _minion_list(minions):
    if minions is None:
        return None
    if isinstance(minions, str):
        return [m.strip() for m in minions.split(",") if m.strip()]
    if isinstance(minions, (list, tuple)):
        return [str(m) for m in minions]
    raise SaltInvocationError(
        f"minions must be a list or a comma-separated string, got {minions!r}"
    )


def set_(name, *entries, packages=None, comment=None, **kwargs):
    """
    Save the complete list of entries of a package state as its new
    revision; a named state that does not exist yet is created. Saves at the
    same time become consecutive revisions, in the order the database took
    them.

    Packages left out are no longer managed by the state. The minion's own
    state is named ``minion:<id>``.

    name
        The state: ``[a-z0-9][a-z0-9_.-]*`` or ``minion:<minion id>``

    entries
        Entry strings: ``nginx``, ``'nginx>=1.20'``, ``nginx==1.2``,
        ``curl@latest``, ``telnet@removed``, ``telnet@purged``,
        ``'telnet@absent<2.0'``

    packages
        More entries: a list of entry strings, or a mapping of package name
        to spec (``{nginx: ">=1.20", curl: latest, vim: null}``)

    comment
        Stored with the revision

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.set web nginx 'openssl>=3.0' curl@latest telnet@removed
        salt-run pkgstate.set minion:web1 packages='{vim: null, nano: removed}'
        salt-run pkgstate.set empty-for-now
    """

    def action(store):
        _refuse_options(kwargs)
        checked = _entries(entries, packages)
        _may_change_state(name, "save a package state for")
        # one transaction: concurrent first saves become consecutive revisions
        rev = store.save_revision(name, checked, comment=comment, create=True)
        return _revision(rev)

    return _call("set", action, kwargs)


def update(name, *entries, packages=None, unmanage=None, comment=None, **kwargs):
    """
    Change some entries of a package state (a new revision from the current
    one); the others stay as they are.

    unmanage
        Packages the state stops managing (a list or ``a,b``)

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.update web 'nginx>=1.22' unmanage=telnet
    """

    def action(store):
        _refuse_options(kwargs)
        checked = _entries(entries, packages)
        dropped = _minion_list(unmanage) or []
        _may_change_state(name, "change the package state for")
        rev = store.update_packages(name, checked, unmanage=dropped, comment=comment)
        return _revision(rev)

    return _call("update", action, kwargs)


def _resolved_for(store, minion, revision):
    """The package state resolved for ``minion``, if the caller may read it."""
    if revision is not None:
        raise SaltInvocationError("revision= applies to a state, not to minion=")
    _may([access.READ_FUNCTION], [minion], "read the package state of")
    _known(minion)
    return store.resolve_for_minion(minion, _grains(minion))


def show(name=None, revision=None, minion=None, **kwargs):
    """
    Show a state's current (or given) revision and its assignments, the
    resolved package state of a minion with the state that decided each
    package, or, with no argument, every state.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.show web
        salt-run pkgstate.show web revision=2
        salt-run pkgstate.show minion=web1
        salt-run pkgstate.show
    """

    def action(store):
        _refuse_options(kwargs)
        if name is not None and minion is not None:
            raise SaltInvocationError("give a state name or minion=<id>, not both")
        if minion is not None:
            return _resolved_for(store, minion, revision)
        if name is None:
            return {
                s.name: {"revision": s.revision, "kind": s.kind}
                for s in store.list_states()
            }
        out = _revision(store.show(name, _number(revision, "revision")))
        if not name.startswith("minion:"):
            out["assignments"] = [_assignment(a) for a in store.assignments(name)]
        return out

    return _call("show", action, kwargs)


def history(name, **kwargs):
    """
    Every revision of a state, oldest first.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.history web
    """

    def action(store):
        _refuse_options(kwargs)
        return [_revision(rev) for rev in store.history(name)]

    return _call("history", action, kwargs)


def diff(name, old=None, new=None, **kwargs):
    """
    Packages added, removed and changed between two revisions of a state;
    by default between the previous and the current revision.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.diff web
        salt-run pkgstate.diff web old=1 new=3
    """

    def action(store):
        _refuse_options(kwargs)
        a = _number(old, "old")
        b = _number(new, "new")
        if a is None:
            current = store.show(name, b).revision
            if current < 2:
                raise SaltInvocationError(
                    f"state {name!r} has only revision {current}: nothing to compare "
                    "with"
                )
            a = current - 1
        return store.diff(name, a, b).as_dict()

    return _call("diff", action, kwargs)


def rollback(name, revision, comment=None, **kwargs):
    """
    Save a new revision equal to an earlier one (the history is kept).

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.rollback web revision=2
    """

    def action(store):
        _refuse_options(kwargs)
        number = _number(revision, "revision")
        _may_change_state(name, "roll back the package state for")
        return _revision(store.rollback(name, number, comment=comment))

    return _call("rollback", action, kwargs)


def assign(name, org=None, group=None, grain=None, minions=None, **kwargs):
    """
    Assign a named state to an organization, a group (id, ``org/name`` or a
    unique name), a grain match (``G@os_family:Debian``, ``P@os:(Debian|Ubuntu)``)
    or a list of minions. All targets are checked before any is stored.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.assign base org=acme
        salt-run pkgstate.assign web group=acme/web
        salt-run pkgstate.assign debian-tools grain='G@os_family:Debian'
        salt-run pkgstate.assign canary minions=web1,web2
    """

    def action(store):
        _refuse_options(kwargs)
        _may_assign(name, org, group, grain, minions, "assign")
        made = store.assign(
            name, org=org, group=group, grain=grain, minions=_minion_list(minions)
        )
        return {"assigned": [_assignment(a) for a in made]}

    return _call("assign", action, kwargs)


def _may_assign(name, org, group, grain, minions, verb):
    """Assigning to a list of minions needs ``state.apply`` on them; to an
    organization, a group or a grain match, on every minion."""
    if org is None and group is None and grain is None:
        listed = _minion_list(minions) or []
        _may([access.APPLY_FUNCTION], listed, f"{verb} package state {name!r} to")
    else:
        _may(
            [access.APPLY_FUNCTION],
            _accepted_minions,
            f"{verb} package state {name!r} by organization, group or grain on",
        )


def unassign(name, org=None, group=None, grain=None, minions=None, **kwargs):
    """
    Remove assignments of a named state; each target given must be assigned.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.unassign web group=acme/web
    """

    def action(store):
        _refuse_options(kwargs)
        _may_assign(name, org, group, grain, minions, "unassign")
        count = store.unassign(
            name, org=org, group=group, grain=grain, minions=_minion_list(minions)
        )
        return {"unassigned": count}

    return _call("unassign", action, kwargs)


def export(name=None, revision=None, minion=None, **kwargs):
    """
    Print a state revision, or what a minion gets, as a plain SLS file: the
    same SLS data as ``salt <minion> state.show_sls pkgstate``.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.export web
        salt-run pkgstate.export web revision=2 > web-2.sls
        salt-run pkgstate.export minion=web1
    """

    def action(store):
        _refuse_options(kwargs)
        if (name is None) == (minion is None):
            raise SaltInvocationError("give a state name or minion=<id>")
        if minion is not None:
            resolved = _resolved_for(store, minion, revision)
            return render.export_resolved(minion, resolved)
        rev = store.show(name, _number(revision, "revision"))
        return render.export_revision(rev.state, rev.revision, rev.entries)

    return _call("export", action, kwargs)


def _cmd(tgt, tgt_type, fun, args, timeout):
    """``{minion: return}`` of the minions that answered ``fun`` with a mapping."""
    client = salt.client.LocalClient(mopts=__opts__)
    try:
        returns = client.cmd(
            tgt,
            fun,
            arg=list(args),
            tgt_type=tgt_type,
            timeout=timeout,
            full_return=True,
        )
    finally:
        client.destroy()
    return {
        minion: ret["ret"]
        for minion, ret in (returns or {}).items()
        if isinstance(ret, dict)
        and isinstance(ret.get("ret"), dict)
        and ret.get("retcode", 0) == 0
    }


def _list_pkgs(tgt, tgt_type, timeout):
    """``{minion: pkg.list_pkgs}`` of the minions that answered."""
    return _cmd(tgt, tgt_type, LIST_FUNCTION, (), timeout)


def _store_candidates(store, minions, timeout):
    """Look up the candidates of each minion's managed ``installed`` and
    ``latest`` packages (one ``pkg.list_repo_pkgs`` publication for all of
    them) and store them; returns the minions whose candidates could not be
    looked up (no answer in time)."""
    resolved = store.resolve_all({m: _grains(m) for m in minions})
    wanted = {
        minion: sorted(
            name
            for name, spec in result["packages"].items()
            if spec.get("policy") in CANDIDATE_POLICIES
        )
        for minion, result in resolved.items()
    }
    wanted = {minion: names for minion, names in wanted.items() if names}
    if not wanted:
        return []
    names = sorted({name for names in wanted.values() for name in names})
    answered = _cmd(list(wanted), "list", CANDIDATES_FUNCTION, names, timeout)
    stored = set()
    for minion, repo in sorted(answered.items()):
        available = {name: repo.get(name) or [] for name in wanted.get(minion, ())}
        if available and store.write_available(minion, available):
            stored.add(minion)
    return sorted(set(wanted) - stored)


def import_(minion, name=None, exact=False, timeout=DEFAULT_TIMEOUT, **kwargs):
    """
    Save a minion's installed packages (``pkg.list_pkgs``) as a revision of
    a state: its own state ``minion:<id>`` by default, or ``name`` (created
    if needed). The inventory is stored too.

    exact
        Pin each package to its installed version (``=VERSION``)

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.import web1
        salt-run pkgstate.import web1 name=web-baseline exact=True
    """

    def action(store):
        _refuse_options(kwargs)
        target = name or minion_state_name(minion)
        _may([LIST_FUNCTION], [minion], "import the packages of")
        _may_change_state(target, "save a package state for")
        answered = _list_pkgs(minion, "list", timeout)
        if minion not in answered:
            raise SaltInvocationError(
                f"minion {minion} did not return {LIST_FUNCTION} within {timeout}s; nothing was "
                "imported"
            )
        rev = store.import_packages(target, answered[minion], exact=bool(exact))
        # candidates are left to pkgstate.refresh and the engine: looking up
        # every installed package here would make the import slow
        store.write_inventory(minion, answered[minion])
        out = _revision(rev)
        out["packages"] = len(rev.entries)
        return out

    return _call("import", action, kwargs)


def refresh(tgt="*", tgt_type="glob", timeout=DEFAULT_TIMEOUT, **kwargs):
    """
    Refresh the stored inventory of the targeted minions now (the engine
    does it on every ``pkgset`` beacon event), with the candidates of their
    managed ``installed`` and ``latest`` packages (``pkg.list_repo_pkgs``;
    minions that do not list them in time are named in
    ``candidates_unknown``). A minion that does not answer ``pkg.list_pkgs``
    makes the call fail after the others are stored.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.refresh web1
        salt-run pkgstate.refresh 'G@os_family:Debian' tgt_type=compound
    """

    def action(store):
        _refuse_options(kwargs)
        expected = _targeted(tgt, tgt_type)
        _may([LIST_FUNCTION, CANDIDATES_FUNCTION], expected, "refresh")
        answered = _list_pkgs(tgt, tgt_type, timeout)
        for minion, pkgs in sorted(answered.items()):
            store.write_inventory(minion, pkgs)
        unknown = _store_candidates(store, sorted(answered), timeout)
        silent = sorted(set(expected) - set(answered))
        out: dict[str, Any] = {"refreshed": sorted(answered)}
        if unknown:
            # the installed packages are stored; only orphan-kept is unknown
            out["candidates_unknown"] = unknown
        if silent:
            out["no_answer"] = silent
            __context__["retcode"] = 1
            out["retcode"] = 1
        return out

    return _call("refresh", action, kwargs)


def _targeted(tgt, tgt_type):
    import salt.utils.minions  # pylint: disable=import-outside-toplevel

    found = salt.utils.minions.CkMinions(__opts__).check_minions(tgt, tgt_type)
    return found.get("minions", [])


def inventory(minion, **kwargs):
    """
    A minion's stored inventory (installed packages and their versions).

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.inventory web1
    """

    def action(store):
        _refuse_options(kwargs)
        _may([access.READ_FUNCTION], [minion], "read the inventory of")
        stored = store.inventory(minion)
        if stored is None:
            raise SaltInvocationError(
                f"no inventory of {minion} is stored: run salt-run pkgstate.refresh "
                f"{minion}"
            )
        out = {
            "minion": minion,
            "refreshed_at": stored.refreshed_at.isoformat(),
            "packages": stored.packages,
        }
        if stored.available is not None:
            out["available"] = stored.available
        return out

    return _call("inventory", action, kwargs)


def _accepted_minions():
    return sorted(salt.key.get_key(__opts__).list_status("accepted").get("minions", []))


def status(minion=None, **kwargs):
    """
    Status of every managed package of a minion: ``consistent``,
    ``pending`` (saved, not applied yet), ``inconsistent`` (changed outside
    Salt), ``orphan-kept`` (installed and managed, no candidate in the
    minion's repositories) or ``unknown`` (no inventory). A minion the
    master has no accepted key for is an error. Without a minion: the
    counts of every accepted minion the caller may read, and their total.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.status web1
        salt-run pkgstate.status
    """

    def action(store):
        _refuse_options(kwargs)
        if minion is not None:
            _may([access.READ_FUNCTION], [minion], "read the package status of")
            _known(minion)
            return store.status(minion, _grains(minion))
        total: collections.Counter[str] = collections.Counter()
        minions = {}
        accepted = _accepted_minions()
        # a restricted caller counts only the minions it may read
        hidden = set(
            access.refused(__opts__, _caller(), [access.READ_FUNCTION], accepted)
        )
        for minion_id in (m for m in accepted if m not in hidden):
            counts = store.status(minion_id, _grains(minion_id))["counts"]
            if counts:
                minions[minion_id] = counts
                total.update(counts)
        return {"minions": minions, "total": dict(sorted(total.items()))}

    return _call("status", action, kwargs)


def migrate(**kwargs):
    """
    Create or update the extension's tables in the configured database: the
    migrations the installed version ships that the database lacks, each in
    its own transaction. Running it again changes nothing. Only the master's
    own user may run it, not an eauth caller.

    CLI Example:

    .. code-block:: bash

        salt-run pkgstate.migrate
    """
    try:
        _refuse_options(kwargs)
        if _caller(f"{__virtualname__}.migrate").restricted:
            raise SaltInvocationError(
                "pkgstate.migrate changes the database schema: only the master's "
                "own user may run it"
            )
        applied = schema.migrate(master.dsn_from_opts(__opts__))
    except (PkgStateError, PkgStateStoreError, SaltException) as exc:
        return _error(str(exc))
    return {
        "applied": [m.filename for m in applied],
        "version": max(m.version for m in schema.shipped()),
    }
