"""The pillar-compile benchmark's pure parts: variants' options, run order,
the pillar check and the report's goals."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import pillar_compile, report
from benchmarks.pillar_compile import VARIANTS, Measured, Variant
from benchmarks.plain_options import PillarCompileOptions
from harness.pillar.generate import generate
from harness.pillar.model import merged_pillar
from harness.postgres import ConnectionInfo

INFO = ConnectionInfo(
    host="127.0.0.1", port=5432, user="salt", password="pw", dbname="salt"
)


def test_only_the_series_gets_the_reuse_option() -> None:
    pristine, off, on = VARIANTS
    tree = Path("/tree")
    assert "pillar_reuse_loaders" not in pillar_compile.overrides(
        pristine, "db", info=INFO, tree=tree
    )
    assert (
        pillar_compile.overrides(off, "db", info=INFO, tree=tree)[
            "pillar_reuse_loaders"
        ]
        is False
    )
    files = pillar_compile.overrides(on, "files", info=INFO, tree=tree)
    assert files["pillar_reuse_loaders"] is True
    assert files["pillar_roots"] == {"base": ["/tree"]}
    assert "ext_pillar" not in files


def test_a_missing_or_different_pillar_is_wrong() -> None:
    fleet = generate(["m1", "m2", "m3"])
    pillars = {"m1": merged_pillar(fleet, "m1"), "m2": {"other": 1}}
    assert pillar_compile.wrong_pillars(fleet, pillars, ["m1", "m2", "m3"]) == [
        "m2",
        "m3",
    ]


def test_the_reproduce_line_names_only_changed_settings() -> None:
    assert PillarCompileOptions().reproduce_command() == (
        "nox -s bench -- pillar-compile"
    )
    assert PillarCompileOptions(fleet=40, requests=10, runs=4).reproduce_command() == (
        "nox -s bench -- pillar-compile --fleet 40 --requests 10 --runs 4"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"runs": 2}, "--runs 2: at least 3"),
        (
            {"fleet": 100, "requests": 99},
            "--requests 99 \\+ --warmup 5 exceed --fleet 100",
        ),
    ],
)
def test_sizes_that_cannot_give_a_median_or_a_sample_are_refused(
    kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PillarCompileOptions(**kwargs)


def _measured(ms: dict[str, tuple[float, float]]) -> list[Measured]:
    """Two runs per variant: ``ms[variant] = (db, files)``."""
    ret = []
    for variant, (db, files) in ms.items():
        ret.append(Measured(variant, "db", report.Runs([db, db * 1.1])))
        ret.append(Measured(variant, "files", report.Runs([files, files * 1.1])))
    return ret


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    """Reports go to ``tmp_path``, not to ``benchmarks/results``."""
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    return tmp_path


def test_the_report_says_which_goal_is_missed_and_by_how_much(
    results_dir: Path,
) -> None:
    results = _measured(
        {
            "pristine 3008.3": (100.0, 100.0),
            "series, reuse off": (90.0, 100.0),
            "series, reuse on": (14.0, 30.0),
        }
    )
    results[-1].wrong.append("m7")
    path = pillar_compile.write_report(
        results, PillarCompileOptions(fleet=40, requests=10, warmup=2), commits="x"
    )
    text = path.read_text()
    assert path == results_dir / "pillar-compile.md"
    assert "Regenerate: `nox -s bench -- pillar-compile --fleet 40 --requests 10" in (
        text
    )
    assert "= 0.140 x pristine (goal <= 0.07): NOT met (by 2.0x)" in text
    assert "= 0.300 x pristine (goal <= 0.5): met" in text
    assert "series, reuse on / files: 1 (first m7)" in text
    assert (results_dir / "pillar-compile.png").exists()
    assert (results_dir / "pillar-compile.json").exists()


def test_a_variant_is_a_tree_and_an_option() -> None:
    assert [(v.tree, v.option) for v in VARIANTS] == [
        ("pristine", None),
        ("series", False),
        ("series", True),
    ]
    assert Variant("x", "series", True).option is True
