"""The package state model: entries, their text syntax, validation, versions.

One entry says what one package should be on a minion::

    nginx               installed, any version
    nginx>=1.20         installed, version condition (<, <=, =, ==, >=, >)
    nginx@latest        the newest candidate (no operator allowed)
    telnet@removed      removed, configuration kept
    telnet@purged       removed with its configuration
    telnet@absent<2.0   removed while the installed version matches

A revision is a set of entries with at most one entry per package. Every bad
input raises :class:`PkgStateError` (a ``ValueError``) whose message names the
offending entry and says what is allowed.

Grain matches use the syntax of Salt's compound matcher: ``G@key:glob`` (the
``G@`` is optional) or ``P@key:regex``; nested keys are separated by ``:``
(``G@ip_interfaces:eth0:10.*``), matching is case-insensitive and a regex is
anchored at the start, as in Salt.

Version comparison (:func:`compare_versions`) follows rpm's ``rpmvercmp`` on
``[epoch:]version[-release]``: alternating digit and letter segments, digits
beat letters, ``~`` sorts before anything (also the end of the string). It is
used on the master for status only; the minion's package manager decides when
states are applied. Limits: Debian orders ``+``/``.`` and letters slightly
differently from rpm in rare cases (e.g. ``1.0+a`` vs ``1.0.a``).
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final


class PkgStateError(ValueError):
    """Bad input to the package state model or store; the message names it."""


class Policy(enum.StrEnum):
    """What a package should be on the minion."""

    INSTALLED = "installed"
    LATEST = "latest"
    REMOVED = "removed"
    PURGED = "purged"
    ABSENT = "absent"


class Operator(enum.StrEnum):
    """A version condition's operator (``==`` is accepted and stored as ``=``)."""

    LT = "<"
    LE = "<="
    EQ = "="
    GE = ">="
    GT = ">"


#: Policies that take a version condition (``absent`` requires one).
POLICIES_WITH_VERSION: Final = frozenset({Policy.INSTALLED, Policy.ABSENT})

_OPERATORS: Final = {op.value: op for op in Operator} | {"==": Operator.EQ}
_ALLOWED_OPS: Final = "<, <=, =, ==, >=, >"
_ALLOWED_POLICIES: Final = ", ".join(p.value for p in Policy)
_SYNTAX: Final = (
    "NAME, NAME<op>VERSION, NAME@latest, NAME@removed, NAME@purged "
    "or NAME@absent<op>VERSION"
)

_NAME_RE: Final = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*(?::[A-Za-z0-9_]+)?")
_VERSION_RE: Final = re.compile(
    r"[0-9][A-Za-z0-9.+~_-]*|[0-9]+:[A-Za-z0-9.+~:_-]+",
)
_ENTRY_RE: Final = re.compile(
    r"""
    (?P<name>[^\s@<>=!]+)
    \s*(?:@\s*(?P<policy>[^\s<>=!]*))?
    \s*(?:(?P<op>[<>=!]+)\s*(?P<version>.*))?
    """,
    re.VERBOSE | re.DOTALL,
)
_STATE_NAME_RE: Final = re.compile(r"[a-z0-9][a-z0-9_.-]*")
#: Prefix of a minion's implicit state name.
MINION_STATE_PREFIX: Final = "minion:"
STATE_NAME_MAX: Final = 255
#: The longest package name accepted. Neither rpm nor dpkg states a limit,
#: but both keep a file per package named after it (the package file
#: NAME-VERSION-RELEASE.ARCH.rpm, dpkg's info/NAME:ARCH.list), and file
#: names end at 255 bytes: a longer name cannot be a package.
PACKAGE_NAME_MAX: Final = 200
#: The longest version condition accepted (the same file names hold it).
VERSION_MAX: Final = 128
#: The longest entry text: a name, a policy, an operator and a version.
ENTRY_MAX: Final = PACKAGE_NAME_MAX + VERSION_MAX + 16


