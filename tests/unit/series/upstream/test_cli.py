"""The command line's pieces: author identity, the changelog cell, the table."""

from __future__ import annotations

import pytest

from series.upstream import cli
from series.upstream.errors import UpstreamError
from series.upstream.prmap import parse

from .test_prmap import _map


def test_author_from_the_option():
    identity, note = cli.resolve_author("Jane Doe <jane@suse.com>", draft=False)
    assert str(identity) == "Jane Doe <jane@suse.com>" and "--author" in note


@pytest.mark.parametrize("given", ["jane@suse.com", "Jane Doe", ""])
def test_a_malformed_author_is_refused(given):
    with pytest.raises(UpstreamError, match="expected 'Name <email>'"):
        cli.resolve_author(given, draft=True)


def test_a_placeholder_author_only_in_a_draft():
    with pytest.raises(UpstreamError, match="reserved for examples"):
        cli.resolve_author("saltfleet developers <dev@saltfleet.invalid>", draft=False)
    _identity, note = cli.resolve_author(
        "saltfleet developers <dev@saltfleet.invalid>", draft=True
    )
    assert note.startswith("placeholder author")


def test_no_identity_at_all(monkeypatch):
    monkeypatch.setattr(cli, "_git_config", lambda key: "")
    with pytest.raises(UpstreamError, match="no author identity"):
        cli.resolve_author(None, draft=False)
    identity, note = cli.resolve_author(None, draft=True)
    assert identity == cli.PLACEHOLDER_AUTHOR and "draft" in note


def test_changelog_cell(series):
    a, b = parse(_map(), series, draft=True).prs
    assert cli._changelog(a, ["salt/x.py", "changelog/123.fixed.md"], draft=False) == (
        "ok (123.fixed.md)",
        True,
    )
    assert cli._changelog(b, ["changelog/PLACEHOLDER-B.added.md"], draft=True) == (
        "placeholder (PLACEHOLDER-B.added.md)",
        True,
    )
    assert (
        cli._changelog(b, ["changelog/PLACEHOLDER-B.added.md"], draft=False)[1] is False
    )
    assert cli._changelog(a, ["salt/x.py"], draft=True) == (
        "fail: no changelog/ entry",
        False,
    )
    cell, ok = cli._changelog(a, ["changelog/+x.fixed.md"], draft=True)
    assert cell.startswith("fail: changelog/+x.fixed.md") and not ok


def test_table_lines_up(series):
    a, b = parse(_map(), series, draft=True).prs
    rows = [
        cli.Row(a, "3008.x: salt-3008.5 sdist", "yes", "pass: 3 passed", "pass", "ok"),
        cli.Row(b, "no master checkout", "no: x.patch does not apply"),
    ]
    lines = cli.render_table(rows).splitlines()
    assert lines[0].startswith("| PR | base")
    assert len({len(line) for line in lines}) == 1
    assert "| B  | no master checkout" in lines[3]


def test_a_rows_timing_names_each_step_and_the_total(series):
    a = parse(_map(), series, draft=True).prs[0]
    row = cli.Row(a, "3008.x: salt-3008.5 sdist")
    assert row.timing() == ""
    row.seconds.update(build=8.6, tests=38.2, lint=27.9)
    assert row.timing() == "75 s: build 9, tests 38, lint 28"
