"""``patches/prs.toml``: which patches form which pull request to Salt.

One ``[[pr]]`` table per pull request::

    [[pr]]
    id = "B"                                   # letters, digits, - and _
    title = "Open minion requests with ..."    # "[3008.x] " is added for 3008.x
    base = "3008.x"                            # or "master"
    type = "fixed"                             # the changelog type
    issue = 69925                              # or "CVE-2026-1", or "placeholder"
    references = [69926]                       # optional, listed under Fixes:
    depends = []                               # PR ids merged before this one
    patches = ["Open minion requests with their session key when routing to worker pools"]
    what = "..."                               # the PR template's parts
    previous = "..."                           # optional
    new = "..."                                # optional
    issue_title = "..."                        # the issue to file, while
    issue_problem = "..."                      # issue is "placeholder":
    issue_reproduction = "..."                 # ISSUE.md beside PR.md
    issue_proposal = "..."                     # (all four, or none)

Patches are named by commit subject (or file name), so renumbering the
series does not break the map. :func:`load` refuses a bad map with
:class:`UpstreamError` naming the file, the PR and the problem.

Base and type: a feature (``added``, ``removed``, ``deprecated``) on 3008.x
is an error - upstream takes only fixes on a release branch, so such a PR would
be refused. A ``fixed`` or ``security`` PR on master is a warning: a bug that
only master has (in a feature not on 3008.x) legitimately goes there.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from series.upstream.changelog import PLACEHOLDER, TYPES
from series.upstream.errors import UpstreamError
from series.upstream.patchfile import PatchFile

BASES = ("3008.x", "master")
FEATURE_TYPES = ("added", "removed", "deprecated")
FIX_TYPES = ("fixed", "security")
_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_CVE = re.compile(r"^CVE-\d{4}-\d+$", re.IGNORECASE)
_KEYS = {
    "id",
    "title",
    "base",
    "type",
    "issue",
    "references",
    "depends",
    "patches",
    "what",
    "previous",
    "new",
    *(f"issue_{part}" for part in ("title", "problem", "reproduction", "proposal")),
}
_ISSUE_PARTS = ("title", "problem", "reproduction", "proposal")
_REQUIRED = ("id", "title", "base", "type", "issue", "patches", "what")


@dataclass(frozen=True)
class IssueText:
    """The upstream issue to file for a PR that has none yet (ISSUE.md)."""

    title: str
    problem: str
    reproduction: str
    proposal: str


@dataclass(frozen=True)
class PullRequest:
    """One pull request of the map, its patches resolved to files."""

    id: str
    title: str
    base: str
    type: str
    issue: int | str
    references: tuple[int, ...]
    depends: tuple[str, ...]
    patches: tuple[PatchFile, ...]
    what: str
    previous: str
    new: str
    issue_text: IssueText | None = None

    @property
    def placeholder(self) -> bool:
        """True when the PR has no upstream issue or PR number yet."""
        return self.issue == PLACEHOLDER

    @property
    def full_title(self) -> str:
        """The title upstream sees: ``[3008.x] `` prefixed on a release branch."""
        return f"[{self.base}] {self.title}" if self.base != "master" else self.title


@dataclass(frozen=True)
class PrMap:
    """The validated map, in file order, and the warnings it gave."""

    prs: tuple[PullRequest, ...]
    warnings: tuple[str, ...]

    def by_id(self, pr_id: str) -> PullRequest:
        """The PR called ``pr_id``."""
        for pr in self.prs:
            if pr.id == pr_id:
                return pr
        raise UpstreamError(f"no PR {pr_id!r} in the map")

    def dependency_chain(self, pr: PullRequest) -> list[PullRequest]:
        """The PRs ``pr`` depends on, transitively, each before its dependants."""
        ordered: list[PullRequest] = []

        def visit(current: PullRequest) -> None:
            for dep_id in current.depends:
                dep = self.by_id(dep_id)
                if dep not in ordered:
                    visit(dep)
                    ordered.append(dep)

        visit(pr)
        return ordered


def load(path: Path, patches: Sequence[PatchFile], *, draft: bool) -> PrMap:
    """Read and validate the map at ``path`` against the series' ``patches``."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UpstreamError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UpstreamError(f"{path}: not valid TOML: {exc}") from None
    return parse(data, patches, draft=draft, source=str(path))