@dataclass(frozen=True, slots=True)
class Entry:
    """What one package should be: a policy and, maybe, a version condition."""

    name: str
    policy: Policy
    op: Operator | None = None
    version: str | None = None

    def __str__(self) -> str:
        """The entry in the text syntax (``nginx>=1.20``, ``curl@latest``)."""
        if self.policy is Policy.INSTALLED:
            head = self.name
        else:
            head = f"{self.name}@{self.policy.value}"
        if self.op is None:
            return head
        return f"{head}{self.op.value}{self.version}"

    def as_dict(self) -> dict[str, str]:
        """``{"policy": ..., "op": ..., "version": ...}`` without empty keys."""
        out = {"policy": self.policy.value}
        if self.op is not None and self.version is not None:
            out["op"] = self.op.value
            out["version"] = self.version
        return out

    @property
    def version_spec(self) -> str | None:
        """The condition in Salt's version-spec syntax (``>=1.20``), or None."""
        if self.op is None or self.version is None:
            return None
        return f"{self.op.value}{self.version}"


@dataclass(frozen=True, slots=True)
class Revision:
    """One immutable saved revision of a package state."""

    state: str
    revision: int
    entries: tuple[Entry, ...]
    created_at: datetime | None = None
    author: str | None = None
    comment: str | None = None

    @property
    def packages(self) -> dict[str, Entry]:
        """The entries by package name."""
        return {e.name: e for e in self.entries}


def _preview(text: str) -> str:
    """``text`` for a message: quoted, and cut short if it is long."""
    return (
        repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"
    )


def _check_version(entry_text: str, version: str) -> str:
    version = version.strip()
    if not version:
        raise PkgStateError(f"{entry_text!r}: the version after the operator is empty")
    if len(version) > VERSION_MAX:
        raise PkgStateError(
            f"version {_preview(version)} is longer than {VERSION_MAX} characters"
        )
    if not _VERSION_RE.fullmatch(version):
        raise PkgStateError(
            f"{entry_text!r}: version {version!r} does not parse: a version "
            "starts with a digit (or an epoch 'N:') and has only letters, "
            "digits and . + ~ : _ -"
        )
    return version


def check_version(version: str) -> str:
    """``version`` stripped, or :class:`PkgStateError` if it does not parse."""
    return _check_version(version, version)


def check_package_name(name: str) -> str:
    """``name`` if it is a valid package name, else :class:`PkgStateError`."""
    if not name or not name.strip():
        raise PkgStateError("empty package name")
    if len(name) > PACKAGE_NAME_MAX:
        raise PkgStateError(
            f"package name {_preview(name)} is longer than {PACKAGE_NAME_MAX} "
            "characters"
        )
    if not _NAME_RE.fullmatch(name):
        raise PkgStateError(
            f"bad package name {name!r}: a package name starts with a letter, "
            "digit, _ or + and has only letters, digits and . _ + - "
            "(and an optional :arch suffix)"
        )
    return name


