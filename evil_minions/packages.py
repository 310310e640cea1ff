"""
Synthetic package sets: what ``pkg.list_pkgs`` shows and what the repositories offer.

A minion's package set is computed from its id, its packaging style (rpm on
SUSE and RHEL, deb on Debian/Ubuntu) and a small record of what changed since
start, so a minion does not hold hundreds of strings in memory between calls:
1000 minions x 300 packages would otherwise be 300 000 strings.

Versions are ``<upstream>-<release>`` where the upstream part is fixed per
package and the release grows with a *level*: level 0 is what a fresh system
has installed, the repositories carry levels 0 up to the package's candidate
(one update for about a quarter of the packages), an update outside Salt
(:meth:`PackageSet.change`) raises the installed level past that. A few
installed packages have no candidate at all (orphans: installed from an
untracked source), and the repositories offer packages that are not installed.

:meth:`PackageSet.install` and :meth:`PackageSet.remove` are what a package
state does; :meth:`PackageSet.change` is what a package manager run outside
Salt does, reported through the ``pkgset`` beacon with :meth:`PackageSet.cookie`.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Iterable, Mapping
from typing import Final

#: Package names present on most systems of a style; the rest of a set is
#: filled with generated names up to the requested size.
_COMMON: Final = (
    "bash", "coreutils", "curl", "glibc", "grep", "gzip", "kmod", "less", "libcurl4",
    "libopenssl3", "libxml2", "openssh", "openssl", "pam", "procps", "python3",
    "python3-base", "rsync", "sed", "sudo", "systemd", "tar", "util-linux", "vim",
    "wget", "which", "xz", "zlib", "zstd", "tzdata", "ca-certificates", "cron",
    "logrotate", "iproute2", "iputils", "kernel-default", "dbus-1", "shadow",
    "findutils", "diffutils", "file", "gawk", "hostname", "libgcc_s1", "libstdc++6",
    "ncurses-utils", "perl", "polkit", "rpm", "salt-minion", "venv-salt-minion",
)  # fmt: skip
_STYLE_RENAMES: Final = {
    "deb": {"rpm": "dpkg", "kernel-default": "linux-image-generic", "dbus-1": "dbus",
            "libopenssl3": "libssl3", "libcurl4": "libcurl4t64", "openssh": "openssh-server",
            "venv-salt-minion": "salt-common", "libgcc_s1": "libgcc-s1",
            "ncurses-utils": "ncurses-bin", "shadow": "passwd", "iputils": "iputils-ping"},
    "rhel": {"kernel-default": "kernel", "dbus-1": "dbus", "libopenssl3": "openssl-libs",
             "libcurl4": "libcurl", "libgcc_s1": "libgcc", "libstdc++6": "libstdc++",
             "ncurses-utils": "ncurses", "venv-salt-minion": "salt"},
}  # fmt: skip
_FILLER_STEMS: Final = (
    "lib",
    "python3-",
    "perl-",
    "texlive-",
    "golang-",
    "rubygem-",
    "xorg-",
    "gnome-",
)
STYLES: Final = ("suse", "rhel", "deb")
#: Packages the repositories offer beyond a fresh system's filler packages.
EXTRA_AVAILABLE: Final = 100
#: One installed filler package in this many has no candidate (an orphan).
ORPHAN_ONE_IN: Final = 40
#: One package in this many has an update in the repositories.
UPDATE_ONE_IN: Final = 4
#: Where the package-manager plugins write their cookie, per packaging style.
COOKIES: Final = {
    "suse": "/var/cache/salt/minion/rpmdb.cookie",
    "rhel": "/var/cache/salt/minion/rpmdb.cookie",
    "deb": "/var/cache/salt/minion/dpkg.cookie",
}
#: Version operators of package states; ``==`` means ``=``.
OPERATORS: Final = ("<", "<=", "=", "==", ">=", ">")


def _digest(*parts: object) -> int:
    text = "/".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def common_names(style: str) -> list[str]:
    """The well-known package names of ``style``, as that style names them."""
    renames = _STYLE_RENAMES.get(style, {})
    return [renames.get(name, name) for name in _COMMON]


_COMMON_BY_STYLE: Final = {style: frozenset(common_names(style)) for style in STYLES}


def filler_name(index: int) -> str:
    """The ``index``-th generated package name (shared by all styles)."""
    return f"{_FILLER_STEMS[index % len(_FILLER_STEMS)]}sim{index:04d}"


def is_orphan(style: str, name: str) -> bool:
    """Whether ``name`` is installed from an untracked source: no candidate anywhere."""
    return "sim" in name and _digest(style, name, "orphan") % ORPHAN_ONE_IN == 0


def offered_fillers(count: int, start: int = 0) -> list[str]:
    """``count`` generated names from index ``start`` on that have a candidate
    in every style (none is an orphan anywhere): names a package state can
    use on any simulated minion. Indices below a set's size are installed."""
    names: list[str] = []
    index = start
    while len(names) < count:
        name = filler_name(index)
        if not any(is_orphan(style, name) for style in STYLES):
            names.append(name)
        index += 1
    return names


