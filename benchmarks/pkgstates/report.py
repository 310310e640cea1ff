"""The package-state benchmark's report: tables, goals with their margins, the plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import report
from benchmarks.pkgstates.highstate import HighstateRound
from benchmarks.pkgstates.measure import InProcessResult, SaveRound
from benchmarks.pkgstates.options import PkgstatesOptions

#: save-to-visible of ours must be at least this many times faster
GOAL_SPEEDUP: Final = 10.0


def ours_visible_s(rounds: Sequence[SaveRound]) -> float:
    """Median save-to-visible of ours: the save; the next compile sees it."""
    return report.median([r.save_s for r in rounds])


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


def _highstate_lines(
    highstate: list[HighstateRound] | None, opts: PkgstatesOptions
) -> list[str]:
    lines = [f"## Highstate round on {opts.minions} simulated minions", ""]
    if highstate is None:
        return [*lines, "Not run (`--no-highstate`).", ""]
    lines += [
        "`salt '*' state.apply pkgstate` through a real master with the "
        "`pkgstate` ext_pillar, master_tops and engine; every simulated minion "
        "fetches its pillar (a real `_pillar` request) and applies "
        "`pillar['pkgstate']['packages']` to its package set. Counts are of "
        "`pkgstate` states.",
        "",
        report.table(
            [
                "round",
                "seconds to all returns",
                "returns",
                "states changed",
                "unchanged",
                "failed",
                "minions changed",
                "minions failed",
            ],
            [
                [
                    label,
                    f"{r.seconds:.1f}",
                    f"{r.returns} of {opts.minions}",
                    r.states_changed,
                    r.states_unchanged,
                    r.states_failed,
                    r.minions_changed,
                    r.minions_failed,
                ]
                for label, r in zip(("first", "second"), highstate, strict=False)
            ],
        ),
        "",
        "The per-minion-file variant is not run here: a simulated minion "
        "applies package states from its pillar and does not fetch SLS files "
        "from the master's file server, so a top file mapping each minion to "
        "`packages-<id>` would not be executed by it. Its applied data equals "
        "ours for every minion (see the goals), so the round would differ "
        "only in how the master serves the data.",
        "",
    ]
    failures = [r.first_failure for r in highstate if r.first_failure]
    if failures:
        lines += ["First failure: " + failures[0], ""]
    return lines


def render(
    result: InProcessResult,
    highstate: list[HighstateRound] | None,
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
        "Ours is visible when the save commits: the ext_pillar resolves on "
        "every compile. The proof column compiles every affected minion's "
        "pillar through `salt.pillar.Pillar` (the code of a `_pillar` request) "
        "and checks the new revision in its `sources`; it is what the next "
        "highstates do anyway, not a step of the save. The baseline reads each "
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
        "steps that a real render of `packages-<minion>.sls` adds.",
        "",
        *_highstate_lines(highstate, opts),
        "## Goals",
        "",
        *goal_lines(result),
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
    highstate: list[HighstateRound] | None,
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
