"""PR.md: upstream's template, boxes ticked from the diff."""

from __future__ import annotations

from series.upstream.cli import Row, _write_issue
from series.upstream.describe import Requirements, render, render_issue
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


def test_issue_md_of_a_feature_follows_the_feature_request_template(series):
    b = parse(_map(), series, draft=True).prs[1]
    assert render_issue(b, "3008.3") == (
        "# [Feature Request] Connections are not reused\n"
        "\n"
        "**Is your feature request related to a problem? Please describe.**\n"
        "Every compile connects.\n"
        "\n"
        "Seen on Salt 3008.3:\n"
        "\n"
        "Compile twice; see two connections.\n"
        "\n"
        "**Describe the solution you'd like**\n"
        "Keep them.\n"
        "\n"
        "**Additional context**\n"
        'A pull request is ready: "Reuse connections".\n'
    )


def test_issue_md_of_a_fix_follows_the_bug_report_template(series):
    data = _map()
    data["pr"][1].update(type="fixed", references=[58775])
    b = parse(data, series, draft=True).prs[1]
    assert render_issue(b, "3008.3") == (
        "# [BUG] Connections are not reused\n"
        "\n"
        "**Description**\n"
        "Every compile connects.\n"
        "\n"
        "**Steps to Reproduce the behavior**\n"
        "Compile twice; see two connections.\n"
        "\n"
        "**Expected behavior**\n"
        "Keep them.\n"
        "\n"
        "**Versions Report**\n"
        "Salt 3008.3 (the release's sdist, unpatched).\n"
        "\n"
        "**Additional context**\n"
        'A pull request is ready: "Reuse connections". Related: #58775.\n'
    )


def test_no_issue_md_once_the_issue_has_a_number(series):
    data = _map()
    data["pr"][1]["issue"] = 67720
    b = parse(data, series, draft=True).prs[1]
    assert b.issue_text is not None
    assert render_issue(b, "3008.3") is None


def test_issue_md_is_written_beside_pr_md_and_a_stale_one_removed(series, tmp_path):
    the_map = parse(_map(), series, draft=True)
    a, b = the_map.prs
    row = Row(b, "3008.x")
    _write_issue(row, tmp_path / "B", "3008.3")
    written = (tmp_path / "B" / "ISSUE.md").read_text()
    assert written == render_issue(b, "3008.3")
    assert row.details == [f"issue to file: {tmp_path / 'B' / 'ISSUE.md'}"]
    # A has an issue number: an ISSUE.md left from when it had none goes
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "ISSUE.md").write_text("stale")
    _write_issue(Row(a, "3008.x"), tmp_path / "A", "3008.3")
    assert not (tmp_path / "A" / "ISSUE.md").exists()