def candidate_level(style: str, name: str) -> int | None:
    """The newest level the repositories carry for ``name``; None for an orphan."""
    if is_orphan(style, name):
        return None
    return 1 if _digest(style, name, "update") % UPDATE_ONE_IN == 0 else 0


def package_version(style: str, name: str, level: int = 0) -> str:
    """The version string of ``name`` at ``level`` (0: a fresh system's)."""
    seed = _digest(style, name)
    upstream = f"{seed % 7}.{seed // 7 % 20}.{seed // 140 % 30}"
    if style == "suse":
        release = f"150500.{seed // 4200 % 90 + 1}.{level + 1}"
    elif style == "rhel":
        release = (
            f"{seed // 4200 % 40 + 1}.el9_4.{level}"
            if level
            else f"{seed // 4200 % 40 + 1}.el9"
        )
    else:
        release = f"{seed // 4200 % 9}ubuntu{level + 1}"
    return f"{upstream}-{release}"


# -- version comparison ----------------------------------------------------------

_SEGMENT = re.compile(r"~|[0-9]+|[A-Za-z]+")
_FILLER = re.compile(r"[a-z0-9+-]*sim([0-9]{4})")


def _compare_part(a: str, b: str) -> int:
    """rpmvercmp-like: digit runs compare as numbers and beat letter runs, ``~`` sorts first."""
    left, right = _SEGMENT.findall(a), _SEGMENT.findall(b)
    for x, y in zip(left, right, strict=False):
        if "~" in (x, y):
            if x != y:
                return -1 if x == "~" else 1
        elif x.isdigit() and y.isdigit():
            diff = int(x) - int(y)
            if diff:
                return 1 if diff > 0 else -1
        elif x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        elif x != y:
            return 1 if x > y else -1
    rest = left[len(right) :] or right[len(left) :]
    if not rest:
        return 0
    longer = 1 if len(left) > len(right) else -1
    # "1.0~rc1" is older than "1.0", "1.0.1" newer
    return -longer if rest[0] == "~" else longer


def _split_version(version: str) -> tuple[int, str, str | None]:
    epoch, sep, rest = version.partition(":")
    if not sep:
        epoch, rest = "0", version
    upstream, sep, release = rest.partition("-")
    return int(epoch) if epoch.isdigit() else 0, upstream, release if sep else None


def compare_versions(a: str, b: str) -> int:
    """
    -1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``.

    As rpm does, a release is compared only when both sides have one, so
    ``1.2-3`` equals ``1.2``.
    """
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
    if ea != eb:
        return 1 if ea > eb else -1
    cmp = _compare_part(ua, ub)
    if cmp or ra is None or rb is None:
        return cmp
    return _compare_part(ra, rb)


def satisfies(installed: str, op: str, version: str) -> bool:
    """Whether ``installed`` meets ``<op> <version>`` (ops of :data:`OPERATORS`)."""
    if op not in OPERATORS:
        raise ValueError(f"unknown version operator {op!r}: choose one of {OPERATORS}")
    cmp = compare_versions(installed, version)
    return {
        "<": cmp < 0, "<=": cmp <= 0, "=": cmp == 0, "==": cmp == 0,
        ">=": cmp >= 0, ">": cmp > 0,
    }[op]  # fmt: skip


