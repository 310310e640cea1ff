"""PR.md: upstream's template, boxes ticked from the diff."""

from __future__ import annotations

from series.upstream.describe import Requirements, render
from series.upstream.prmap import parse

from .test_prmap import _map


def test_requirements_come_from_the_diff():
    assert Requirements.from_diff(
        [
            "salt/x.py",
            "doc/ref/x.rst",
            "tests/pytests/unit/test_x.py",
            "changelog/1.fixed.md",
        ]
    ) == Requirements(docs=True, changelog=True, tests=True)
    assert Requirements.from_diff(
        ["salt/x.py", "changelog/PLACEHOLDER-A.fixed.md"]
    ) == (Requirements(docs=False, changelog=False, tests=False))


def test_a_3008_fix(series):
    a = parse(_map(), series, draft=True).prs[0]
    text = render(a, Requirements(False, True, True), depends_titles=[], signed=False)
    assert text.splitlines()[0] == "# [3008.x] Fail closed"
    for heading in (
        "### What does this PR do?",
        "### What issues does this PR fix or reference?",
        "### Merge requirements satisfied?",
        "### Commits signed with GPG?",
    ):
        assert heading in text
    assert "Fixes: #123" in text
    assert "- [ ] Docs" in text and "- [x] Changelog - https://" in text
    assert "- [x] Tests written/updated" in text
    assert text.rstrip().endswith("No")
    # sections without content are left out, as the template asks
    assert "Previous Behavior" not in text


def test_a_master_feature_with_a_placeholder_and_a_dependency(series):
    b = parse(_map(), series, draft=True).prs[1]
    text = render(
        b,
        Requirements(True, False, False),
        depends_titles=["[3008.x] Fail closed"],
        signed=True,
    )
    assert text.splitlines()[0] == "# Reuse connections"
    assert "Fixes: (placeholder: no upstream issue yet" in text
    assert "Depends on (to be merged first):\n- [3008.x] Fail closed" in text
    assert (
        "### Previous Behavior\n\nBefore." in text
        and "### New Behavior\n\nAfter." in text
    )
    assert text.rstrip().endswith("Yes")