def parse_entry(text: str) -> Entry:
    """Parse one entry in the text syntax (see the module docstring).

    >>> parse_entry("nginx>=1.20")
    Entry(name='nginx', policy=<Policy.INSTALLED: 'installed'>, op=<Operator.GE: '>='>, version='1.20')
    """
    if not isinstance(text, str):
        raise PkgStateError(
            f"entry {text!r}: expected a string like {_SYNTAX} (quote versions in YAML)"
        )
    stripped = text.strip()
    if not stripped:
        raise PkgStateError("empty entry: expected " + _SYNTAX)
    if len(stripped) > ENTRY_MAX:
        # before any message quotes it: the refusal must stay readable
        raise PkgStateError(
            f"entry {_preview(stripped)} is longer than {ENTRY_MAX} characters: "
            f"a package name has at most {PACKAGE_NAME_MAX}, a version at most "
            f"{VERSION_MAX}"
        )
    match = _ENTRY_RE.fullmatch(stripped)
    if not match:
        raise PkgStateError(f"{text!r} does not parse: expected {_SYNTAX}")
    name = match["name"]
    try:
        check_package_name(name)
    except PkgStateError as exc:
        raise PkgStateError(f"{text!r}: {exc}") from None
    policy_word = match["policy"]
    if policy_word is None:
        policy = Policy.INSTALLED
    else:
        try:
            policy = Policy(policy_word.lower())
        except ValueError:
            raise PkgStateError(
                f"{text!r}: unknown policy {policy_word!r}: allowed are "
                f"{_ALLOWED_POLICIES}"
            ) from None
    op_text = match["op"]
    if op_text is None:
        if policy is Policy.ABSENT:
            raise PkgStateError(
                f"{text!r}: absent needs a version condition (absent<2.0); "
                "to remove any version use @removed or @purged"
            )
        return Entry(name, policy)
    op = _OPERATORS.get(op_text)
    if op is None:
        raise PkgStateError(
            f"{text!r}: unknown operator {op_text!r}: allowed are {_ALLOWED_OPS}"
        )
    if policy is Policy.LATEST:
        raise PkgStateError(
            f"{text!r}: an operator cannot be combined with latest; "
            f"use {name}@latest or {name}{op.value}VERSION"
        )
    if policy not in POLICIES_WITH_VERSION:
        raise PkgStateError(
            f"{text!r}: {policy.value} takes no version condition; use "
            f"{name}@{policy.value}, or {name}@absent{op.value}VERSION to "
            "remove only matching versions"
        )
    version = _check_version(text, match["version"] or "")
    return Entry(name, policy, op, version)


def entry_from_mapping(name: str, spec: Any) -> Entry:
    """An entry from the ``{name: spec}`` form of YAML/JSON input.

    ``spec`` is one of: None or ``""`` (installed, any version); a policy
    (``"latest"``, ``"absent<2.0"``); a condition (``">=1.20"``); a bare
    version (``"1.2-3"``, meaning ``=1.2-3``); or a mapping with ``policy``,
    ``op`` and ``version`` keys (``version`` may carry the operator).
    """
    if not isinstance(name, str):
        raise PkgStateError(f"package name {name!r} is not a string")
    if spec is None or spec == "":
        return parse_entry(name)
    if isinstance(spec, Mapping):
        return _entry_from_dict(name, spec)
    if not isinstance(spec, str):
        raise PkgStateError(
            f"{name}: {spec!r}: expected a string (quote versions in YAML: "
            f"'{name}: \">=1.20\"') or a mapping with policy/op/version"
        )
    spec = spec.strip()
    if spec[:1] in ("@", "<", ">", "=", "!"):
        return parse_entry(name + spec)
    if spec[:1].isdigit():
        return parse_entry(f"{name}={spec}")
    return parse_entry(f"{name}@{spec}")


def _entry_from_dict(name: str, spec: Mapping[Any, Any]) -> Entry:
    unknown = set(spec) - {"policy", "op", "version"}
    if unknown:
        raise PkgStateError(
            f"{name}: unknown keys {sorted(map(str, unknown))}: allowed are "
            "policy, op, version"
        )
    policy = spec.get("policy") or "installed"
    op = spec.get("op") or ""
    version = spec.get("version")
    if version is None:
        version = ""
    if not all(isinstance(v, str) for v in (policy, op, version)):
        raise PkgStateError(
            f"{name}: policy, op and version must be strings (quote versions)"
        )
    if version and not op and version[:1] in ("<", ">", "=", "!"):
        condition = version
    elif version and not op:
        condition = "=" + version
    else:
        condition = op + version
    return parse_entry(f"{name}@{policy}{condition}")


