"""The module-interfaces section: the pkg conformance matrix from the patched
Salt's developer tool (``tools/interfaces_report.py pkg``), and what a minion
with ``module_interfaces: True`` (off by default) answers for a function its
platform does not support."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from harness.salttree import Layout
from tour.context import TourContext
from tour.registry import Finding, Registry, ScenarioFailed

SECTION = "Module interfaces"
VIRTUAL_MODULE = "pkg"
REPORT_TIMEOUT = 300
#: the report's function statuses, as the matrix abbreviates them
STATUSES = ("implemented", "not implemented", "not supported", "signature mismatch")
#: a provider-specific function, and a provider whose platform lacks it
UNSUPPORTED_CALL = ("pkg.list_locks", "aptpkg", {"os": "Debian", "os_family": "Debian"})

#: Loads one pkg provider as a minion with the given grains would, with
#: module_interfaces on and off, and prints what a call of the function meets
PROBE = """
import json
import sys

import salt.config
import salt.loader
import salt.loader.lazy

function, provider, grains, cachedir = sys.argv[1:]
answers = {}
for enabled in (True, False):
    opts = dict(salt.config.DEFAULT_MINION_OPTS)
    opts.update(grains=json.loads(grains), cachedir=cachedir, module_interfaces=enabled)
    loader = salt.loader.lazy.LazyLoader(
        salt.loader._module_dirs(opts, "modules", "module"),
        opts,
        tag="module",
        pack={"__salt__": {}},
    )
    loader._load_module(provider)
    answers[str(enabled)] = {
        "in __salt__": function in loader,
        "message": loader.missing_fun_string(function),
    }
print(json.dumps(answers))
"""


def report_tool() -> Path:
    """Salt's developer tool in the vendored tree (not part of the wheel)."""
    tool = Layout.of_project().src_dir / "tools" / "interfaces_report.py"
    if not tool.is_file():
        raise ScenarioFailed(f"{tool} is missing: run `nox -s vendor` first")
    return tool


def _run(args: list[str], what: str) -> str:
    proc = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=REPORT_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        raise ScenarioFailed(
            f"{what} exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        )
    return proc.stdout


def _report(*args: str) -> str:
    return _run(
        [str(report_tool()), *args, VIRTUAL_MODULE],
        f"tools/interfaces_report.py {VIRTUAL_MODULE}",
    )


def unsupported_call() -> dict[str, dict[str, Any]]:
    """What ``pkg.list_locks`` meets on a Debian minion, interfaces on and off."""
    function, provider, grains = UNSUPPORTED_CALL
    with tempfile.TemporaryDirectory(prefix="interfaces-probe-") as cachedir:
        out = _run(
            ["-c", PROBE, function, provider, json.dumps(grains), cachedir],
            f"loading {provider}",
        )
    answers: dict[str, dict[str, Any]] = json.loads(out)
    return answers


def provider_rows(report: dict[str, Any]) -> list[str]:
    """A Markdown table: per provider, how it conforms to the interface."""
    interface = set(report["functions"])
    lines = [
        "| platform | provider | declares the interface | "
        + " | ".join(STATUSES)
        + " | extras |",
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
            if name not in interface and entry["status"] == "extra"
        )
        declares = "yes" if provider.get("declares_interface") else "no"
        lines.append(
            f"| {provider['platform']} | `{provider['provider']}` | {declares} | "
            + " | ".join(str(counts.get(s, 0)) for s in STATUSES)
            + f" | {extras} |"
        )
    return lines


def probe_lines(answers: dict[str, dict[str, Any]]) -> list[str]:
    """The unsupported call's answers as a Markdown table, interfaces on and off."""
    function, provider, grains = UNSUPPORTED_CALL
    on, off = answers["True"], answers["False"]
    if on["in __salt__"] or off["in __salt__"]:
        raise ScenarioFailed(
            f"{function} counts as a function of {provider}: {answers}"
        )
    if "not supported on this platform" not in on["message"]:
        raise ScenarioFailed(
            f"module_interfaces: True gave no clear error: {on['message']}"
        )
    return [
        f"`{function}` on a minion with os_family {grains['os_family']} "
        f'(`{provider}`), `"{function}" in __salt__` is False either way:',
        "",
        "| module_interfaces | the minion answers |",
        "| --- | --- |",
        f"| True | {on['message']} |",
        f"| False (default) | {off['message']} |",
    ]


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
        f"{len(declaring)} of them declare the interface. With "
        "`module_interfaces: True` (off by default) a function the interface "
        "declares and the minion's provider lacks becomes a stub that raises a "
        "clear error; functions outside the interface are left alone.",
        "",
        *provider_rows(report),
        "",
        *probe_lines(unsupported_call()),
        "",
        f"The matrix (Salt's `tools/interfaces_report.py {VIRTUAL_MODULE}`; ok: "
        "implemented, NI: not implemented, NS: not supported, sig: signature "
        "mismatch):",
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
    registry.add_section(
        SECTION,
        {
            "pkg conformance matrix": conformance_matrix,
        },
    )
