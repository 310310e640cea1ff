"""patches/prs.toml validation: every bad map is one clear UpstreamError."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from series import vendor
from series.upstream.errors import UpstreamError
from series.upstream.patchfile import read_patches
from series.upstream.prmap import IssueText, load, parse
from tests.conftest import PROJECT_ROOT

FIX = "Fail closed when a postgres ext_pillar query fails"
POOL = "Reuse postgres ext_pillar connections and pass libpq options"
OTHER = "Add another thing with a long subject that git folds over two header lines"


def _map() -> dict:
    return {
        "pr": [
            {
                "id": "A",
                "title": "Fail closed",
                "base": "3008.x",
                "type": "fixed",
                "issue": 123,
                "patches": [FIX],
                "what": "Fixes it.",
            },
            {
                "id": "B",
                "title": "Reuse connections",
                "base": "master",
                "type": "added",
                "issue": "placeholder",
                "depends": ["A"],
                "patches": [POOL, OTHER],
                "what": "Adds it.",
                "previous": "Before.",
                "new": "After.",
                "issue_title": "Connections are not reused",
                "issue_problem": "Every compile connects.",
                "issue_reproduction": "Compile twice; see two connections.",
                "issue_proposal": "Keep them.",
            },
        ]
    }


def _error(data: dict, series, *, draft: bool = True) -> str:
    with pytest.raises(UpstreamError) as info:
        parse(data, series, draft=draft)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_good_map_resolves_subjects_to_files(series):
    the_map = parse(_map(), series, draft=True)
    a, b = the_map.prs
    assert a.patches == (series[0],)
    assert b.patches == (series[1], series[2])
    assert a.full_title == "[3008.x] Fail closed"
    assert b.full_title == "Reuse connections"
    assert b.placeholder and not a.placeholder
    assert the_map.dependency_chain(b) == [a]
    assert the_map.warnings == ()


def test_patches_may_be_named_by_file_name_and_apply_in_series_order(series):
    data = _map()
    data["pr"][1]["patches"] = [OTHER, series[1].path.name]
    assert parse(data, series, draft=True).prs[1].patches == (series[1], series[2])


def test_unknown_subject(series):
    data = _map()
    data["pr"][0]["patches"] = ["No such patch"]
    assert "no patch in the series has the subject 'No such patch'" in _error(
        data, series
    )


def test_a_patch_in_two_prs(series):
    data = _map()
    data["pr"][1]["patches"] = [FIX, POOL, OTHER]
    assert "already in PR 'A'" in _error(data, series)


def test_a_series_patch_in_no_pr(series):
    data = _map()
    data["pr"][1]["patches"] = [POOL]
    assert f"{series[2].path.name}" in _error(data, series)
    assert "is in no PR" in _error(data, series)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("type", "bugfix", "type 'bugfix' is not one of removed, deprecated"),
        ("base", "3007.x", "base '3007.x' is not one of 3008.x, master"),
        ("issue", "#123", "issue must be a number"),
        ("id", "A B", "id must be letters"),
        ("title", "[3008.x] Fail closed", "branch prefix"),
        ("colour", "red", "unknown key(s) colour"),
        ("depends", ["Z"], "depends on 'Z', which is not in the map"),
    ],
)
def test_bad_values(series, key, value, expected):
    data = _map()
    data["pr"][0][key] = value
    assert expected in _error(data, series)


def test_placeholder_needs_draft(series):
    message = _error(_map(), series, draft=False)
    assert "PR 'B': issue is a placeholder" in message and "--draft" in message


def test_a_feature_on_the_release_branch_is_refused(series):
    data = _map()
    data["pr"][0]["type"] = "added"
    assert "upstream takes only fixes on a release branch" in _error(data, series)


def test_a_fix_on_master_is_a_warning(series):
    data = _map()
    data["pr"][1]["type"] = "fixed"
    the_map = parse(data, series, draft=True)
    assert len(the_map.warnings) == 1 and "PR B" in the_map.warnings[0]


def test_dependency_cycle(series):
    data = _map()
    data["pr"][0]["depends"] = ["B"]
    assert "dependency cycle" in _error(data, series)


def test_missing_key_and_empty_map(series):
    data = _map()
    del data["pr"][0]["what"]
    assert "missing 'what'" in _error(data, series)
    assert "no [[pr]] tables" in _error({"pr": []}, series)
    assert "unknown top-level key" in _error(
        {"prs": copy.deepcopy(_map()["pr"])}, series
    )


def test_invalid_toml_is_one_line(tmp_path, series):
    bad = tmp_path / "prs.toml"
    bad.write_text("[[pr]\nid = 'A'\n")
    with pytest.raises(UpstreamError, match="not valid TOML"):
        load(bad, series, draft=True)


def test_the_command_line_reports_a_bad_map_without_traceback(tmp_path):
    bad = tmp_path / "prs.toml"
    bad.write_text(
        '[[pr]]\nid = "A"\ntitle = "t"\nbase = "3008.x"\ntype = "fixed"\n'
        'issue = 1\nwhat = "w"\npatches = ["No such patch"]\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "series.upstream", "--map", str(bad), "--no-tests"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {bad}: PR 'A': no patch in the series has the subject 'No such patch'"
    ]
    assert "Traceback" not in proc.stderr


def test_issue_text_is_read_for_issue_md(series):
    b = parse(_map(), series, draft=True).prs[1]
    assert b.issue_text == IssueText(
        "Connections are not reused",
        "Every compile connects.",
        "Compile twice; see two connections.",
        "Keep them.",
    )
    assert parse(_map(), series, draft=True).prs[0].issue_text is None


def test_issue_text_needs_every_part(series):
    data = _map()
    del data["pr"][1]["issue_reproduction"]
    assert "missing 'issue_reproduction'" in _error(data, series)
    data = _map()
    data["pr"][1]["issue_title"] = "[BUG] Connections"
    assert "issue_title starts with a prefix" in _error(data, series)


def test_a_placeholder_without_issue_text_is_a_warning(series):
    data = _map()
    for part in ("title", "problem", "reproduction", "proposal"):
        del data["pr"][1][f"issue_{part}"]
    (warning,) = parse(data, series, draft=True).warnings
    assert warning.startswith("PR 'B': placeholder issue without issue_title")


def test_every_placeholder_in_the_project_map_has_its_issue_text():
    """Each PR without an upstream issue is one paste from filed."""
    layout = vendor.Layout.of_project()
    patches = read_patches(
        layout.patches_dir, [p.name for p in vendor.read_series(layout)]
    )
    the_map = load(layout.patches_dir / "prs.toml", patches, draft=True)
    assert [w for w in the_map.warnings if "placeholder issue" in w] == []