def parse(
    data: Mapping[str, Any],
    patches: Sequence[PatchFile],
    *,
    draft: bool,
    source: str = "prs.toml",
) -> PrMap:
    """Validate an already parsed map (see the module docstring for the rules)."""
    extra = set(data) - {"pr"}
    if extra:
        raise UpstreamError(
            f"{source}: unknown top-level key(s) {', '.join(sorted(extra))}; "
            "each PR is a [[pr]] table"
        )
    tables = data.get("pr")
    if not isinstance(tables, list) or not tables:
        raise UpstreamError(f"{source}: no [[pr]] tables")
    warnings: list[str] = []
    owner: dict[Path, str] = {}
    prs: list[PullRequest] = []
    for index, table in enumerate(tables, 1):
        if not isinstance(table, dict):
            raise UpstreamError(f"{source}: [[pr]] number {index} is not a table")
        pr = _parse_pr(table, index, patches, owner, draft, source, warnings)
        if any(p.id == pr.id for p in prs):
            raise UpstreamError(f"{source}: PR id {pr.id!r} is used twice")
        prs.append(pr)
    missing = [p for p in patches if p.path not in owner]
    if missing:
        raise UpstreamError(
            f"{source}: series patch {missing[0].path.name} "
            f"({missing[0].subject!r}) is in no PR"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    result = PrMap(tuple(prs), tuple(warnings))
    _check_depends(result, source)
    return result


def _parse_pr(
    table: dict[str, Any],
    index: int,
    patches: Sequence[PatchFile],
    owner: dict[Path, str],
    draft: bool,
    source: str,
    warnings: list[str],
) -> PullRequest:
    pr_id = table.get("id")
    where = (
        f"{source}: PR {pr_id!r}"
        if isinstance(pr_id, str)
        else (f"{source}: [[pr]] number {index}")
    )
    unknown = set(table) - _KEYS
    if unknown:
        raise UpstreamError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_KEYS))}"
        )
    for key in _REQUIRED:
        if key not in table:
            raise UpstreamError(f"{where}: missing {key!r}")
    if not isinstance(pr_id, str) or not _ID.match(pr_id):
        raise UpstreamError(f"{where}: id must be letters, digits, '-' or '_'")
    title = _text(table, "title", where)
    if title.startswith("["):
        raise UpstreamError(
            f"{where}: title starts with a branch prefix; leave it out, the "
            "workflow adds '[3008.x] ' for 3008.x"
        )
    base = _text(table, "base", where)
    if base not in BASES:
        raise UpstreamError(f"{where}: base {base!r} is not one of {', '.join(BASES)}")
    change_type = _text(table, "type", where)
    if change_type not in TYPES:
        raise UpstreamError(
            f"{where}: type {change_type!r} is not one of {', '.join(TYPES)}"
        )
    if base != "master" and change_type in FEATURE_TYPES:
        raise UpstreamError(
            f"{where}: type {change_type!r} on {base}: upstream takes only fixes "
            "on a release branch; features go to master"
        )
    if base == "master" and change_type in FIX_TYPES:
        warnings.append(
            f"PR {pr_id}: type {change_type!r} on master; a fix of a bug 3008.x "
            "has too belongs on 3008.x (it reaches master by merge-forward)"
        )
    issue = _issue(table["issue"], where, draft)
    references = table.get("references", [])
    if not isinstance(references, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) and r > 0 for r in references
    ):
        raise UpstreamError(f"{where}: references must be a list of numbers")
    depends = table.get("depends", [])
    if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
        raise UpstreamError(f"{where}: depends must be a list of PR ids")
    named = table["patches"]
    if (
        not isinstance(named, list)
        or not named
        or not all(isinstance(n, str) for n in named)
    ):
        raise UpstreamError(f"{where}: patches must be a non-empty list of subjects")
    resolved = []
    for name in named:
        patch = _match(name, patches, where)
        if patch.path in owner:
            raise UpstreamError(
                f"{where}: patch {name!r} is already in PR {owner[patch.path]!r}; "
                "a patch belongs to one PR"
            )
        owner[patch.path] = pr_id
        resolved.append(patch)
    # git am applies them in series order, whatever order the map lists them in
    resolved.sort(key=lambda p: [q.path for q in patches].index(p.path))
    return PullRequest(
        id=pr_id,
        title=title,
        base=base,
        type=change_type,
        issue=issue,
        references=tuple(references),
        depends=tuple(depends),
        patches=tuple(resolved),
        what=_text(table, "what", where),
        previous=_text(table, "previous", where, required=False),
        new=_text(table, "new", where, required=False),
        issue_text=_issue_text(table, where, issue, warnings),
    )


