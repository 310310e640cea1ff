"""Simulated-minion benchmark: start-up, fan-out and footprint of 1000 minions.

- time from start to every minion authenticated and connected, keys cached;
- ``salt '*' test.ping``, ``pillar.items`` and ``grains.items``: returns
  received of N and wall time;
- RSS per simulated minion and CPU per 1000 minions (the fleet's own
  processes, from its status), against evil-minions' anchor of ~2 MB each.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import report
from harness.fleet import FleetConfig, cache_keys
from harness.stack import fleet_stack

if TYPE_CHECKING:
    from benchmarks.plain_options import MinionsOptions

GOAL_RSS_KB = 2048
#: every minion's pillar is compiled from files: who it is
PILLAR_FILES = {
    "top.sls": "base:\n  '*':\n    - common\n",
    "common.sls": "who: {{ grains['id'] }}\n",
}


def run(opts: MinionsOptions) -> Path:
    """Start ``opts.minions`` simulated minions in ``opts.processes`` processes,
    time start-up and ``opts.rounds`` runs of each fan-out command; return the
    report's path."""
    minions, processes, rounds = opts.minions, opts.processes, opts.rounds
    print(
        f"caching {minions} minion keys (only missing ones are generated)", flush=True
    )
    cache_keys(minions)
    calls: dict[str, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="saltfleet-bench-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)
        stack = fleet_stack(
            minions,
            root=root / "stack",
            fleet=FleetConfig(count=minions, processes=processes),
            pillar_files=PILLAR_FILES,
        )
        started = time.perf_counter()
        with stack:
            assert stack.fleet is not None
            ready_s = time.perf_counter() - started
            status: dict[str, Any] = stack.fleet.status() or {}
            fleet_ready_s = float(status.get("elapsed", 0))
            for fun in ("test.ping", "grains.items", "pillar.items"):
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    ret = stack.cmd("*", fun, timeout=300)
                    calls.setdefault(fun, []).append(
                        (len(ret), time.perf_counter() - t0)
                    )
            after = stack.fleet.status() or {}
    return write_report(opts, ready_s, fleet_ready_s, status, after, calls)


def write_report(
    opts: MinionsOptions,
    ready_s: float,
    fleet_ready_s: float,
    at_ready: dict[str, Any],
    after: dict[str, Any],
    calls: dict[str, list[tuple[int, float]]],
) -> Path:
    """Write ``results/minions.md`` (and its plot) from one run; return its path."""
    minions, processes = opts.minions, opts.processes
    rss_ready = float(at_ready.get("rss_kb_per_minion", 0))
    rss_after = float(after.get("rss_kb_per_minion", 0))
    cpu_ready = float(at_ready.get("cpu_seconds", 0))
    cpu_after = float(after.get("cpu_seconds", 0))
    rows = []
    for fun, samples in calls.items():
        times = [s for _, s in samples]
        rows.append(
            (
                f"`salt '*' {fun}`",
                " / ".join(str(n) for n, _ in samples) + f" of {minions}",
                f"{report.median(times):.2f}",
                f"{max(times):.2f}",
            )
        )
    lines = [
        f"# Simulated minions: {minions} in {processes} process(es)",
        "",
        report.environment(),
        f"Reproduce: `{opts.reproduce_command()}` (keys cached in .saltfleet/keys).",
        "",
        "## Start-up (keys cached)",
        "",
        f"- fleet start to all {minions} authenticated and connected: "
        f"{fleet_ready_s:.1f} s (fleet's own clock; includes each minion's start-up "
        "pillar request, as real minions make one)",
        f"- stack start (master + fleet, keys seeded) to ready: {ready_s:.1f} s",
        "",
        "## Fan-out through the real master",
        "",
        report.table(["command", "returns per run", "median s", "max s"], rows),
        "",
        "## Footprint of the simulator",
        "",
        report.table(
            ["when", "RSS per minion KiB", "process RSS MiB", "fleet CPU s"],
            [
                (
                    "all connected",
                    f"{rss_ready:.0f}",
                    f"{at_ready.get('rss_kb', 0) / 1024:.0f}",
                    f"{cpu_ready:.1f}",
                ),
                (
                    "after the runs above",
                    f"{rss_after:.0f}",
                    f"{after.get('rss_kb', 0) / 1024:.0f}",
                    f"{cpu_after:.1f}",
                ),
            ],
        ),
        "",
        "Goal: 1000 minions in one process at <= 2 MB each: "
        + ("met" if rss_after <= GOAL_RSS_KB and processes == 1 else "see numbers")
        + f" ({rss_after:.0f} KiB per minion after jobs, incl. the process baseline "
        "shared by all minions). CPU per 1000 minions over the whole run: "
        f"{cpu_after * 1000 / minions:.1f} s.",
    ]
    plot = report.bar_plot(
        "minions-fanout",
        f"salt '*' <fun> over {minions} simulated minions (median)",
        list(calls),
        {"wall s": [report.median([s for _, s in v]) for v in calls.values()]},
        "seconds",
    )
    lines += ["", f"![fan-out]({plot.name})"]
    return report.write("minions", "\n".join(lines))
