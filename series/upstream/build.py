"""A pull request's repository: the base, its dependencies' commits, its own.

``<workdir>/<id>/repo`` is a fresh clone of the base on every run. Tags mark
the parts: ``saltfleet/base`` (the base commit) and ``saltfleet/pr-start``
(after the dependencies' commits), so ``git log saltfleet/pr-start..`` is what
the PR submits. Each commit is a patch applied with ``git am``, then amended:

- a changelog fragment it adds (``changelog/+name.<type>.md``) is renamed to
  the name upstream accepts, ``changelog/<issue>.<type>.md`` with the issue and
  type of the PR the patch belongs to (a second fragment of the same PR is
  appended to that file: upstream keeps one entry per issue and type); a
  fragment the patch already names that way is kept;
- an author in a domain reserved for examples (the series' placeholder
  ``saltfleet developers <dev@saltfleet.invalid>``) becomes the submitter;
- a dependency's commit gets a ``Saltfleet-Dependency:`` trailer naming its PR.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from series.upstream import changelog
from series.upstream.base import Base
from series.upstream.errors import UpstreamError
from series.upstream.patchfile import PatchFile
from series.upstream.prmap import PullRequest

BASE_TAG = "saltfleet/base"
START_TAG = "saltfleet/pr-start"
DEPENDENCY_TRAILER = "Saltfleet-Dependency"


@dataclass(frozen=True)
class Identity:
    """Who the commits are by: ``Name <email>``."""

    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


@dataclass
class Built:
    """What building one PR gave."""

    repo: Path
    applied: bool = False
    failed_patch: str = ""
    failed_dependency: str = ""
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    fragments: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failure(self) -> str:
        """Which patch did not apply, of which dependency, and where."""
        if not self.failed_patch:
            return ""
        dep = f"dependency {self.failed_dependency}: " if self.failed_dependency else ""
        return f"{dep}{self.failed_patch} does not apply: {self.reason}"

    @property
    def short_failure(self) -> str:
        """The same for a table cell: ``dep A: 0002 at salt/pillar/postgres.py:51``."""
        dep = f"dep {self.failed_dependency}: " if self.failed_dependency else ""
        return f"{dep}{self.failed_patch[:4]} at {self.reason}"


def build(
    pr: PullRequest,
    deps: list[PullRequest],
    base: Base,
    dest: Path,
    author: Identity,
    series_repo: Path | None = None,
) -> Built:
    """Clone ``base`` into ``dest`` and apply ``deps``' patches, then ``pr``'s.

    ``series_repo``, the vendored series (``salt/src``), lends its objects so
    that ``git am --3way`` can merge a patch whose context differs from the
    base (see :func:`_borrow_objects`).
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clone = subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(base.repo), str(dest)],
        capture_output=True,
        text=True,
    )
    if clone.returncode != 0:
        raise UpstreamError(
            f"cannot clone the base {base.repo}: {clone.stderr.strip()}"
        )
    if series_repo is not None:
        _borrow_objects(dest, series_repo)
    built = Built(dest)
    git = _Git(dest, author)
    git.run("config", "core.autocrlf", "false")
    git.run("checkout", "-q", "-b", f"pr/{pr.id}", base.rev)
    git.run("tag", BASE_TAG)
    for dep in deps:
        for patch in dep.patches:
            if not _apply(git, patch, dep, author, built, dependency=True):
                built.failed_dependency = dep.id
                return built
    git.run("tag", START_TAG)
    for patch in pr.patches:
        if not _apply(git, patch, pr, author, built, dependency=False):
            return built
    built.applied = True
    return built


def _borrow_objects(dest: Path, series_repo: Path) -> None:
    """Let the clone at ``dest`` read the objects of ``series_repo``.

    Two PRs that each add a neighbouring entry to one list (the runners'
    doc index) cannot both apply to the base as patch files: the second one's
    context holds the first one's line. git merges such a PR as ``git
    rebase`` or GitHub would, three-way, when it has the blobs the patch was
    made from; the vendored series has them. A patch that changes what it
    lacks still fails.
    """
    objects = series_repo / ".git" / "objects"
    if not objects.is_dir():
        return
    alternates = dest / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    with alternates.open("a") as fh:
        fh.write(f"{objects.resolve()}\n")


