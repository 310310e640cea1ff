"""The package-state benchmark's command line, reproduce line and goal lines:
the report must say how to run it again and whether each goal was met, by how much."""

from __future__ import annotations

import argparse
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks import options
from benchmarks.pkgstates import highstate
from benchmarks.pkgstates.highstate import (
    HighstateRound,
    VariantRounds,
    count_states,
    count_visible,
    given_up_returns,
)
from benchmarks.pkgstates.measure import InProcessResult, SaveRound
from benchmarks.pkgstates.options import (
    COMMAND,
    PkgstatesOptions,
)
from benchmarks.pkgstates.report import (
    _highstate_rows,
    capped_rounds,
    goal_lines,
    highstate_goal_lines,
)


def _parse(words: list[str]) -> PkgstatesOptions:
    parser = argparse.ArgumentParser(prog="pkgstates")
    options.add_arguments(parser, PkgstatesOptions)
    return options.from_args(PkgstatesOptions, parser.parse_args(words))


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


def _result(
    ours_compile: float, baseline_after: float, identical: int
) -> InProcessResult:
    result = InProcessResult(minions=4, affected=4, entries_per_state=200)
    result.ours = [SaveRound(2, 0.005, ours_compile, 4)] * 2
    result.baseline = [SaveRound(3, 0.01, baseline_after, 4)] * 2
    result.identical = identical
    return result


def test_goal_lines_say_met_and_by_how_much() -> None:
    # ours is visible when every affected minion's compile has seen the
    # revision: the save plus those compiles, not the save alone
    lines = goal_lines(_result(0.005, 1.99, 4))
    assert lines[0].endswith("200.0x (10.0 ms vs 2000 ms), by a factor of 20.0: met")
    assert lines[1].endswith("4 of 4: met")
    assert lines[2].endswith("4 of 4 minions: met")


def test_goal_lines_say_missed_and_by_how_much() -> None:
    lines = goal_lines(_result(0.095, 0.49, 3))
    assert lines[0].endswith(
        "5.0x (100.0 ms vs 500 ms), short by a factor of 2.0: NOT met"
    )
    assert lines[2].endswith("3 of 4 minions: NOT met")


def test_variants_and_highstate_rounds_are_in_the_reproduce_line() -> None:
    opts = _parse(["--highstate-rounds", "2", "--variants", "on, off"])
    assert opts.variants == "on,off"
    line = opts.reproduce_command()
    assert line == f"{COMMAND} --highstate-rounds 2 --variants on,off"
    assert _parse(line.split()[5:]) == opts


@pytest.mark.parametrize("value", ["off,nope", "off,off", ""])
def test_bad_variants_are_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _parse(["--variants", value])
    assert "invalid variants" in capsys.readouterr().err


class _Store:
    """Resolves every minion to one package at the given policy."""

    def __init__(self, policy: str) -> None:
        self.policy = policy

    def resolve_all(self, grains: dict[str, object]) -> dict[str, dict[str, object]]:
        return {m: {"packages": {"vim": {"policy": self.policy}}} for m in grains}


def _applied(policy: str) -> dict[str, object]:
    return {
        "a": {"__sls__": "pkgstate", "__id__": f"pkgstate-{policy}-vim"},
        "b": {"__sls__": "pkgstate", "__id__": "pkgstate-held-vim"},
    }


def test_a_minion_has_seen_the_revision_when_it_applied_its_states() -> None:
    round_ = HighstateRound(0.0, 0)
    count_states(round_, "evil-0001", _applied("latest"))
    count_states(round_, "evil-0002", _applied("installed"))
    # evil-0003 did not return
    count_visible(round_, _Store("latest"), ["evil-0001", "evil-0002", "evil-0003"])
    assert round_.visible == 1
    assert round_.first_stale == "evil-0002"


def _variant(name: str, seconds: list[float], visible: int) -> VariantRounds:
    rounds = [HighstateRound(s, 4, visible=visible, save_s=0.5) for s in seconds]
    return VariantRounds(name, name, rounds)


def test_highstate_goals_compare_medians_and_need_every_minion() -> None:
    opts = _parse(["--minions", "4"])
    met = highstate_goal_lines(
        [_variant("off", [100, 90, 110], 4), _variant("on", [30, 40, 35], 4)], opts
    )
    assert met[0].endswith("0.35 x (35.0 s vs 100.0 s): met")
    assert met[1:] == [
        "- every minion's compile saw the new revision in every off round: "
        "at least 4 of 4: met",
        "- every minion's compile saw the new revision in every on round: "
        "at least 4 of 4: met",
    ]
    missed = highstate_goal_lines(
        [_variant("off", [100], 4), _variant("cache", [5], 0), _variant("on", [80], 4)],
        opts,
    )
    assert missed[0].endswith("0.80 x (80.0 s vs 100.0 s): NOT met (by 2.0x)")
    assert missed[2].endswith("cache round: at least 0 of 4: NOT met")


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


def _capped(
    name: str,
    seconds: list[float],
    returns: list[int],
    given_up: list[int] | None = None,
    lost: list[int] | None = None,
) -> VariantRounds:
    """Rounds that took ``seconds`` with ``returns`` each (and as many
    visible), none given up or lost unless those are given."""
    zero = [0] * len(seconds)
    rounds = [
        HighstateRound(s, n, given_up=g, lost=x, visible=n, save_s=0.5)
        for s, n, g, x in zip(
            seconds, returns, given_up or zero, lost or zero, strict=True
        )
    ]
    return VariantRounds(name, name, rounds)