def validate_revision(entries: Iterable[Entry | str]) -> tuple[Entry, ...]:
    """Entries of one revision, sorted by name, or one error naming every problem.

    Strings are parsed with :func:`parse_entry`. Two entries for one package
    are an error, even when they are equal.
    """
    problems: list[str] = []
    seen: dict[str, Entry] = {}
    for item in entries:
        try:
            entry = item if isinstance(item, Entry) else parse_entry(item)
        except PkgStateError as exc:
            problems.append(str(exc))
            continue
        if entry.name in seen:
            problems.append(
                f"two entries for package {entry.name!r} in one revision: "
                f"{str(seen[entry.name])!r} and {str(entry)!r}"
            )
            continue
        seen[entry.name] = entry
    if problems:
        raise PkgStateError("; ".join(problems))
    return tuple(seen[name] for name in sorted(seen))


def entries_from_mapping(packages: Mapping[str, Any]) -> tuple[Entry, ...]:
    """Entries of one revision from a ``{name: spec}`` mapping."""
    problems: list[str] = []
    entries: list[Entry] = []
    for name, spec in packages.items():
        try:
            entries.append(entry_from_mapping(name, spec))
        except PkgStateError as exc:
            problems.append(str(exc))
    if problems:
        raise PkgStateError("; ".join(problems))
    return validate_revision(entries)


def check_state_name(name: str) -> str:
    """``name`` if valid: ``[a-z0-9][a-z0-9_.-]*`` or ``minion:<minion id>``."""
    if not isinstance(name, str) or not name:
        raise PkgStateError("empty state name")
    if len(name) > STATE_NAME_MAX:
        raise PkgStateError(f"state name longer than {STATE_NAME_MAX} characters")
    if name.startswith(MINION_STATE_PREFIX):
        minion_id = name[len(MINION_STATE_PREFIX) :]
        if not minion_id or minion_id != minion_id.strip():
            raise PkgStateError(f"bad state name {name!r}: minion:<minion id>")
        return name
    if not _STATE_NAME_RE.fullmatch(name):
        raise PkgStateError(
            f"bad state name {name!r}: a state name starts with a lowercase "
            "letter or digit and has only a-z 0-9 _ . - "
            "(or is minion:<minion id>)"
        )
    return name


def minion_state_name(minion_id: str) -> str:
    """The name of a minion's implicit state."""
    return MINION_STATE_PREFIX + minion_id


# --- grain matches -----------------------------------------------------------


@dataclass(frozen=True)
class GrainMatch:
    """A compiled grain match (``G@os:Ubuntu``, ``P@os:(Debian|Ubuntu)``)."""

    expression: str
    regex: bool
    _splits: tuple[tuple[tuple[str, ...], Any], ...] = field(repr=False, compare=False)

    def matches(self, grains: Mapping[str, Any]) -> bool:
        """True if the grains match, as Salt's ``G@``/``P@`` matcher decides."""
        for keys, pattern in self._splits:
            value: Any = grains
            for key in keys:
                if not isinstance(value, Mapping) or key not in value:
                    value = _MISSING
                    break
                value = value[key]
            if value is _MISSING:
                continue
            values = value if isinstance(value, list) else [value]
            for item in values:
                if isinstance(item, (Mapping, list)):
                    continue
                text = str(item).lower()
                if self.regex:
                    if pattern is not None and pattern.match(text):
                        return True
                elif fnmatch.fnmatchcase(text, pattern):
                    return True
        return False


_MISSING: Final = object()