def _apply(
    git: _Git,
    patch: PatchFile,
    owner: PullRequest,
    author: Identity,
    built: Built,
    *,
    dependency: bool,
) -> bool:
    proc = git.run("am", "--3way", "--keep-cr", str(patch.path), check=False)
    if proc.returncode != 0:
        git.run("am", "--abort", check=False)
        built.failed_patch = patch.path.name
        built.reason = _why(git, patch)
        return False
    if "3-way merge" in proc.stdout + proc.stderr:
        built.notes.append(
            f"{patch.path.name[:4]} merged three-way: its context differs from the base"
        )
    amend = ["commit", "-q", "--amend", "--no-edit", "--no-verify"]
    if patch.author_is_placeholder and patch.author != str(author):
        amend.append(f"--author={author}")
        note = f"author {patch.author} -> {author}"
        if note not in built.notes:
            built.notes.append(note)
    if dependency:
        message = git.run("log", "-1", "--format=%B").stdout.rstrip()
        trailer = f"{DEPENDENCY_TRAILER}: PR {owner.id} ({owner.full_title})"
        amend += ["-m", f"{message}\n\n{trailer}"]
        amend.remove("--no-edit")
    _rename_fragments(git, owner, built)
    git.run(*amend)
    return True


def _why(git: _Git, patch: PatchFile) -> str:
    """The first hunk that fails, as ``git apply --check`` names it (file:line).

    git am's own message after a failed three-way fallback is about missing
    blobs, which says nothing about where the patch and the base disagree.
    """
    check = git.run("apply", "--check", str(patch.path), check=False)
    lines = check.stderr.strip().splitlines()
    failed = [ln for ln in lines if ln.startswith("error: patch failed:")]
    if failed:
        return failed[0].removeprefix("error: patch failed: ").strip()
    if lines:
        return lines[0].removeprefix("error: ").strip()
    return "git am could not merge it (three-way)"


def _rename_fragments(git: _Git, owner: PullRequest, built: Built) -> None:
    added = git.run(
        "diff-tree",
        "--no-commit-id",
        "-r",
        "--name-only",
        "--diff-filter=A",
        "HEAD",
        "--",
        "changelog/",
    ).stdout.split()
    target = changelog.fragment_name(owner.issue, owner.type, owner.id)
    for path in added:
        if path == target:
            continue
        source = git.repo / path
        dest = git.repo / target
        text = source.read_text()
        if dest.exists():
            text = dest.read_text().rstrip("\n") + "\n" + text
        dest.write_text(text)
        git.run("rm", "-q", "--", path)
        git.run("add", "--", target)
        built.fragments.append((path, target))
        kind = changelog.fragment_type(path)
        if kind and kind != owner.type:
            built.notes.append(
                f"{path}: type {kind} -> {owner.type} (PR {owner.id}'s type)"
            )


class _Git:
    """git in one repository, committing as the submitter."""

    def __init__(self, repo: Path, author: Identity) -> None:
        self.repo = repo
        self._env = {
            **os.environ,
            "GIT_COMMITTER_NAME": author.name,
            "GIT_COMMITTER_EMAIL": author.email,
            # git am needs an identity even when every patch brings its author
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
        }

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["git", "-C", str(self.repo), *args],
            capture_output=True,
            text=True,
            env=self._env,
        )
        if check and proc.returncode != 0:
            raise UpstreamError(
                f"git {' '.join(args[:3])} failed in {self.repo}: "
                + (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            )
        return proc


def changed_files(repo: Path, since: str = START_TAG) -> list[str]:
    """Files the commits after ``since`` add, change or rename (not delete)."""
    proc = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "diff",
            "--name-only",
            "--diff-filter=AMR",
            f"{since}..HEAD",
        ],
        capture_output=True,
        text=True,
    )
    return proc.stdout.split()


def signed(repo: Path) -> bool:
    """True when every commit of the PR carries a good GPG signature."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%G?", f"{START_TAG}..HEAD"],
        capture_output=True,
        text=True,
    )
    marks = proc.stdout.split()
    return bool(marks) and all(m == "G" for m in marks)
