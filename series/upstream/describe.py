"""PR.md and ISSUE.md: a pull request's description and its issue, in
upstream's templates.

The template is ``.github/PULL_REQUEST_TEMPLATE.md`` of saltstack/salt (its
current form is quoted in docs/upstream/checks.md). The merge-requirement boxes
are ticked from the PR's own diff, never by hand: Docs when it touches
``doc/``, Changelog when it adds an entry upstream's check accepts, Tests when
it adds or changes files under ``tests/``.

ISSUE.md is the issue to file for a PR whose ``issue`` is still a placeholder,
in upstream's ``.github/ISSUE_TEMPLATE/bug_report.md`` (a ``fixed`` or
``security`` PR) or ``feature_request.md`` (any other type): the problem, how
to see it on the unpatched release, and the proposal. Filing it is one paste;
its number then replaces the placeholder in ``prs.toml``.
"""

from __future__ import annotations

from dataclasses import dataclass

from series.upstream import changelog
from series.upstream.prmap import FIX_TYPES, PullRequest

CHANGELOG_DOCS = (
    "https://docs.saltproject.io/en/master/topics/development/changelog.html"
)


@dataclass(frozen=True)
class Requirements:
    """The merge-requirement boxes, as the PR's diff answers them."""

    docs: bool
    changelog: bool
    tests: bool

    @classmethod
    def from_diff(cls, files: list[str]) -> Requirements:
        """Tick the boxes from the files the PR adds or changes."""
        entries = changelog.entries(files)
        return cls(
            docs=any(f.startswith("doc/") for f in files),
            changelog=bool(entries) and not changelog.check_paths(entries),
            tests=any(f.startswith("tests/") for f in files),
        )


def render(
    pr: PullRequest,
    requirements: Requirements,
    *,
    depends_titles: list[str],
    signed: bool,
) -> str:
    """The PR's title line and body, Markdown, ready to paste."""
    box = {True: "[x]", False: "[ ]"}
    if pr.placeholder:
        fixes = "Fixes: (placeholder: no upstream issue yet - open one first)"
    else:
        fixes = f"Fixes: {_ref(pr.issue)}"
    lines = [
        f"# {pr.full_title}",
        "",
        "### What does this PR do?",
        "",
        pr.what,
        "",
        "### What issues does this PR fix or reference?",
        "",
        fixes,
    ]
    if pr.references:
        lines.append("See also: " + ", ".join(f"#{n}" for n in pr.references))
    if depends_titles:
        lines += ["", "Depends on (to be merged first):"]
        lines += [f"- {title}" for title in depends_titles]
    for heading, text in (("Previous Behavior", pr.previous), ("New Behavior", pr.new)):
        if text:
            lines += ["", f"### {heading}", "", text]
    lines += [
        "",
        "### Merge requirements satisfied?",
        "",
        "**[NOTICE] Bug fixes or features added to Salt require tests.**",
        "",
        f"- {box[requirements.docs]} Docs",
        f"- {box[requirements.changelog]} Changelog - {CHANGELOG_DOCS}",
        f"- {box[requirements.tests]} Tests written/updated",
        "",
        "### Commits signed with GPG?",
        "",
        "Yes" if signed else "No",
        "",
    ]
    return "\n".join(lines)


def _ref(issue: int | str) -> str:
    return f"#{issue}" if isinstance(issue, int) else str(issue)


def render_issue(pr: PullRequest, release: str) -> str | None:
    """The issue to file for ``pr``, Markdown; None when it has an issue number
    or no issue text.

    ``release`` is the unpatched Salt the reproduction runs on (``3008.3``).
    """
    text = pr.issue_text
    if text is None or not pr.placeholder:
        # once filed, the issue is upstream's: its number is in the map
        return None
    pull_request = f'A pull request is ready: "{pr.full_title}"'
    if pr.references:
        pull_request += ". Related: " + ", ".join(f"#{n}" for n in pr.references)
    if pr.type in FIX_TYPES:
        sections = [
            ("Description", text.problem),
            ("Steps to Reproduce the behavior", text.reproduction),
            ("Expected behavior", text.proposal),
            ("Versions Report", f"Salt {release} (the release's sdist, unpatched)."),
            ("Additional context", pull_request + "."),
        ]
        title = f"[BUG] {text.title}"
    else:
        seen = f"{text.problem}\n\nSeen on Salt {release}:\n\n{text.reproduction}"
        sections = [
            ("Is your feature request related to a problem? Please describe.", seen),
            ("Describe the solution you'd like", text.proposal),
            ("Additional context", pull_request + "."),
        ]
        title = f"[Feature Request] {text.title}"
    lines = [f"# {title}"]
    for heading, body in sections:
        lines += ["", f"**{heading}**", body]
    return "\n".join(lines) + "\n"