def test_a_capped_median_makes_the_ratio_a_bound_and_no_verdict() -> None:
    opts = _parse(["--minions", "4"])
    # off: two of three rounds ended at the time-out with a minion missing
    off = _capped("off", [910, 910, 905], [3, 3, 4])
    lines = highstate_goal_lines([off, _capped("on", [560, 530, 570], [4] * 3)], opts)
    assert lines[0].endswith(
        "<= 0.62 x (560.0 s vs 910.0 s): not judged: off's median is the 900 s "
        "cap (a minion had not returned), so the ratio is only a bound"
    )
    # a bound that already proves the goal is a verdict
    fast = highstate_goal_lines([off, _capped("on", [300, 310, 290], [4] * 3)], opts)
    assert fast[0].endswith("<= 0.33 x (300.0 s vs 910.0 s): met")
    # one capped round of three leaves the median exact
    exact = highstate_goal_lines(
        [_capped("off", [900, 800, 850], [3, 4, 4]), _capped("on", [425], [4])], opts
    )
    assert exact[0].endswith("0.50 x (425.0 s vs 850.0 s): NOT met (by 1.2x)")
    both = highstate_goal_lines([off, _capped("on", [910], [2])], opts)
    assert both[0].endswith("not judged: both hit the 900 s cap")


def _lost(name: str, seconds: list[float], lost: list[int]) -> VariantRounds:
    """Rounds of 4 minions in which ``lost`` returns never came."""
    given_up = [n + 1 for n in lost]
    return _capped(name, seconds, [4 - n for n in lost], given_up, lost)


def test_a_variant_whose_returns_never_came_does_not_finish() -> None:
    opts = _parse(["--minions", "4"])
    # off's rounds ended once every minion had returned or given up and the
    # master had sent nothing for a while
    off = _lost("off", [950, 990, 905], [4, 1, 0])
    lines = highstate_goal_lines([off, _capped("on", [560, 530, 570], [4] * 3)], opts)
    assert lines[0] == (
        "- highstate round with pillar_reuse_loaders on <= 0.4 x off: met: on "
        "finishes its rounds (median 560.0 s, every return); off does not finish "
        "a round (5 of off's returns never came, in 2 of its 3 rounds: lost for "
        "good), so no time off could take is short enough to miss the goal"
    )
    # a round with a lost return is not one that hit the cap
    assert capped_rounds(off, opts) == 0
    rows = _highstate_rows([off], opts)
    assert rows[0][1] == "does not finish (2 of 3 rounds lost returns)"
    assert rows[0][6] == "8 / 5"
    both = highstate_goal_lines([off, _lost("on", [50, 60, 70], [1, 1, 0])], opts)
    assert "not judged: neither finishes a round" in both[0]
    worse = highstate_goal_lines(
        [_capped("off", [900, 850, 800], [4] * 3), _lost("on", [5, 6, 7], [1, 1, 1])],
        opts,
    )
    assert worse[0].endswith(
        "NOT met: on does not finish a round (3 of on's returns never came, in "
        "3 of its 3 rounds)"
    )


def test_given_up_returns_are_read_from_the_fleets_logs_for_that_job_only(
    tmp_path: Path,
) -> None:
    gave_up = (
        "[evil_minions.returns][WARNING] {mid}: The minion failed to return the "
        "job information for job {jid}. This is often due to the master being "
        "shut down or overloaded.\n"
    )
    (tmp_path / "worker-0.log").write_text(
        gave_up.format(mid="evil-0001", jid="111") * 2
        + gave_up.format(mid="evil-0002", jid="222")
    )
    (tmp_path / "worker-1.log").write_text(gave_up.format(mid="evil-0003", jid="111"))
    (tmp_path / "other.log").write_text(gave_up.format(mid="x", jid="111"))
    assert given_up_returns(tmp_path, "111") == 3
    assert given_up_returns(tmp_path, "333") == 0


class _Client:
    """A LocalClient whose job gets one return, a late one, then nothing."""

    def __init__(self) -> None:
        self.opts: dict[str, Any] = {}
        self.jid = ""

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def cmd_iter_no_block(self, *args: Any, jid: str, **kwargs: Any) -> Any:
        self.jid = jid
        yield {"evil-0001": {"ret": {}}}
        yield None
        # evil-0002 gave up (see the test), but its try was in the master's queue
        yield {"evil-0002": {"ret": {}}}
        while True:
            yield None


def test_a_given_up_return_can_still_come_and_the_rest_are_lost_after_a_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _Client()

    class Stack:
        fleet = SimpleNamespace(config=SimpleNamespace(run_dir=str(tmp_path)))

        def client(self) -> _Client:
            return client

    def both_gave_up(run_dir: Path, jid: str) -> int:
        assert (run_dir, jid) == (tmp_path, client.jid)
        return 2  # evil-0002 and evil-0003

    monkeypatch.setattr(highstate, "LOST_POLL_S", 0.0)
    monkeypatch.setattr(highstate, "QUIET_S", 0.3)
    monkeypatch.setattr(highstate, "given_up_returns", both_gave_up)
    monkeypatch.setattr(highstate, "PROGRESS_S", 0.0)
    said: list[str] = []
    round_ = highstate._round(Stack(), minions=3, timeout=60, progress=said.append)
    # 1 return + 2 given up covered every minion at once; the round waited,
    # counted evil-0002's late return and ended after the quiet
    assert (round_.returns, round_.given_up, round_.lost) == (2, 2, 1)
    assert client.jid  # the job's own jid, the one its minions log
    assert round_.seconds < 30  # it did not wait for the time-out
    # while it waited, it said how far it was
    assert said and said[-1].endswith("2 of 3 returns, 2 given up by their minions")
