"""The package-state benchmark's report: tables, goals with their margins, the plot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import report
from benchmarks.pkgstates.highstate import QUIET_S, HighstateRound, VariantRounds
from benchmarks.pkgstates.measure import InProcessResult, SaveRound
from benchmarks.pkgstates.options import PkgstatesOptions

#: save-to-visible of ours must be at least this many times faster
GOAL_SPEEDUP: Final = 10.0
#: a highstate round with pillar_reuse_loaders on, at most this share of off's
GOAL_ROUND_RATIO: Final = 0.4


def ours_visible_s(rounds: Sequence[SaveRound]) -> float:
    """Median save-to-visible of ours: the save plus every affected minion's
    compile that has seen it."""
    return report.median([r.save_s + r.after_s for r in rounds])


def baseline_visible_s(rounds: Sequence[SaveRound]) -> float:
    """Median save-to-visible of the baseline: the save plus every file written."""
    return report.median([r.save_s + r.after_s for r in rounds])


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def goal_lines(result: InProcessResult) -> list[str]:
    """The issue's goals for this run, each with its margin and verdict."""
    ours = ours_visible_s(result.ours)
    baseline = baseline_visible_s(result.baseline)
    speedup = baseline / ours if ours > 0 else float("inf")
    margin = speedup / GOAL_SPEEDUP
    all_visible = all(r.visible == result.affected for r in result.ours)
    identical = result.identical == result.minions
    return [
        f"- save-to-visible for a group change affecting {result.affected} minions "
        f"at least {GOAL_SPEEDUP:g}x faster than per-minion file generation: "
        f"{speedup:.1f}x ({ours * 1000:.1f} ms vs {baseline * 1000:.0f} ms), "
        f"{'by' if margin >= 1 else 'short by'} a factor of "
        f"{margin if margin >= 1 else 1 / margin:.1f}: {_verdict(speedup >= GOAL_SPEEDUP)}",
        f"- the new revision seen by the next pillar compile of every affected "
        f"minion: {min((r.visible for r in result.ours), default=0)} of "
        f"{result.affected}: {_verdict(all_visible)}",
        f"- identical applied states (ext_pillar rendered vs the minion's file): "
        f"{result.identical} of {result.minions} minions: {_verdict(identical)}",
    ]


def _save_rows(result: InProcessResult) -> list[list[str]]:
    def row(
        name: str, rounds: Sequence[SaveRound], visible_s: float, after: str
    ) -> list[str]:
        return [
            name,
            f"{report.median([r.save_s for r in rounds]) * 1000:.1f}",
            f"{report.median([r.after_s for r in rounds]):.2f} ({after})",
            f"{visible_s * 1000:.1f}",
            f"{min(r.visible for r in rounds)} of {result.affected}",
        ]

    return [
        row(
            "ours: revision in PostgreSQL, ext_pillar",
            result.ours,
            ours_visible_s(result.ours),
            "proof: every affected pillar compiled",
        ),
        row(
            "baseline: packages-<minion>.sls per minion",
            result.baseline,
            baseline_visible_s(result.baseline),
            "every file regenerated",
        ),
    ]


def capped_rounds(v: VariantRounds, opts: PkgstatesOptions) -> int:
    """How many of a variant's rounds hit the round's time-out: a return was
    missing when ``--timeout`` ran out and not known to be lost, so the
    round's seconds are the cap, not the time the round needed."""
    return sum(1 for r in v.rounds if r.returns + r.lost < opts.minions)


def lost_rounds(v: VariantRounds) -> int:
    """How many of a variant's rounds cannot finish: a return never came
    (its minion gave up and none of its tries reached the master)."""
    return sum(1 for r in v.rounds if r.lost)


def _round_s(r: HighstateRound) -> float:
    """A round's seconds; infinite for a round that cannot finish."""
    return math.inf if r.lost else r.seconds


def _median_s(v: VariantRounds) -> float:
    """The median round; infinite when most rounds cannot finish."""
    return report.median([_round_s(r) for r in v.rounds])


def median_capped(v: VariantRounds, opts: PkgstatesOptions) -> bool:
    """Whether a variant's median round time is the cap: a capped round's
    seconds are the largest a round can take, so the median is exact while
    fewer than half of the rounds hit the cap and the cap itself otherwise."""
    return capped_rounds(v, opts) * 2 >= len(v.rounds)


