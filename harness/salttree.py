"""Where the project's Salt lives: the pinned release and the vendored tree.

``salt/UPSTREAM`` pins the upstream release (name, version, the sdist's
sha256); ``salt/src`` is that release as a git repository, its pristine
commit tagged ``upstream/<version>``, with ``patches/series`` applied on top
(made by :mod:`series.vendor`). The stack reads the pristine tree from here
(upstream's unpatched modules, compared side by side with the patched ones);
the series workflow builds on it.

Only the standard library: this runs before any Salt is installed.
"""

from __future__ import annotations

import copy
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class SaltTreeError(HarnessError):
    """``salt/UPSTREAM`` is unreadable or malformed, or the vendored tree is unusable."""


@dataclass(frozen=True)
class Upstream:
    """The pinned upstream release, as ``salt/UPSTREAM`` states it."""

    name: str
    version: str
    sha256: str

    @property
    def sdist_name(self) -> str:
        """The sdist's file name."""
        return f"{self.name}-{self.version}.tar.gz"

    @property
    def tag(self) -> str:
        """The tag of the pristine upstream commit in salt/src."""
        return f"upstream/{self.version}"


@dataclass(frozen=True)
class Layout:
    """Where the vendoring inputs and outputs live (the project by default)."""

    upstream_file: Path
    patches_dir: Path
    src_dir: Path
    cache_dir: Path

    @classmethod
    def of_project(cls, root: Path = PROJECT_ROOT) -> Layout:
        """The layout of the project at ``root``."""
        return cls(
            upstream_file=root / "salt" / "UPSTREAM",
            patches_dir=root / "patches",
            src_dir=root / "salt" / "src",
            cache_dir=root / "salt" / ".cache",
        )

    @property
    def series_file(self) -> Path:
        """``patches/series``: the patches in the order they apply."""
        return self.patches_dir / "series"


def read_upstream(path: Path) -> Upstream:
    """Parse ``salt/UPSTREAM`` (``key = value`` lines, ``#`` comments)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SaltTreeError(f"cannot read {path}: {exc.strerror}") from None
    values: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise SaltTreeError(f"{path}:{lineno}: expected 'key = value', got {raw!r}")
        values[key.strip()] = value.strip()
    missing = [key for key in ("name", "version", "sha256") if not values.get(key)]
    if missing:
        raise SaltTreeError(f"{path}: missing {', '.join(missing)}")
    sha = values["sha256"].lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise SaltTreeError(f"{path}: sha256 must be 64 hex digits, got {sha!r}")
    return Upstream(values["name"], values["version"], sha)


def extract_tar(
    tar: tarfile.TarFile,
    dest: Path,
    *,
    builtin_filter: bool = hasattr(tarfile, "data_filter"),
) -> None:
    """Unpack ``tar`` into ``dest`` as plain data: nothing lands outside it.

    Python's own ``filter="data"`` came in 3.11.4; Debian 12's system Python
    is 3.11.2, where ``extractall`` takes no filter. There the same rules are
    checked here before anything is written: no absolute or ``..`` paths, no
    link that leaves ``dest``, only files, directories and links; and every
    member is written owned by the current user, without setuid, setgid or
    write bits for others (what the data filter also does).
    """
    if builtin_filter:
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    source = Path(os.fsdecode(tar.name)).name if tar.name else "archive"

    def inside(path: Path, what: str, member: tarfile.TarInfo) -> None:
        if not path.resolve().is_relative_to(root):
            raise SaltTreeError(
                f"{source}: {member.name!r} {what} outside {dest}; not unpacking it"
            )

    members = []
    for member in tar.getmembers():
        if Path(member.name).is_absolute() or (
            member.issym() and Path(member.linkname).is_absolute()
        ):
            raise SaltTreeError(
                f"{source}: {member.name!r} is an absolute path; not unpacking it"
            )
        inside(root / member.name, "would land", member)
        if member.issym():
            inside(root / Path(member.name).parent / member.linkname, "links", member)
        elif member.islnk():
            inside(root / member.linkname, "links", member)
        elif not (member.isfile() or member.isdir()):
            raise SaltTreeError(
                f"{source}: {member.name!r} is neither a file, a "
                "directory nor a link; not unpacking it"
            )
        plain = copy.copy(member)
        plain.mode = member.mode & 0o755
        plain.uid, plain.gid = os.geteuid(), os.getegid()
        plain.uname = plain.gname = ""
        members.append(plain)
    tar.extractall(dest, members=members)