def compile_grain_match(text: str) -> GrainMatch:
    """Compile ``[G@]key[:subkey...]:glob`` or ``P@key[:subkey...]:regex``.

    Like Salt, a value may itself contain ``:``; every split of the expression
    into keys and pattern is tried. A regex must compile.
    """
    if not isinstance(text, str):
        raise PkgStateError(f"grain match {text!r} is not a string")
    expression = text.strip()
    body = expression
    regex = False
    if body[:2] in ("G@", "P@"):
        regex = body[:2] == "P@"
        body = body[2:]
    elif re.match(r"^[A-Za-z]@", body):
        raise PkgStateError(
            f"grain match {text!r}: only G@ (glob) and P@ (regex) are allowed"
        )
    parts = body.split(":")
    if len(parts) < 2 or not parts[0] or not ":".join(parts[1:]):
        raise PkgStateError(
            f"grain match {text!r} does not compile: expected "
            "G@key:glob or P@key:regex (nested keys as key:subkey:pattern)"
        )
    splits: list[tuple[tuple[str, ...], Any]] = []
    errors: list[str] = []
    for i in range(1, len(parts)):
        keys = tuple(parts[:i])
        if any(not k for k in keys):
            continue
        pattern = ":".join(parts[i:])
        if not pattern:
            continue
        if regex:
            try:
                splits.append((keys, re.compile(pattern, re.IGNORECASE)))
            except re.error as exc:
                errors.append(f"{pattern!r}: {exc}")
                splits.append((keys, None))
        else:
            splits.append((keys, pattern.lower()))
    if regex and not any(p is not None for _, p in splits):
        raise PkgStateError(f"grain match {text!r} does not compile: regex {errors[0]}")
    if not splits:
        raise PkgStateError(
            f"grain match {text!r} does not compile: empty key or pattern"
        )
    return GrainMatch(expression, regex, tuple(splits))


# --- versions ----------------------------------------------------------------

_SEGMENT_RE: Final = re.compile(r"~|\^|[0-9]+|[A-Za-z]+")


def split_evr(version: str) -> tuple[int, str, str | None]:
    """``(epoch, version, release)``; epoch 0 and release None when absent."""
    epoch = 0
    rest = version
    head, sep, tail = version.partition(":")
    if sep and head.isdigit():
        epoch = int(head)
        rest = tail
    upstream, dash, release = rest.rpartition("-")
    if not dash:
        return epoch, rest, None
    return epoch, upstream, release


def _vercmp(a: str, b: str) -> int:
    """rpm's segment comparison of two version (or release) strings."""
    if a == b:
        return 0
    sa = _SEGMENT_RE.findall(a)
    sb = _SEGMENT_RE.findall(b)
    for x, y in zip(sa, sb, strict=False):
        if x == "~" or y == "~":
            if x != y:
                return -1 if x == "~" else 1
            continue
        if x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        if x.isdigit():
            xi, yi = int(x), int(y)
            if xi != yi:
                return 1 if xi > yi else -1
        elif x != y:
            return 1 if x > y else -1
    if len(sa) == len(sb):
        return 0
    longer, sign = (sa, 1) if len(sa) > len(sb) else (sb, -1)
    # a trailing ~ sorts before the end of the string
    return -sign if longer[min(len(sa), len(sb))] == "~" else sign


def compare_versions(a: str, b: str, *, release: bool = True) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``.

    With ``release=False`` the releases are ignored.
    """
    ea, va, ra = split_evr(a)
    eb, vb, rb = split_evr(b)
    if ea != eb:
        return 1 if ea > eb else -1
    cmp = _vercmp(va, vb)
    if cmp or not release:
        return cmp
    return _vercmp(ra or "", rb or "")


def version_satisfies(installed: str, op: Operator, wanted: str) -> bool:
    """True if the installed version meets the condition ``op wanted``.

    A condition without a release (``>=1.20``) ignores the installed release;
    an ``=`` condition without an epoch ignores the installed epoch (as Salt's
    ``pkg.installed`` does).
    """
    w_release = split_evr(wanted)[2]
    if op is Operator.EQ and ":" not in wanted:
        _, i_version, i_release = split_evr(installed)
        installed = i_version if i_release is None else f"{i_version}-{i_release}"
    cmp = compare_versions(installed, wanted, release=w_release is not None)
    if op is Operator.LT:
        return cmp < 0
    if op is Operator.LE:
        return cmp <= 0
    if op is Operator.EQ:
        return cmp == 0
    if op is Operator.GE:
        return cmp >= 0
    return cmp > 0
