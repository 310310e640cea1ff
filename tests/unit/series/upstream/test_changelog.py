"""Upstream's changelog rule (tools/precommit/changelog.py) and our fragment names."""

from __future__ import annotations

import pytest

from series.upstream import changelog


@pytest.mark.parametrize(
    "path",
    [
        "changelog/69925.fixed.md",
        "changelog/1.added.md",
        "changelog/CVE-2024-12345.security.md",
        "changelog/cve-2024-1.security.md",
        "changelog/.keep",
        "salt/pillar/postgres.py",
        "doc/topics/releases/123.fixed.md",
    ],
)
def test_accepted(path):
    assert changelog.check_paths([path]) == []


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("changelog/+pillar-postgres.fixed.md", "not <issue>.<type>.md"),
        ("changelog/69925.fixed", "not <issue>.<type>.md"),
        ("changelog/69925.bugfix.md", "not <issue>.<type>.md"),
        ("changelog/69925.fixed.txt", "not <issue>.<type>.md"),
        ("changelog/PLACEHOLDER-A.fixed.md", "not <issue>.<type>.md"),
        ("salt/69925.fixed.md", "outside changelog/"),
    ],
)
def test_refused(path, reason):
    (finding,) = changelog.check_paths([path])
    assert finding.path == path and reason in finding.reason


def test_fragment_names():
    assert changelog.fragment_name(69925, "fixed", "B") == "changelog/69925.fixed.md"
    assert changelog.fragment_name("CVE-2024-1", "security", "B") == (
        "changelog/CVE-2024-1.security.md"
    )
    placeholder = changelog.fragment_name("placeholder", "fixed", "A")
    assert changelog.is_placeholder_fragment(placeholder)
    # a draft's fragment can never pass upstream's check by accident
    assert changelog.check_paths([placeholder])


def test_fragment_type():
    assert changelog.fragment_type("changelog/+pool.fixed.md") == "fixed"
    assert changelog.fragment_type("changelog/README.md") is None
