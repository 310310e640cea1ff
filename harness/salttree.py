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