def _ratio(
    highstate: list[VariantRounds], name: str, opts: PkgstatesOptions
) -> tuple[str, float] | None:
    """A variant's median round over off's, with ``<=`` or ``>=`` when one
    side is a capped median (the ratio is then a bound); None when there is
    nothing to divide: no off, or both sides capped."""
    by_name = {v.name: v for v in highstate}
    if "off" not in by_name or name not in by_name:
        return None
    off_capped = median_capped(by_name["off"], opts)
    mine_capped = median_capped(by_name[name], opts) and name != "off"
    if off_capped and mine_capped:
        return None
    mine, off = _median_s(by_name[name]), _median_s(by_name["off"])
    if math.isinf(mine) or math.isinf(off):
        return None  # a round that cannot finish is no denominator
    ratio = mine / off
    return (
        "<=" if off_capped and name != "off" else ">=" if mine_capped else ""
    ), ratio


def _highstate_rows(
    highstate: list[VariantRounds], opts: PkgstatesOptions
) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for v in highstate:
        seconds = [r.seconds for r in v.rounds]
        capped = capped_rounds(v, opts)
        lost = lost_rounds(v)
        median = _median_s(v)
        rows.append(
            [
                v.label,
                (
                    f"does not finish ({lost} of {len(v.rounds)} rounds lost returns)"
                    if math.isinf(median)
                    else f"{median:.1f}"
                    + (f" (cap hit in {capped} of {len(v.rounds)})" if capped else "")
                    + (f" ({lost} of {len(v.rounds)} lost returns)" if lost else "")
                ),
                report.Runs(seconds).spread,
                _ratio_cell(_ratio(highstate, v.name, opts)),
                _visible_cell(v, opts),
                f"{min(r.returns for r in v.rounds)} of {opts.minions}",
                f"{sum(r.given_up for r in v.rounds)} / "
                f"{sum(r.lost for r in v.rounds)}",
                sum(r.states_changed for r in v.rounds),
                sum(r.states_failed for r in v.rounds),
                sum(r.minions_failed for r in v.rounds),
            ]
        )
    return rows


def _ratio_cell(ratio: tuple[str, float] | None) -> str:
    return "-" if ratio is None else f"{ratio[0]} {ratio[1]:.2f}".strip()


def _visible_cell(v: VariantRounds, opts: PkgstatesOptions) -> str:
    """Median save-to-visible, or how many minions had not seen the revision."""
    if all(r.visible == opts.minions for r in v.rounds):
        return f"{report.median([r.save_to_visible_s for r in v.rounds]):.1f}"
    return (
        "not visible: new revision applied on "
        + ", ".join(str(r.visible) for r in v.rounds)
        + f" of {opts.minions}"
    )


def _highstate_lines(
    highstate: list[VariantRounds] | None, opts: PkgstatesOptions
) -> list[str]:
    lines = [f"## Highstate rounds on {opts.minions} simulated minions", ""]
    if highstate is None:
        return [*lines, "Not run (`--no-highstate`).", ""]
    lines += [
        "`salt '*' state.apply pkgstate` through a real master with the "
        "`pkgstate` ext_pillar, master_tops and engine; every simulated minion "
        "fetches its pillar (a real `_pillar` request) and applies "
        "`pillar['pkgstate']['packages']` to its package set. Each variant has "
        "its own master and fleet (started fresh, so its first round also "
        "brings every minion to its state) and runs "
        f"{opts.highstate_rounds} rounds; before each round a new revision of "
        f"group `all` (20 of its {opts.packages} entries changed) is saved. "
        "Save-to-visible runs from the save to the last return of the round "
        "and counts only when every minion applied exactly the states the new "
        "revision resolves to for it. Variants run one after the other on the "
        "same machine and database; `x off` divides medians. The simulated "
        "minions send returns as 3008.3 minions do: each try waits 5-10 s "
        "(`return_retry_timer`, `return_retry_timer_max`), and after 3 tries "
        '(`return_retry_tries`) the job gives up and logs that it "failed to '
        'return the job information". A try that timed out may still sit in '
        "the master's queue, so a given-up return can arrive late. A round "
        "ends when every minion has returned; or when every minion has "
        f"returned or given up and no return came for {QUIET_S:.0f} s (the "
        "master works its queue without pause, so the returns still missing "
        "are lost for good and the round does not finish); or when the "
        f"{opts.timeout} s time-out runs out with a minion that has done "
        "neither (it hit the cap: its seconds are the cap, not what the round "
        "needed; a median that is the cap makes `x off` a bound, `<=` or "
        "`>=`, and no goal is judged on a bound that cannot decide it).",
        "",
        report.table(
            [
                "variant",
                "round s (median)",
                "range over rounds",
                "x off",
                "save-to-visible s (median)",
                "returns / round",
                "returns given up / lost (all rounds)",
                "states changed (all rounds)",
                "states failed",
                "minions failed",
            ],
            _highstate_rows(highstate, opts),
        ),
        "",
        "`off` is today's master: the series with its default "
        "(`pillar_reuse_loaders: False`), what `benchmarks/results/pkgstates.md` "
        "measured before."
        + (
            " `cache` is Salt 3008.3's own answer, a stock master tuned with "
            "`pillar_cache` (the series' code, reuse off): after the first "
            "compile of a minion its pillar comes from the cache until "
            "`pillar_cache_ttl` expires or the cache is cleared, so a new "
            "revision does not reach its highstates."
            if any(v.name == "cache" for v in highstate)
            else " Salt's own `pillar_cache` (`--variants ...,cache`) was not "
            "run here; `pillar.md` compares it."
        ),
        "",
        "Per round (seconds to the last return / new revision applied on):",
        "",
    ]
    for v in highstate:
        lines.append(
            f"- {v.name}: "
            + "; ".join(
                f"{r.seconds:.1f} s"
                + (
                    f" (not finished: {r.returns} returns, {r.lost} lost, "
                    f"{r.given_up} given up)"
                    if r.lost
                    else f" (cap: {r.returns} returns)"
                    if r.returns < opts.minions
                    else ""
                )
                + f" / {r.visible}"
                for r in v.rounds
            )
        )
    lines.append("")
    for title, attribute in (
        ("First failure", "first_failure"),
        ("First minion without the new revision", "first_stale"),
    ):
        firsts = [
            f"{v.name}: {getattr(r, attribute)}"
            for v in highstate
            for r in v.rounds
            if getattr(r, attribute)
        ]
        if firsts:
            lines += [f"{title}: {firsts[0]}", ""]
    return lines


