"""The base a pull request is built on: a 3008.x sdist or a Salt checkout.

3008.x: the newest ``salt==3008.N`` sdist on the package index (``pip index
versions``), downloaded like ``nox -s vendor`` does. The pinned release
(``salt/UPSTREAM``) is verified against its sha256; a newer one has no pin, so
its sha256 is recorded in ``<workdir>/sdists.json`` the first time and checked
on every later run. ``--checkout 3008.x=PATH`` replaces the sdist with a
checkout (which also has the branch's ``.pre-commit-config.yaml``).

master: only a checkout (``--checkout master=PATH``). Without one, a master PR
is built on the 3008.x base as a stand-in, which tells whether it applies
with its ``depends`` alone; the table says so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from series import vendor
from series.upstream.errors import UpstreamError

_RELEASE = re.compile(r"^3008\.(\d+)$")


@dataclass(frozen=True)
class Base:
    """A git repository whose ``rev`` is the tree a PR applies to."""

    branch: str
    label: str
    repo: Path
    rev: str
    sha256: str | None
    note: str
    stand_in: bool = False


def newest_release(name: str, fallback: str) -> tuple[str, str]:
    """The newest ``3008.N`` of ``name`` on the package index, and how it was found.

    ``fallback`` (the pinned version) is used when the index cannot be asked.
    """
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "index",
                "versions",
                name,
                "--disable-pip-version-check",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return fallback, f"package index did not answer, using the pinned {fallback}"
    versions = _parse_index_versions(proc.stdout)
    releases = [v for v in versions if _RELEASE.match(v)]
    if proc.returncode != 0 or not releases:
        return fallback, f"package index not readable, using the pinned {fallback}"
    newest = max(releases, key=lambda v: int(v.split(".")[1]))
    return newest, f"newest 3008.x sdist on the package index ({', '.join(releases)})"


def _parse_index_versions(output: str) -> list[str]:
    for line in output.splitlines():
        _, sep, tail = line.partition("Available versions:")
        if sep:
            return [v.strip() for v in tail.split(",") if v.strip()]
    return []


def sdist_base(
    version: str, found: str, workdir: Path, upstream: vendor.Upstream, cache: Path
) -> Base:
    """The 3008.x base from the sdist of ``version``, unpacked once in ``workdir``."""
    try:
        if version == upstream.version:
            sdist = vendor.fetch_sdist(upstream, cache)
            sha = upstream.sha256
            note = f"salt-{version} sdist, sha256 pinned in salt/UPSTREAM"
        else:
            sdist = vendor.download_sdist(upstream.name, version, cache)
            sha = vendor.sha256_of(sdist)
            note = _record_sha(workdir, sdist, sha)
    except vendor.VendorError as exc:
        raise UpstreamError(str(exc)) from None
    repo = workdir / "bases" / f"salt-{version}"
    tag = f"upstream/{version}"
    if not _has_tag(repo, tag):
        release = vendor.Upstream(upstream.name, version, sha)
        vendor.unpack_pristine(sdist, release, repo)
    return Base(
        branch="3008.x",
        label=f"3008.x: salt-{version} sdist",
        repo=repo,
        rev=tag,
        sha256=sha,
        note=f"{note}; {found}",
    )


def _record_sha(workdir: Path, sdist: Path, sha: str) -> str:
    """Trust on first use: record an unpinned sdist's sha256, then hold it to it."""
    record = workdir / "sdists.json"
    try:
        known = json.loads(record.read_text()) if record.exists() else {}
    except ValueError:
        known = {}
    if not isinstance(known, dict):
        known = {}
    seen = known.get(sdist.name)
    if seen is not None and seen != sha:
        raise UpstreamError(
            f"{sdist.name} has sha256 {sha}, but {record} recorded {seen} on an "
            "earlier run; remove the file from salt/.cache (and the record) if the "
            "index really changed it"
        )
    known[sdist.name] = sha
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")
    return f"{sdist.name} (not pinned; sha256 {sha}, recorded in {record.name})"


def checkout_base(branch: str, path: Path) -> Base:
    """The base from a Salt checkout at ``path``: its HEAD commit."""
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "HEAD^{commit}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UpstreamError(
            f"--checkout {branch}={path}: not a git checkout with a commit"
        )
    rev = proc.stdout.strip()
    return Base(
        branch=branch,
        label=f"{branch}: checkout {rev[:12]}",
        repo=path.resolve(),
        rev=rev,
        sha256=None,
        note=f"checkout {path} at {rev}",
    )


def stand_in(master_missing: str, fallback: Base) -> Base:
    """A master PR's base when no master checkout was given: the 3008.x base."""
    return Base(
        branch="master",
        label=f"no master checkout (stand-in: {fallback.label.split(': ', 1)[-1]})",
        repo=fallback.repo,
        rev=fallback.rev,
        sha256=fallback.sha256,
        note=master_missing,
        stand_in=True,
    )


def _has_tag(repo: Path, tag: str) -> bool:
    if not (repo / ".git").is_dir():
        return False
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"refs/tags/{tag}"],
        capture_output=True,
        text=True,
    )
    return proc.returncode == 0
