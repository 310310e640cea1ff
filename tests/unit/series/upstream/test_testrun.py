"""Which upstream tests a PR runs, and how pytest's verdict is read."""

from __future__ import annotations

from series.upstream import testrun


def test_selection_follows_upstreams_conventions(tmp_path):
    for path in (
        "tests/pytests/unit/pillar/test_postgres.py",
        "tests/pytests/unit/utils/test_versions.py",
        "tests/pytests/unit/test_master.py",
        "tests/unit/test_module_names.py",
        "tests/pytests/unit/channel/test_server.py",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    selected = testrun.select(
        [
            "salt/pillar/postgres.py",  # -> its area
            "tests/pytests/unit/pillar/test_postgres.py",  # inside that area
            "salt/master.py",  # top-level module -> its test file
            "salt/channel/server.py",
            "salt/cloud/x.py",  # no such area in this tree
            "doc/ref/x.rst",
        ],
        tmp_path,
    )
    assert selected == [
        "tests/pytests/unit/channel",
        "tests/pytests/unit/pillar",
        "tests/pytests/unit/test_master.py",
        "tests/pytests/unit/utils/test_versions.py",  # always run, when present
        "tests/unit/test_module_names.py",
    ]


def test_summary_line():
    out = "....F\n=== 1 failed, 4 passed, 2 skipped in 3.2s ===\n"
    assert testrun.summarize(out) == "1 failed, 4 passed, 2 skipped"
    assert testrun.summarize("12 passed in 0.5s\n") == "12 passed"
    assert testrun.summarize("nothing\n") == ""


def test_no_paths_is_no_tests(tmp_path):
    outcome = testrun.run(
        "python3", tmp_path, [], tmp_path / "log", timeout=10, workers=1
    )
    assert outcome.ok and outcome.summary == "no tests"


def test_a_broad_area_gives_the_modules_own_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(testrun, "AREA_LIMIT", 2)
    for name in ("test_a.py", "test_b.py", "test_aptpkg.py"):
        path = tmp_path / "tests/pytests/unit/modules" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (tmp_path / "tests/unit/modules").mkdir(parents=True)
    (tmp_path / "tests/unit/modules/test_aptpkg.py").write_text("")
    assert testrun.select(["salt/modules/aptpkg.py"], tmp_path) == [
        "tests/pytests/unit/modules/test_aptpkg.py",
        "tests/unit/modules/test_aptpkg.py",
    ]
