"""The tour's report: Markdown with plots for the directory it is written
to, and a short summary for the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tour.registry import Capability, ScenarioOutcome, Verdict

REPORT_FILE: Final = "report.md"
TITLE: Final = "saltfleet demo"


@dataclass
class TourRecord:
    """Everything the report shows: facts about the stack, every outcome,
    the capabilities not in this build, and a tour-level failure if any."""

    facts: dict[str, str]
    outcomes: list[ScenarioOutcome]
    not_in_build: list[Capability] = field(default_factory=list)
    without_scenario: list[Capability] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no scenario failed (skipped ones do not fail the tour)."""
        return all(o.ok for o in self.outcomes)

    def count(self, verdict: Verdict) -> int:
        """How many scenarios ended in ``verdict``."""
        return sum(o.verdict is verdict for o in self.outcomes)

    def verdict_line(self) -> str:
        """``5 of 7 scenarios passed, 1 skipped, 1 FAILED``."""
        line = f"{self.count(Verdict.PASSED)} of {len(self.outcomes)} scenarios passed"
        for verdict in (Verdict.SKIPPED, Verdict.FAILED):
            if self.count(verdict):
                line += f", {self.count(verdict)} {verdict.value}"
        return line


def _sections(outcomes: Sequence[ScenarioOutcome]) -> dict[str, list[ScenarioOutcome]]:
    grouped: dict[str, list[ScenarioOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.section, []).append(outcome)
    return grouped


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(record: TourRecord) -> str:
    """The whole report as Markdown; plots are referenced by file name."""
    lines = [
        f"# {TITLE}",
        "",
        f"**{record.verdict_line()}** in {record.seconds:.0f}s.",
        "",
    ]
    lines += ["| | |", "| --- | --- |"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in record.facts.items()]
    lines += ["", "| section | scenario | verdict | time | what it showed |"]
    lines += ["| --- | --- | --- | ---: | --- |"]
    for o in record.outcomes:
        lines.append(
            f"| {o.section} | {o.name} | {o.verdict.value} | {o.seconds:.1f}s | "
            f"{_cell(o.finding.summary)} |"
        )
    for section, outcomes in _sections(record.outcomes).items():
        lines += ["", f"## {section}"]
        for o in outcomes:
            lines += ["", f"### {o.name} — {o.verdict.value}", ""]
            if o.verdict is Verdict.PASSED:
                lines += o.finding.body or [o.finding.summary]
            else:
                lines.append(f"{o.verdict.value}: {o.finding.summary}")
    lines += ["", "## Not in this build", ""]
    if record.not_in_build:
        lines += [
            "| capability | what it will show | arrives with |",
            "| --- | --- | --- |",
        ]
        lines += [
            f"| {c.name} | {c.what} | `{c.module}` |" for c in record.not_in_build
        ]
    else:
        lines.append("Every capability of the series is in this build.")
    if record.without_scenario:
        lines += ["", "In this build but not yet shown by a scenario:", ""]
        lines += [f"- {c.name} (`{c.module}`)" for c in record.without_scenario]
    return "\n".join(lines) + "\n"


def render_summary(record: TourRecord, report_path: Path) -> str:
    """A few lines for the terminal: one per scenario, the verdict, the report."""
    width = max((len(o.name) for o in record.outcomes), default=0)
    lines = [f"{TITLE}: {record.verdict_line()} in {record.seconds:.0f}s"]
    for o in record.outcomes:
        mark = {"passed": "ok", "skipped": "--", "FAILED": "!!"}[o.verdict.value]
        lines.append(f"  {mark} {o.name.ljust(width)}  {o.finding.summary}")
    if record.not_in_build:
        names = ", ".join(c.name for c in record.not_in_build)
        lines.append(f"  not in this build: {names}")
    if record.without_scenario:
        names = ", ".join(c.name for c in record.without_scenario)
        lines.append(f"  in this build, no scenario yet: {names}")
    lines.append(f"report: {report_path}")
    return "\n".join(lines)


def write_report(record: TourRecord, directory: Path) -> Path:
    """Write ``report.md`` into ``directory`` (plots are already there)."""
    path = directory / REPORT_FILE
    path.write_text(render_markdown(record))
    return path
