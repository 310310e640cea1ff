"""
Synthetic installed-package sets, the data behind ``pkg.list_pkgs``.

A minion's package set is computed from its id, its packaging style (rpm on
SUSE and RHEL, deb on Debian/Ubuntu) and a small record of the updates applied
since start, so a minion does not hold hundreds of strings in memory between
calls. :meth:`PackageSet.change` applies an "update" (new release of a few
packages), which is what a package-manager plugin would report through the
``pkgset`` beacon.
"""

from __future__ import annotations

import hashlib
import random
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


def _digest(*parts: object) -> int:
    text = "/".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class PackageSet:
    """
    The installed packages of one simulated minion.

    .. code-block:: python

        pkgs = PackageSet("evil-0001", "suse", size=300)
        before = pkgs.list_pkgs()
        changed = pkgs.change(random.Random(0), count=3)
        pkgs.list_pkgs()[changed[0]] != before[changed[0]]  # True
    """

    __slots__ = ("_bumps", "_generation", "_minion_id", "_size", "_style")

    def __init__(self, minion_id: str, style: str, size: int) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown package style {style!r}: choose one of {STYLES}")
        self._minion_id = minion_id
        self._style = style
        self._size = size
        # package name -> number of updates applied since start
        self._bumps: dict[str, int] = {}
        self._generation = 0

    @property
    def generation(self) -> int:
        """How many times :meth:`change` was applied."""
        return self._generation

    def names(self) -> list[str]:
        """Sorted names of the installed packages."""
        renames = _STYLE_RENAMES.get(self._style, {})
        names = [
            renames.get(name, name)
            for name in _COMMON
            # about one in ten systems lacks a given common package
            if _digest(self._minion_id, name) % 10 != 0
        ]
        index = 0
        while len(names) < self._size:
            stem = _FILLER_STEMS[index % len(_FILLER_STEMS)]
            names.append(f"{stem}sim{index:04d}")
            index += 1
        return sorted(names[: self._size])

    def _version(self, name: str) -> str:
        seed = _digest(self._style, name)
        upstream = f"{seed % 7}.{seed // 7 % 20}.{seed // 140 % 30}"
        bump = self._bumps.get(name, 0)
        if self._style == "suse":
            release = f"150500.{seed // 4200 % 90 + 1}.{bump + 1}"
        elif self._style == "rhel":
            release = (
                f"{seed // 4200 % 40 + 1}.el9_4.{bump}"
                if bump
                else f"{seed // 4200 % 40 + 1}.el9"
            )
        else:
            release = f"{seed // 4200 % 9}ubuntu{bump + 1}"
        return f"{upstream}-{release}"

    def list_pkgs(self, versions_as_list: bool = False) -> dict[str, str | list[str]]:
        """``pkg.list_pkgs`` return value: ``{name: version}`` (or ``[version]``)."""
        if versions_as_list:
            return {name: [self._version(name)] for name in self.names()}
        return {name: self._version(name) for name in self.names()}

    def change(self, rng: random.Random, count: int = 3) -> list[str]:
        """Apply an update of ``count`` random packages; return their names."""
        names = self.names()
        changed = rng.sample(names, min(count, len(names)))
        for name in changed:
            self._bumps[name] = self._bumps.get(name, 0) + 1
        self._generation += 1
        return sorted(changed)
