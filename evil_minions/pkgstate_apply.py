"""
Package states on a simulated minion: the pillar's ``pkgstate`` applied to its package set.

A real minion renders the shipped ``pkgstate`` SLS from
``pillar['pkgstate']['packages']`` (one ``pkg.*`` state per package, ID
``pkgstate-<policy>-<name>``) and runs it. A simulated minion skips the
rendering and does what each state would do to its
:class:`~evil_minions.packages.PackageSet`, returning chunks shaped as Salt's
``pkg`` states return them (name, result, changes, comment), so the master's
job cache and the ``highstate`` outputter see a normal run:

=========================  ===================  ===============================
entry                      Salt state           simulated effect
=========================  ===================  ===============================
installed                  ``pkg.installed``    newest candidate if missing
installed ``op`` version   ``pkg.installed``    newest candidate meeting the spec
                                                if the installed one does not
latest                     ``pkg.latest``       the candidate if newer/missing
removed / purged           ``pkg.removed`` /    removed if installed
                           ``pkg.purged``
absent ``op`` version      ``pkg.removed``      removed if the installed version
                                                meets the spec
=========================  ===================  ===============================

An exact version whose entry says ``hold: true`` (the provider supports
holds) adds a ``pkg.held`` state ``pkgstate-held-<name>``, as the shipped SLS
renders it.

With ``test=True`` nothing changes; results are ``None`` where something
would change and ``changes`` say what, as Salt reports a dry run.

.. code-block:: python

    run = apply_package_states(pkgs, {"vim": {"policy": "latest"}}, test=True)
    run["pkg_|-pkgstate-latest-vim_|-vim_|-latest"]["result"]  # None or True
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any, Final

from evil_minions.packages import OPERATORS, PackageSet, compare_versions, satisfies
from evil_minions.states import state_key

#: The shipped SLS's name, the ``__sls__`` of every chunk.
SLS: Final = "pkgstate"
#: policy -> the ``pkg`` state function it renders to
STATE_FUNCTIONS: Final = {
    "installed": "installed",
    "latest": "latest",
    "removed": "removed",
    "purged": "purged",
    "absent": "removed",
}


@dataclasses.dataclass
class _Outcome:
    """What one state does: its return, and the package change it makes."""

    result: bool | None
    comment: str
    changes: dict[str, Any] = dataclasses.field(default_factory=dict)
    install: str | None = None
    remove: bool = False
    #: False for a state Salt did not run because a requisite failed
    ran: bool = True


def state_id(policy: str, name: str) -> str:
    """The state ID of ``name``'s entry, as in the shipped SLS."""
    return f"pkgstate-{policy}-{name}"


