"""The module-interfaces section: the pkg conformance matrix from the patched
Salt's own report (``python -m salt.interfaces.report pkg``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from typing import Any

from harness.demo.context import TourContext
from harness.demo.registry import Finding, Registry, ScenarioFailed

SECTION = "Module interfaces"
VIRTUAL_MODULE = "pkg"
REPORT_TIMEOUT = 300
#: the report's function statuses, as the matrix abbreviates them
STATUSES = ("implemented", "not implemented", "signature mismatch")


def _report(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "salt.interfaces.report", *args, VIRTUAL_MODULE],
        capture_output=True,
        text=True,
        timeout=REPORT_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise ScenarioFailed(
            f"python -m salt.interfaces.report {VIRTUAL_MODULE} exited "
            f"{proc.returncode}: {proc.stderr.strip()[-300:]}"
        )
    return proc.stdout


def provider_rows(report: dict[str, Any]) -> list[str]:
    """A Markdown table: per provider, how it conforms to the interface."""
    interface = set(report["functions"])
    lines = [
        "| platform | provider | declares the interface | "
        + " | ".join(STATUSES)
        + " | deprecated extras |",
        "| --- | --- | --- |" + " ---: |" * (len(STATUSES) + 1),
    ]
    for provider in report["providers"]:
        functions = provider.get("functions") or {}
        counts = Counter(
            entry["status"] for name, entry in functions.items() if name in interface
        )
        extras = sum(
            1
            for name, entry in functions.items()
            if name not in interface and entry["status"] == "deprecated extra"
        )
        declares = "yes" if provider.get("declares_interface") else "no"
        lines.append(
            f"| {provider['platform']} | `{provider['provider']}` | {declares} | "
            + " | ".join(str(counts.get(s, 0)) for s in STATUSES)
            + f" | {extras} |"
        )
    return lines


def matrix_lines(text: str) -> list[str]:
    """The report's text matrix up to the functions outside the interface."""
    lines = text.rstrip().splitlines()
    for index, line in enumerate(lines):
        if line.startswith("-- outside the interface"):
            return lines[:index]
    return lines


def conformance_matrix(ctx: TourContext) -> Finding:
    """Every pkg provider is loaded and judged against the interface."""
    report = json.loads(_report("--json"))
    broken = [p["provider"] for p in report["providers"] if p.get("error")]
    if not report["providers"] or broken:
        raise ScenarioFailed(
            f"the conformance report could not judge: {broken or 'no providers'}"
        )
    interface = set(report["functions"])
    judged = [
        p["provider"]
        for p in report["providers"]
        if not interface <= set(p.get("functions") or {})
    ]
    if judged:
        raise ScenarioFailed(f"providers without a status for every function: {judged}")
    declaring = [p for p in report["providers"] if p.get("declares_interface")]
    body = [
        f"`{report['interface']}`: {len(interface)} functions, "
        f"{len(report['providers'])} providers of `{VIRTUAL_MODULE}`, "
        f"{len(declaring)} of them declare the interface (missing functions become "
        "stubs that raise a clear error; functions outside it warn as deprecated).",
        "",
        *provider_rows(report),
        "",
        f"The matrix (`python -m salt.interfaces.report {VIRTUAL_MODULE}`; ok: "
        "implemented, NI: not implemented, sig: signature mismatch):",
        "",
        "```",
        *matrix_lines(_report()),
        "```",
    ]
    return Finding(
        f"{len(report['providers'])} providers x {len(interface)} functions judged, "
        f"{len(declaring)} declare the interface",
        body,
    )


def register(registry: Registry) -> None:
    """Add the module-interfaces section's scenario to ``registry``."""
    registry.scenario(SECTION, "pkg conformance matrix")(conformance_matrix)
