"""A tiny upstream tree and a series of format-patch files made from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from series.upstream.base import Base
from series.upstream.patchfile import PatchFile, read_patch

PLACEHOLDER = ("saltfleet developers", "dev@saltfleet.invalid")


def git(repo: Path, *args: str, author: tuple[str, str] = PLACEHOLDER) -> str:
    name, email = author
    proc = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            f"user.name={name}",
            "-c",
            f"user.email={email}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def commit(repo: Path, files: dict[str, str], subject: str, **kw) -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", path)
    git(repo, "commit", "-q", "-m", f"{subject}\n\nWhy it is needed.", **kw)


@pytest.fixture
def upstream_tree(tmp_path: Path) -> Path:
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(
        repo,
        {"salt/pillar/postgres.py": "x = 1\n", "changelog/.keep": ""},
        "pristine",
    )
    git(repo, "tag", "upstream/1.0")
    return repo


@pytest.fixture
def series(upstream_tree: Path, tmp_path: Path) -> list[PatchFile]:
    """Three patches: a fix, a feature needing it, another feature; a placeholder author
    on the first two and a real one on the third."""
    repo = upstream_tree
    commit(
        repo,
        {
            "salt/pillar/postgres.py": "x = 2\n",
            "changelog/+pillar-fail-closed.fixed.md": "Fail closed.\n",
            "tests/pytests/unit/pillar/test_postgres.py": "def test_x():\n    pass\n",
        },
        "Fail closed when a postgres ext_pillar query fails",
    )
    commit(
        repo,
        {
            "salt/pillar/postgres.py": "x = 3\n",
            "changelog/+pillar-pool.added.md": "Reuse connections.\n",
            "doc/ref/pillar.rst": "docs\n",
        },
        "Reuse postgres ext_pillar connections and pass libpq options",
    )
    commit(
        repo,
        {
            "salt/utils/other.py": "y = 1\n",
            "changelog/+other.added.md": "Other.\n",
        },
        "Add another thing with a long subject that git folds over two header lines",
        author=("Real Person", "real@person.org"),
    )
    out = tmp_path / "patches"
    git(repo, "format-patch", "-q", "-o", str(out), "upstream/1.0..HEAD")
    git(repo, "reset", "-q", "--hard", "upstream/1.0")
    return [read_patch(p) for p in sorted(out.glob("*.patch"))]


def tree_base(repo: Path, rev: str) -> Base:
    """A 3008.x base that is the test tree ``repo`` at ``rev``."""
    return Base(
        branch="3008.x",
        label="3008.x: test tree",
        repo=repo,
        rev=rev,
        sha256=None,
        note="test tree",
    )


@pytest.fixture
def base(upstream_tree: Path) -> Base:
    return tree_base(upstream_tree, "upstream/1.0")