def _issue_text(
    table: dict[str, Any], where: str, issue: int | str, warnings: list[str]
) -> IssueText | None:
    given = [part for part in _ISSUE_PARTS if f"issue_{part}" in table]
    if not given:
        if issue == PLACEHOLDER:
            # a warning, not an error: a PR is first mapped, then described
            warnings.append(
                f"{where.split(': ', 1)[-1]}: placeholder issue without "
                "issue_title/issue_problem/issue_reproduction/issue_proposal; "
                "no ISSUE.md to file"
            )
        return None
    missing = [f"issue_{part}" for part in _ISSUE_PARTS if part not in given]
    if missing:
        raise UpstreamError(
            f"{where}: the issue text needs all of its parts; missing "
            + ", ".join(repr(m) for m in missing)
        )
    title, problem, reproduction, proposal = (
        _text(table, f"issue_{part}", where) for part in _ISSUE_PARTS
    )
    if title.startswith("["):
        raise UpstreamError(
            f"{where}: issue_title starts with a prefix; leave it out, ISSUE.md "
            "adds '[BUG] ' or '[Feature Request] ' from the PR's type"
        )
    return IssueText(title, problem, reproduction, proposal)


def _text(table: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise UpstreamError(f"{where}: {key} must be a non-empty string")
    return value.strip()


def _issue(value: object, where: str, draft: bool) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and _CVE.match(value):
        return value.upper()
    if value == PLACEHOLDER:
        if not draft:
            raise UpstreamError(
                f"{where}: issue is a placeholder; give the upstream issue or PR "
                "number, or run with --draft"
            )
        return PLACEHOLDER
    raise UpstreamError(
        f"{where}: issue must be a number, a CVE id or {PLACEHOLDER!r}, got {value!r}"
    )


def _match(name: str, patches: Sequence[PatchFile], where: str) -> PatchFile:
    wanted = " ".join(name.split())
    found = [p for p in patches if p.subject == wanted or p.path.name == wanted]
    if not found:
        raise UpstreamError(f"{where}: no patch in the series has the subject {name!r}")
    if len(found) > 1:
        raise UpstreamError(
            f"{where}: {len(found)} patches have the subject {name!r}; "
            "name it by file name"
        )
    return found[0]


def _check_depends(prmap: PrMap, source: str) -> None:
    ids = {pr.id for pr in prmap.prs}
    for pr in prmap.prs:
        for dep in pr.depends:
            if dep not in ids:
                raise UpstreamError(
                    f"{source}: PR {pr.id!r} depends on {dep!r}, which is not in "
                    "the map"
                )
            if dep == pr.id:
                raise UpstreamError(f"{source}: PR {pr.id!r} depends on itself")
    for pr in prmap.prs:
        seen: list[str] = []
        stack = [(pr.id, [pr.id])]
        while stack:
            current, path = stack.pop()
            for dep in prmap.by_id(current).depends:
                if dep == pr.id:
                    raise UpstreamError(
                        f"{source}: dependency cycle {' -> '.join([*path, dep])}"
                    )
                if dep not in seen:
                    seen.append(dep)
                    stack.append((dep, [*path, dep]))