class PackageSet:
    """
    The installed packages of one simulated minion.

    Only the differences from the generated fresh system are stored: the
    level of each package not at level 0, the fresh packages removed and the
    packages added.

    .. code-block:: python

        pkgs = PackageSet("evil-0001", "suse", size=300)
        before = pkgs.list_pkgs()
        changed = pkgs.change(random.Random(0), count=3)
        pkgs.list_pkgs()[changed[0]] != before[changed[0]]  # True
    """

    __slots__ = (
        "_added",
        "_bumps",
        "_changed_at",
        "_generation",
        "_held",
        "_minion_id",
        "_removed",
        "_size",
        "_style",
    )

    def __init__(self, minion_id: str, style: str, size: int) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown package style {style!r}: choose one of {STYLES}")
        self._minion_id = minion_id
        self._style = style
        self._size = size
        # package name -> installed level where it is not 0
        self._bumps: dict[str, int] = {}
        self._removed: set[str] = set()
        self._added: set[str] = set()
        self._held: set[str] = set()
        self._generation = 0
        self._changed_at = 0.0

    @property
    def style(self) -> str:
        """The packaging style: ``suse``, ``rhel`` or ``deb``."""
        return self._style

    @property
    def generation(self) -> int:
        """How many times the set changed (inside or outside Salt)."""
        return self._generation

    def _base_names(self) -> list[str]:
        names = [
            name
            for name, original in zip(common_names(self._style), _COMMON, strict=True)
            # about one in ten systems lacks a given common package
            if _digest(self._minion_id, original) % 10 != 0
        ]
        index = 0
        while len(names) < self._size:
            names.append(filler_name(index))
            index += 1
        return names[: self._size]

    def names(self) -> list[str]:
        """Sorted names of the installed packages."""
        base = self._base_names()
        if self._removed:
            base = [name for name in base if name not in self._removed]
        return sorted([*base, *self._added])

    def _version(self, name: str) -> str:
        return package_version(self._style, name, self._bumps.get(name, 0))

    def list_pkgs(self, versions_as_list: bool = False) -> dict[str, str | list[str]]:
        """``pkg.list_pkgs`` return value: ``{name: version}`` (or ``[version]``)."""
        if versions_as_list:
            return {name: [self._version(name)] for name in self.names()}
        return {name: self._version(name) for name in self.names()}

    def installed(self) -> dict[str, str]:
        """``{name: version}`` of the installed packages."""
        return {name: self._version(name) for name in self.names()}

    def is_held(self, name: str) -> bool:
        """Whether ``name`` is held (locked at its version) by ``pkg.held``."""
        return name in self._held

    def hold(self, names: Iterable[str]) -> None:
        """Hold ``names`` at their installed versions."""
        self._held.update(names)

    # -- repositories --------------------------------------------------------------

    def catalog(self) -> list[str]:
        """Sorted names the minion's repositories offer (installed or not)."""
        names = common_names(self._style)
        names += (filler_name(i) for i in range(self._size + EXTRA_AVAILABLE))
        return sorted(n for n in set(names) if not is_orphan(self._style, n))

    def repo_versions(self, name: str) -> list[str]:
        """The versions of ``name`` in the repositories, oldest first ([] if none)."""
        top = candidate_level(self._style, name)
        if top is None or not self._offered(name):
            return []
        return [package_version(self._style, name, level) for level in range(top + 1)]

    def candidate(self, name: str) -> str | None:
        """The newest version of ``name`` in the repositories, None if there is none."""
        versions = self.repo_versions(name)
        return versions[-1] if versions else None

    def _offered(self, name: str) -> bool:
        if name in _COMMON_BY_STYLE[self._style]:
            return True
        match = _FILLER.fullmatch(name)
        return (
            match is not None
            and int(match.group(1)) < self._size + EXTRA_AVAILABLE
            and filler_name(int(match.group(1))) == name
        )

    # -- changes ----------------------------------------------------------------------

    def update(
        self, install: Mapping[str, str] | None = None, remove: Iterable[str] = ()
    ) -> None:
        """
        Install (or up/downgrade to) ``install``'s ``{name: version}`` and remove ``remove``.

        Every version must be one of :meth:`repo_versions`; removing a package
        that is not installed does nothing. Raises ValueError before changing
        anything if a version is not offered.
        """
        levels = {}
        for name, version in (install or {}).items():
            offered = self.repo_versions(name)
            if version not in offered:
                raise ValueError(f"{name} {version} is not in the repositories")
            levels[name] = offered.index(version)
        removals = set(remove)
        if levels or removals:
            self._apply(levels, removals)

    def _apply(self, levels: Mapping[str, int], removals: Iterable[str]) -> None:
        """Record installs at ``levels`` and ``removals`` as differences from the base."""
        base = set(self._base_names())
        for name, level in levels.items():
            if level:
                self._bumps[name] = level
            else:
                self._bumps.pop(name, None)
            if name in base:
                self._removed.discard(name)
            else:
                self._added.add(name)
        for name in removals:
            self._bumps.pop(name, None)
            self._held.discard(name)
            if name in base:
                self._removed.add(name)
            else:
                self._added.discard(name)
        self._touch()

    def _touch(self) -> None:
        self._generation += 1
        self._changed_at = time.time()

    def change(
        self, rng: random.Random, count: int = 3, *, remove: int = 0, install: int = 0
    ) -> list[str]:
        """
        A package-manager run outside Salt; returns the names it touched, sorted.

        ``count`` random installed packages get an update newer than anything
        in the repositories, ``remove`` others are removed, and ``install``
        packages from the repositories that were not installed get installed.
        """
        names = self.names()
        changed = rng.sample(names, min(count + remove, len(names)))
        updated, removed = changed[:count], changed[count:]
        # newer than anything the repositories carry
        levels = {
            name: max(
                self._bumps.get(name, 0) + 1,
                (candidate_level(self._style, name) or 0) + 1,
            )
            for name in updated
        }
        present = set(names)
        missing = [n for n in self.catalog() if n not in present]
        added = rng.sample(missing, min(install, len(missing)))
        levels.update((name, 0) for name in added)
        self._apply(levels, removed)
        return sorted([*changed, *added])

    def cookie(self) -> tuple[str, str]:
        """
        The package-manager plugin's cookie: ``(path, "<md5> <unix time>")``.

        The checksum stands for the package database's: it changes exactly
        when the installed set or a version changes. The time is that of the
        last change (0 before any).
        """
        digest = hashlib.md5(usedforsecurity=False)
        for name, version in self.installed().items():
            digest.update(f"{name}={version}\n".encode())
        return COOKIES[self._style], f"{digest.hexdigest()} {int(self._changed_at)}"
