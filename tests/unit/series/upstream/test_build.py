"""Building a PR's commits: deps first, fragments renamed, placeholder author replaced."""

from __future__ import annotations

import subprocess

from series.upstream import build
from series.upstream.build import Identity
from series.upstream.patchfile import read_patch
from series.upstream.prmap import PullRequest, parse

from .conftest import commit, git, tree_base
from .test_prmap import _map

ME = Identity("Jane Doe", "jane@suse.com")


def _log(repo, rev_range, fmt):
    return (
        git(repo, "log", "--reverse", f"--format={fmt}", rev_range).strip().splitlines()
    )


def test_a_pr_with_a_dependency(tmp_path, series, base):
    the_map = parse(_map(), series, draft=True)
    _a, b = the_map.prs
    built = build.build(b, the_map.dependency_chain(b), base, tmp_path / "B", ME)
    assert built.applied, built.failure
    repo = built.repo
    # the dependency's commit: renamed to A's issue, marked, by the submitter
    (dep,) = _log(repo, f"{build.BASE_TAG}..{build.START_TAG}", "%an <%ae>|%s")
    assert (
        dep
        == "Jane Doe <jane@suse.com>|Fail closed when a postgres ext_pillar query fails"
    )
    message = git(repo, "log", "-1", "--format=%B", build.START_TAG)
    assert "Saltfleet-Dependency: PR A ([3008.x] Fail closed)" in message
    # the PR's own commits: one by the placeholder (replaced), one by a real author (kept)
    own = _log(repo, f"{build.START_TAG}..HEAD", "%an|%cn")
    assert own == ["Jane Doe|Jane Doe", "Real Person|Jane Doe"]
    # both of B's fragments end in one placeholder entry that upstream's check refuses
    files = build.changed_files(repo)
    assert "changelog/PLACEHOLDER-B.added.md" in files
    assert not [f for f in files if "+" in f]
    text = (repo / "changelog/PLACEHOLDER-B.added.md").read_text()
    assert text == "Reuse connections.\nOther.\n"
    assert (repo / "changelog/123.fixed.md").read_text() == "Fail closed.\n"
    assert not build.signed(repo)
    assert ("changelog/+pillar-fail-closed.fixed.md", "changelog/123.fixed.md") in (
        built.fragments
    )


def test_a_patch_that_does_not_apply_is_named(tmp_path, series, base):
    the_map = parse(_map(), series, draft=True)
    _a, b = the_map.prs
    # B's first patch needs A's change: without the dependency it fails
    built = build.build(b, [], base, tmp_path / "B", ME)
    assert not built.applied
    assert series[1].path.name in built.failure
    assert (
        built.short_failure == f"{series[1].path.name[:4]} at salt/pillar/postgres.py:1"
    )
    status = subprocess.run(
        ["git", "-C", str(built.repo), "status", "--porcelain"],
        capture_output=True,
        text=True,
    )
    assert status.stdout == ""  # git am was aborted


def test_rebuilding_starts_from_scratch(tmp_path, series, base):
    the_map = parse(_map(), series, draft=True)
    a = the_map.prs[0]
    first = build.build(a, [], base, tmp_path / "A", ME)
    second = build.build(a, [], base, tmp_path / "A", ME)
    assert first.applied and second.applied
    assert len(_log(second.repo, "HEAD", "%s")) == 2


def test_a_patch_with_another_prs_line_in_its_context_merges_three_way(tmp_path):
    # Two PRs add neighbouring entries to one index: the second patch's
    # context holds the first one's line. With the series' objects git merges
    # it as a rebase would; without them it does not apply.
    lines = "".join(f"{name}\n" for name in "abcdefgh")
    series_repo = tmp_path / "series"
    series_repo.mkdir()
    git(series_repo, "init", "-q", "-b", "main")
    commit(series_repo, {"doc/index.rst": lines}, "pristine")
    commit(
        series_repo,
        {"doc/index.rst": lines.replace("c\n", "c\nc2\n")},
        "Add the c2 entry",
    )
    commit(
        series_repo,
        {"doc/index.rst": lines.replace("c\n", "c\nc2\n").replace("d\n", "d\nd2\n")},
        "Add the d2 entry",
    )
    out = tmp_path / "patches"
    git(series_repo, "format-patch", "-q", "-o", str(out), "HEAD~2..HEAD")
    series = [read_patch(p) for p in sorted(out.glob("*.patch"))]
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    commit(upstream, {"doc/index.rst": lines}, "pristine")
    base = tree_base(upstream, "main")
    pr = PullRequest(
        id="D2",
        title="Add the d2 entry",
        base="3008.x",
        type="added",
        issue="placeholder",
        references=(),
        depends=(),
        patches=(series[1],),
        what="d2",
        previous="",
        new="",
    )
    alone = build.build(pr, [], base, tmp_path / "alone", ME)
    assert not alone.applied
    merged = build.build(pr, [], base, tmp_path / "merged", ME, series_repo=series_repo)
    assert merged.applied, merged.failure
    assert (merged.repo / "doc/index.rst").read_text() == lines.replace(
        "d\n", "d\nd2\n"
    )
    assert f"{series[1].path.name[:4]} merged three-way" in " ".join(merged.notes)