def managed_packages(pillar: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """``pillar['pkgstate']['packages']``, or ``{}`` when the pillar has none."""
    section = (pillar or {}).get("pkgstate")
    packages = section.get("packages") if isinstance(section, Mapping) else None
    return dict(packages) if isinstance(packages, Mapping) else {}


def apply_package_states(
    packages: PackageSet,
    entries: Mapping[str, Mapping[str, Any]],
    *,
    test: bool = False,
    duration: float = 0.0,
    first_run_num: int = 0,
    started: datetime.datetime | None = None,
) -> dict[str, dict[str, Any]]:
    """
    Apply ``entries`` (``{name: resolved entry}``) to ``packages``; return the state chunks.

    Chunks run in name order starting at ``first_run_num`` and share
    ``duration`` seconds. Without ``test`` the package set changes once, for
    all entries together, as one package-manager transaction would.
    """
    installed = packages.installed()
    clock = started or datetime.datetime.now()
    millis = round(duration * 1000.0 / max(1, len(entries)), 3)
    run: dict[str, dict[str, Any]] = {}
    install: dict[str, str] = {}
    remove: list[str] = []
    hold: list[str] = []
    for name in sorted(entries):
        entry = entries[name]
        policy = str(entry.get("policy", ""))
        outcome = _decide(packages, installed, name, entry, test)
        if outcome.install is not None:
            install[name] = outcome.install
        if outcome.remove:
            remove.append(name)
        chunks = [(policy, STATE_FUNCTIONS.get(policy, policy or "installed"), outcome)]
        if _holds(entry):
            held = _held_after(packages, name, outcome, test)
            hold += [name] if held.changes else []
            chunks.append(("held", "held", held))
        for kind, function, result in chunks:
            run[_chunk_key(kind, function, name)] = _chunk(
                kind, name, result, first_run_num + len(run), millis, clock
            )
            clock += datetime.timedelta(milliseconds=millis)
    if not test:
        packages.update(install, remove)
        packages.hold(hold)
    return run


def _holds(entry: Mapping[str, Any]) -> bool:
    return (
        entry.get("hold") is True
        and entry.get("policy") == "installed"
        and entry.get("op") in ("=", "==")
    )


def _held_after(
    packages: PackageSet, name: str, installed: _Outcome, test: bool
) -> _Outcome:
    """The ``pkg.held`` state, which requires the ``pkg.installed`` one: Salt
    does not run it when that failed and says which requisite did."""
    if installed.result is False:
        return _Outcome(
            False,
            f"One or more requisite failed: {SLS}.{state_id('installed', name)}",
            ran=False,
        )
    return _held(packages, name, test)


def _held(packages: PackageSet, name: str, test: bool) -> _Outcome:
    if packages.is_held(name):
        return _Outcome(True, f"Package {name} is already set to be held.")
    changes = {name: {"new": "hold", "old": ""}}
    if test:
        return _Outcome(None, f"Package {name} is set to be held.", changes)
    return _Outcome(True, f"Package {name} is now being held.", changes)


def _chunk_key(kind: str, function: str, name: str) -> str:
    return state_key("pkg", state_id(kind, name), name, function)


def _chunk(
    kind: str,
    name: str,
    outcome: _Outcome,
    run_num: int,
    millis: float,
    clock: datetime.datetime,
) -> dict[str, Any]:
    sid = state_id(kind, name)
    chunk: dict[str, Any] = {
        "__id__": sid,
        "__run_num__": run_num,
        "__sls__": SLS,
        "changes": outcome.changes,
        "comment": outcome.comment,
        "duration": millis,
        "name": name,
        "result": outcome.result,
        "start_time": clock.strftime("%H:%M:%S.%f"),
    }
    if not outcome.ran:
        chunk["__state_ran__"] = False
    return chunk


def _decide(
    packages: PackageSet,
    installed: Mapping[str, str],
    name: str,
    entry: Mapping[str, Any],
    test: bool,
) -> _Outcome:
    policy = entry.get("policy")
    current = installed.get(name)
    op, version = entry.get("op"), entry.get("version")
    if policy == "installed":
        return _installed(packages, name, current, op, version, test)
    if policy == "latest":
        return _latest(packages, name, current, test)
    if policy in ("removed", "purged"):
        return _removal(name, current, str(policy), test)
    if policy == "absent":
        if op not in OPERATORS or not version:
            return _Outcome(False, f"absent needs an operator and a version: {entry}")
        matches = current is not None and satisfies(current, str(op), str(version))
        return _removal(name, current if matches else None, "remove", test)
    return _Outcome(False, f"unknown package policy {policy!r} for {name}")


def _installed(
    packages: PackageSet,
    name: str,
    current: str | None,
    op: Any,
    version: Any,
    test: bool,
) -> _Outcome:
    spec = op is not None and version is not None
    if spec and op not in OPERATORS:
        return _Outcome(False, f"unknown version operator {op!r} for {name}")
    if current is not None and (not spec or satisfies(current, str(op), str(version))):
        if spec:
            return _Outcome(
                True,
                "All specified packages are already installed and are at the "
                "desired version",
            )
        return _Outcome(True, f"Package {name} is already installed")
    offered = packages.repo_versions(name)
    if not offered and packages.style != "deb":
        # Salt's pre-flight check (pkg.check_db, which apt lacks) names the
        # package only.
        return _Outcome(
            False,
            "The following package(s) were not found, and no possible matches "
            f"were found in the package db: {name}",
        )
    if spec:
        offered = [v for v in offered if satisfies(v, str(op), str(version))]
    if not offered:
        return _Outcome(False, _install_refused(packages.style, name, op, version))
    target = offered[-1]
    return _change_to(name, current, target, test, "installed/updated")


def _install_refused(style: str, name: str, op: Any, version: Any) -> str:
    """The comment of a ``pkg.installed`` the package manager refused: Salt
    reports the manager's error lines (apt's words for deb, yum's otherwise)."""
    if style != "deb":
        error = f"No package {name}{op or ''}{version or ''} available."
    elif version is None:
        error = f"E: Unable to locate package {name}"
    else:
        error = f"E: Version '{version}' for '{name}' was not found"
    return (
        "Problem encountered installing package(s). Additional info follows:"
        f"\n\nerrors:\n    - {error}"
    )


def _latest(
    packages: PackageSet, name: str, current: str | None, test: bool
) -> _Outcome:
    candidate = packages.candidate(name)
    if candidate is None or (
        current is not None and compare_versions(candidate, current) <= 0
    ):
        if current is None:
            return _Outcome(False, f"No information found for '{name}'.")
        # an orphan (no candidate) or newer than the repositories: up to date
        return _Outcome(True, f"Package {name} is already up-to-date")
    return _change_to(name, current, candidate, test, "installed/upgraded")


def _change_to(
    name: str, current: str | None, target: str, test: bool, verb: str
) -> _Outcome:
    changes = {name: {"new": target, "old": current or ""}}
    if test:
        return _Outcome(
            None, f"The following packages would be {verb}: {name}", changes
        )
    if verb == "installed/updated":
        comment = f"The following packages were installed/updated: {name}"
    else:
        comment = f"The following packages were successfully {verb}: {name}"
    return _Outcome(True, comment, changes, install=target)


def _removal(name: str, current: str | None, action: str, test: bool) -> _Outcome:
    """``action`` is ``removed``/``purged`` (policy) or ``remove`` (absent)."""
    verb = "purge" if action == "purged" else "remove"
    if current is None:
        return _Outcome(
            True,
            "None of the targeted packages are installed"
            + (" or partially installed" if verb == "purge" else ""),
        )
    if test:
        return _Outcome(
            None,
            f"The following packages will be {verb}d: {name}.",
            {name: {"new": f"{verb}d", "old": ""}},
        )
    return _Outcome(
        True,
        f"All targeted packages were {verb}d.",
        {name: {"new": "", "old": current}},
        remove=True,
    )
