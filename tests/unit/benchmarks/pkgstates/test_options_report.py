"""The package-state benchmark's command line, reproduce line and goal lines:
the report must say how to run it again and whether each goal was met, by how much."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.pkgstates.highstate import HighstateRound, count_states
from benchmarks.pkgstates.measure import InProcessResult, SaveRound
from benchmarks.pkgstates.options import (
    COMMAND,
    PkgstatesOptions,
    add_arguments,
    from_args,
)
from benchmarks.pkgstates.report import goal_lines


def _parse(words: list[str]) -> PkgstatesOptions:
    parser = argparse.ArgumentParser(prog="pkgstates")
    add_arguments(parser)
    return from_args(parser.parse_args(words))


def test_defaults_are_the_issues_sizes_and_reproduce_is_the_bare_command() -> None:
    opts = _parse([])
    assert (opts.minions, opts.packages, opts.groups) == (1000, 200, 10)
    assert opts.reproduce_command() == COMMAND
    assert opts.output_name == "pkgstates"


def test_reproduce_line_parses_back_to_the_same_options() -> None:
    words = ["--minions", "50", "--no-highstate", "--output-name", "pkgstates-50"]
    opts = _parse(words)
    line = opts.reproduce_command()
    assert line == f"{COMMAND} --minions 50 --no-highstate --output-name pkgstates-50"
    assert _parse(line.split()[5:]) == opts


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--groups", "1"], "at least 2 are needed"),
        (["--minions", "2", "--processes", "3"], "more than --minions"),
    ],
)
def test_bad_combinations_are_clear_errors(words: list[str], message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        _parse(words)


def test_bad_report_names_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(["--output-name", "../x"])
    assert "invalid report name '../x'" in capsys.readouterr().err


def _result(ours_save: float, baseline_after: float, identical: int) -> InProcessResult:
    result = InProcessResult(minions=4, affected=4, entries_per_state=200)
    result.ours = [SaveRound(2, ours_save, 1.0, 4), SaveRound(4, ours_save, 1.0, 4)]
    result.baseline = [SaveRound(3, 0.01, baseline_after, 4)] * 2
    result.identical = identical
    return result


def test_goal_lines_say_met_and_by_how_much() -> None:
    lines = goal_lines(_result(0.01, 1.99, 4))
    assert lines[0].endswith("200.0x (10.0 ms vs 2000 ms), by a factor of 20.0: met")
    assert lines[1].endswith("4 of 4: met")
    assert lines[2].endswith("4 of 4 minions: met")


def test_goal_lines_say_missed_and_by_how_much() -> None:
    lines = goal_lines(_result(0.1, 0.49, 3))
    assert lines[0].endswith(
        "5.0x (100.0 ms vs 500 ms), short by a factor of 2.0: NOT met"
    )
    assert lines[2].endswith("3 of 4 minions: NOT met")


def test_highstate_counts_only_package_states() -> None:
    round_ = HighstateRound(0.0, 0)
    count_states(
        round_,
        "evil-0001",
        {
            "a": {"__sls__": "pkgstate", "result": True, "changes": {"vim": {}}},
            "b": {"__sls__": "pkgstate", "result": True, "changes": {}},
            "c": {"__sls__": "base", "result": True, "changes": {"x": 1}},
            "d": {
                "__sls__": "pkgstate",
                "result": False,
                "changes": {},
                "comment": "no",
            },
        },
    )
    count_states(round_, "evil-0002", "Pillar failed to render")
    assert (round_.states_changed, round_.states_unchanged, round_.states_failed) == (
        1,
        1,
        1,
    )
    assert (round_.minions_changed, round_.minions_failed) == (1, 2)
    assert round_.first_failure == "evil-0001: no"
