"""`nox -s upstream` end to end for one 3008.x PR, on the real Salt 3008.3 sdist.

The worker-pool session-key fix (PR B, patch 0002) as its own PR: it must apply to
the plain release, its tests and upstream's tests of the areas it touches must
pass there, the linters 3008.3 pins must find nothing new, and its fragment
must get the name upstream's changelog check accepts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from series.upstream.patchfile import read_patch
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.integration

SUBJECT = "Open minion requests with their session key when routing to worker pools"
MAP = f"""
[[pr]]
id = "B"
title = "{SUBJECT}"
base = "3008.x"
type = "fixed"
issue = 69925
references = [69926]
patches = ["{SUBJECT}"]
what = "Route minion requests with their session key."
"""


def _series_with_only_the_fix(tmp_path: Path) -> Path:
    patches = tmp_path / "patches"
    patches.mkdir()
    (patch,) = [
        p
        for p in (PROJECT_ROOT / "patches").glob("*.patch")
        if read_patch(p).subject == SUBJECT
    ]
    shutil.copy(patch, patches / patch.name)
    (patches / "series").write_text(patch.name + "\n")
    (patches / "prs.toml").write_text(MAP)
    return patches


def test_the_session_key_fix_is_a_ready_3008_pr(tmp_path):
    patches = _series_with_only_the_fix(tmp_path)
    work = tmp_path / "work"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "series.upstream",
            "--patches",
            str(patches),
            "--sdist",
            "3008.3",
            "--author",
            "Jane Doe <jane@suse.com>",
            "--workdir",
            str(work),
            "--python",
            sys.executable,
            "--test-timeout",
            "900",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("| B ")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["B", "3008.x: salt-3008.3 sdist", "yes"]
    assert cells[3].startswith("pass: ") and "failed" not in cells[3]
    assert cells[4] == "pass (pylint+isort)"
    assert cells[5] == "ok (69925.fixed.md)"
    # the commit upstream gets: the submitter's, with upstream's fragment name
    repo = work / "B" / "repo"
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%an <%ae>%n%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log == ["Jane Doe <jane@suse.com>", SUBJECT]
    assert (repo / "changelog" / "69925.fixed.md").is_file()
    description = (work / "B" / "PR.md").read_text()
    assert description.startswith(f"# [3008.x] {SUBJECT}\n")
    assert (
        "Fixes: #69925" in description and "- [x] Tests written/updated" in description
    )
    summary = (work / "summary.md").read_text()
    assert "sha256 pinned in salt/UPSTREAM" in summary
    assert "black: not pinned by the base" in summary