def highstate_goal_lines(
    highstate: list[VariantRounds] | None, opts: PkgstatesOptions
) -> list[str]:
    """The issue 25 goals of the highstate rounds, with margins and verdicts."""
    if highstate is None:
        return []
    lines = []
    ratio = _ratio(highstate, "on", opts)
    names = {v.name for v in highstate}
    unfinished = _unfinished_goal_line(highstate)
    if unfinished is not None:
        lines.append(unfinished)
    elif ratio is None and {"off", "on"} <= names:
        lines.append(
            f"- highstate round with pillar_reuse_loaders on <= {GOAL_ROUND_RATIO} "
            f"x off: not judged: both hit the {opts.timeout} s cap"
        )
    elif ratio is not None:
        bound, value = ratio
        by_name = {v.name: v for v in highstate}
        on, off = _median_s(by_name["on"]), _median_s(by_name["off"])
        sure = {"": True, "<=": value <= GOAL_ROUND_RATIO}.get(
            bound, value > GOAL_ROUND_RATIO
        )
        met = value <= GOAL_ROUND_RATIO
        line = (
            f"- highstate round with pillar_reuse_loaders on <= {GOAL_ROUND_RATIO} "
            f"x off: {bound + ' ' if bound else ''}{value:.2f} x "
            f"({on:.1f} s vs {off:.1f} s): "
        )
        if not sure:
            capped = "off" if bound == "<=" else "on"
            line += (
                f"not judged: {capped}'s median is the {opts.timeout} s cap "
                f"(a minion had not returned), so the ratio is only a bound"
            )
        else:
            line += _verdict(met) + (
                "" if met else f" (by {value / GOAL_ROUND_RATIO:.1f}x)"
            )
        lines.append(line)
    for v in highstate:
        seen = min(r.visible for r in v.rounds)
        lines.append(
            f"- every minion's compile saw the new revision in every {v.name} "
            f"round: at least {seen} of {opts.minions}: "
            + _verdict(seen == opts.minions)
        )
    return lines


def _unfinished_goal_line(highstate: list[VariantRounds]) -> str | None:
    """The round goal when off's or on's median round cannot finish (its
    minions gave up returns); None when both finish."""
    by_name = {v.name: v for v in highstate}
    if not {"off", "on"} <= set(by_name):
        return None
    off, on = by_name["off"], by_name["on"]
    off_s, on_s = _median_s(off), _median_s(on)
    if not (math.isinf(off_s) or math.isinf(on_s)):
        return None
    head = (
        f"- highstate round with pillar_reuse_loaders on <= {GOAL_ROUND_RATIO} x off: "
    )

    def lost(v: VariantRounds) -> str:
        return (
            f"{sum(r.lost for r in v.rounds)} of {v.name}'s returns never came, "
            f"in {lost_rounds(v)} of its {len(v.rounds)} rounds"
        )

    if math.isinf(on_s) and math.isinf(off_s):
        return head + f"not judged: neither finishes a round ({lost(on)}; {lost(off)})"
    if math.isinf(on_s):
        return head + f"NOT met: on does not finish a round ({lost(on)})"
    return head + (
        f"met: on finishes its rounds (median {on_s:.1f} s, every return); off "
        f"does not finish a round ({lost(off)}: lost for good), so no time "
        "off could take is short enough to miss the goal"
    )


