"""Upstream's changelog rule, and the fragment names the workflow gives.

Salt's pre-commit hook ``check-changelog-entries`` (``tools/precommit/changelog.py``,
docs/upstream/checks.md) accepts under ``changelog/`` only
``<issue number or CVE id>.<type>.md``; a file elsewhere that looks like an
entry must be moved there. The sdist does not ship ``tools/``, so the rule is
applied here as that hook states it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

TYPES = ("removed", "deprecated", "changed", "fixed", "added", "security")
PLACEHOLDER = "placeholder"

_ENTRY = re.compile(rf"^(\d+|[cC][vV][eE]-\d{{4}}-\d+)\.({'|'.join(TYPES)})(\.md)?$")
_LOOKS_LIKE_ENTRY = re.compile(rf"^\d+\.({'|'.join(TYPES)})(\.md)?$")
_SKIPPED = {"changelog/.keep", "changelog/.template.jinja"}
_IGNORED_ELSEWHERE = ("doc/", "tests/integration/files/")
# What a placeholder fragment is called: upstream's rule rejects it on purpose.
_PLACEHOLDER_STEM = "PLACEHOLDER-{pr}"


@dataclass(frozen=True)
class Finding:
    """One file upstream's changelog check refuses, and why."""

    path: str
    reason: str


def check_paths(paths: list[str]) -> list[Finding]:
    """Apply upstream's rule to the files a PR adds or changes."""
    findings = []
    for path in paths:
        if path in _SKIPPED:
            continue
        name = PurePosixPath(path).name
        if path.startswith("changelog/"):
            match = _ENTRY.match(name)
            if match is None or not name.endswith(".md"):
                findings.append(
                    Finding(
                        path,
                        "not <issue>.<type>.md with type one of " + ", ".join(TYPES),
                    )
                )
        elif _LOOKS_LIKE_ENTRY.match(name) and not path.startswith(_IGNORED_ELSEWHERE):
            findings.append(Finding(path, "a changelog entry outside changelog/"))
    return findings


def entries(paths: list[str]) -> list[str]:
    """The changelog entries among ``paths`` (files under changelog/)."""
    return [p for p in paths if p.startswith("changelog/") and p not in _SKIPPED]


def fragment_name(issue: int | str, change_type: str, pr_id: str) -> str:
    """The path a PR's fragment gets: ``changelog/<issue>.<type>.md``.

    ``issue`` is a number, a ``CVE-YYYY-N`` id, or :data:`PLACEHOLDER`, which
    gives ``changelog/PLACEHOLDER-<pr>.<type>.md``: a name upstream's check
    refuses, so a draft can never pass for a finished PR.
    """
    stem = _PLACEHOLDER_STEM.format(pr=pr_id) if issue == PLACEHOLDER else str(issue)
    return f"changelog/{stem}.{change_type}.md"


def is_placeholder_fragment(path: str) -> bool:
    """True for a fragment name made by :func:`fragment_name` for a placeholder."""
    return PurePosixPath(path).name.startswith("PLACEHOLDER-")


def fragment_type(path: str) -> str | None:
    """The change type a fragment's name carries (``+name.fixed.md`` -> fixed)."""
    parts = PurePosixPath(path).name.split(".")
    if len(parts) >= 3 and parts[-1] == "md" and parts[-2] in TYPES:
        return parts[-2]
    return None
