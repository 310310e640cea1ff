"""The pillar benchmark's pure parts: its variants on the command line, the
reproduce line, and the fair file baseline's top file."""

from __future__ import annotations

import argparse
import fnmatch
import re

import jinja2
import pytest
import yaml

from benchmarks import pillar
from benchmarks.plain_options import PillarOptions
from harness.fleet import minion_ids
from harness.pillar.files import _row_path, _sls_name
from harness.pillar.generate import generate
from harness.pillar.model import rows_for


def test_variants_name_a_source_and_a_tuning() -> None:
    assert pillar.variant_list("db-function, files-fair+reuse,files+cache") == [
        "db-function",
        "files-fair+reuse",
        "files+cache",
    ]


@pytest.mark.parametrize("value", ["db-nope", "files+fast", "files,files", ","])
def test_bad_variants_are_refused_with_the_choices(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="TUNING one of reuse"):
        pillar.variant_list(value)


def test_reproduce_names_only_what_differs_from_the_defaults() -> None:
    assert PillarOptions().reproduce_command() == "nox -s bench -- pillar"
    assert PillarOptions(
        minions=50, rounds=3, variants=("db-function", "db-function+reuse")
    ).reproduce_command() == (
        "nox -s bench -- pillar --minions 50 --rounds 3 "
        "--variants db-function,db-function+reuse"
    )
    assert PillarOptions(output_name="pillar-reuse").reproduce_command() == (
        "nox -s bench -- pillar --output-name pillar-reuse"
    )


def _matches(
    target: str, body: list[object], minion_id: str, groups: dict[str, str]
) -> bool:
    if {"match": "nodegroup"} in body:
        return minion_id in groups[target].removeprefix("L@").split(",")
    return fnmatch.fnmatch(minion_id, target)


def test_fair_top_gives_each_minion_its_rows_in_merge_order() -> None:
    fleet = generate(minion_ids("evil", 40))
    text, nodegroups = pillar.fair_top(fleet)
    env = jinja2.Environment()
    # Salt's filter of that name
    env.filters["regex_replace"] = lambda value, pattern, repl: re.sub(
        pattern, repl, value
    )
    sls = {_sls_name(_row_path(row, fleet)) for row in fleet.rows}
    for minion_id in fleet.minions:
        rendered = env.from_string(text).render(grains={"id": minion_id})
        top = yaml.safe_load(rendered)["base"]
        # the SLS of the matching entries in file order, globs expanded as
        # Salt expands them over the sorted SLS names
        got = [
            name
            for target, body in top.items()
            if _matches(target, body, minion_id, nodegroups)
            for item in body
            if isinstance(item, str)
            for name in sorted(fnmatch.filter(sls, item))
        ]
        want = [_sls_name(_row_path(r, fleet)) for r in rows_for(fleet, minion_id)]
        assert got == want


def test_ratio_lines_say_met_missed_or_no_goal() -> None:
    by_name = {
        "db-function": pillar.FleetResult("db-function", p99_s=[10.0, 12.0, 8.0]),
        "db-function+reuse": pillar.FleetResult(
            "db-function+reuse", p99_s=[4.0, 5.0, 3.0]
        ),
    }
    p99 = pillar._p99_median
    assert pillar._ratio_goal(
        by_name, "db-function+reuse", "db-function", "p99", p99, 0.3
    ) == (
        "- db-function+reuse p99 = 0.40 x db-function (goal <= 0.3): NOT met (by 1.3x)"
    )
    assert pillar._ratio_goal(
        by_name, "db-function+reuse", "db-function", "p99", p99, 0.5
    ) == ("- db-function+reuse p99 = 0.40 x db-function (goal <= 0.5): met")
    assert pillar._ratio_goal(
        by_name, "db-function+reuse", "db-function", "p99", p99, None
    ) == ("- db-function+reuse p99 = 0.40 x db-function (no goal)")
    # a variant that was not run has no line
    assert pillar._ratio_goal(by_name, "files", "db-function", "p99", p99, 1) is None