def render(
    result: InProcessResult,
    highstate: list[VariantRounds] | None,
    opts: PkgstatesOptions,
    plot: Path | None,
) -> str:
    """The report's Markdown."""
    managed = sorted(result.managed_per_minion)
    lines = [
        "# Package states: PostgreSQL + ext_pillar vs per-minion SLS files",
        "",
        report.environment(),
        "",
        f"Reproduce: `{opts.reproduce_command()}`",
        "",
        f"{opts.minions} minions in one organization; states at every scope: "
        f"one org state, {opts.groups} group states (group `all` holds every "
        "minion, the others a slice each), 5 grain-match states, one state per "
        f"minion; {opts.packages} entries per state. Managed packages per minion "
        f"after precedence: median {report.median(managed):.0f}, "
        f"min {managed[0]}, max {managed[-1]}.",
        "",
        f"## Save-to-visible: a revision of group `all` ({result.affected} minions)",
        "",
        f"Median of {opts.rounds} saves per variant; each save changes "
        f"{result.entries_per_state // 10} of the group's {result.entries_per_state} "
        "entries.",
        "",
        report.table(
            ["variant", "save ms", "then s", "save-to-visible ms", "visible"],
            _save_rows(result),
        ),
        "",
        "Ours: the ext_pillar resolves on every compile, so a minion sees "
        "the revision with its next compile; save-to-visible counts until "
        "every affected minion's compile has seen it: the column after the "
        "save compiles every affected minion's pillar in this one process "
        "through `salt.pillar.Pillar` (the code of a `_pillar` request) with "
        "loaders reused as a master worker with `pillar_reuse_loaders` does, "
        "and checks the new revision in its `sources`. The highstate rounds "
        "below measure the same on a real master. The baseline reads each "
        "minion's package state, renders it and rewrites "
        "`packages-<minion>.sls`, one file per minion, as Uyuni's "
        "`SaltStateGeneratorService` does.",
        "",
        f"## Compile time for all {opts.minions} minions",
        "",
        report.table(
            ["variant", "median s", "per minion ms"],
            [
                [
                    "ours: pillar compile with the pkgstate ext_pillar",
                    f"{report.median(result.compile_ours_s):.2f}",
                    f"{report.median(result.compile_ours_s) * 1000 / opts.minions:.2f}",
                ],
                [
                    "ours, loaders reused (pillar_reuse_loaders)",
                    f"{report.median(result.compile_reuse_s):.2f}",
                    f"{report.median(result.compile_reuse_s) * 1000 / opts.minions:.2f}",
                ],
                [
                    "baseline: read + YAML-render packages-<minion>.sls",
                    f"{report.median(result.compile_files_s):.2f}",
                    f"{report.median(result.compile_files_s) * 1000 / opts.minions:.2f}",
                ],
            ],
        ),
        "",
        "Ours is a full `salt.pillar.Pillar(...).compile_pillar()` per minion "
        "(loader set-up, ext_pillar, merge): what the master does for every "
        "`_pillar` request. The baseline counts only reading the file and "
        "loading its YAML, not the master's file-server and state-compiler "
        "steps that a real render of `packages-<minion>.sls` adds. "
        "With reused loaders, "
        + (
            "every minion's pillar equals the one from fresh loaders."
            if not result.reuse_different
            else f"{len(result.reuse_different)} pillars differ from those of "
            f"fresh loaders (first {result.reuse_different[0]})."
        ),
        "",
        *_highstate_lines(highstate, opts),
        "## Goals",
        "",
        *goal_lines(result),
        *highstate_goal_lines(highstate, opts),
    ]
    if result.different:
        lines += [
            "",
            "Minions whose data differed: " + ", ".join(result.different[:10]),
        ]
    if plot is not None:
        lines += ["", f"![save-to-visible and compile time]({plot.name})"]
    return "\n".join(lines)


def write(
    result: InProcessResult,
    highstate: list[VariantRounds] | None,
    opts: PkgstatesOptions,
) -> Path:
    """Write NAME.md, NAME.json and NAME.png; return the report's path."""
    plot = report.bar_plot(
        opts.output_name,
        f"Package states, {opts.minions} minions (medians)",
        ["save-to-visible", f"compile all {opts.minions}"],
        {
            "ours (PostgreSQL + ext_pillar)": [
                ours_visible_s(result.ours),
                report.median(result.compile_ours_s),
            ],
            "per-minion SLS files": [
                baseline_visible_s(result.baseline),
                report.median(result.compile_files_s),
            ],
        },
        "seconds",
    )
    data: dict[str, Any] = {
        "options": opts,
        "in_process": result,
        "highstate": highstate,
    }
    report.write_data(opts.output_name, data)
    return report.write(opts.output_name, render(result, highstate, opts, plot))
