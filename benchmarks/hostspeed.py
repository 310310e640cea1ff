"""How fast the box runs a fixed piece of Python, timed on the idle box.

The runs of one storm have grown slower in run order whichever variant
ran, a fresh master's MWorkers spending more CPU seconds on the same
returns (``benchmarks/results/storm-200-prio-analysis.md``): either the box did less
per CPU second or the work per return grew, and a comparison of variants
run at different times is only as good as the box was steady. A benchmark times
:func:`cpu_probe_ms` before and after each run, when nothing of its own
runs, and reports both beside the run's numbers: a probe that grows says
the cores did less per CPU second whatever ran; a level one says only that
(memory, cache and kernel work may still have slowed: the loop does none).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

#: times the fixed work is timed; the fastest counts (the least disturbed)
PROBE_ROUNDS: Final = 5

#: iterations of the fixed work: a few tens of milliseconds of one core
PROBE_STEPS: Final = 300_000


def cpu_probe_ms(rounds: int = PROBE_ROUNDS, steps: int = PROBE_STEPS) -> float:
    """Milliseconds of this thread's CPU time the fixed work takes, the
    fastest of ``rounds``: CPU time, not wall time, so a thread scheduled
    out does not count, and a box whose cores do less per second does; the
    thread's own, so the benchmark's other threads do not count."""
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        _fixed_work(steps)
        best = min(best, time.thread_time() - start)
    return best * 1000


@dataclass
class Probe:
    """:func:`cpu_probe_ms` just before and just after a run."""

    before_ms: float = 0.0
    after_ms: float = 0.0


@contextlib.contextmanager
def probed(label: str) -> Iterator[Probe]:
    """Time the probe before the block and after it (not after one that
    raised: that run has no numbers to set beside it) and say both, as
    ``<label> box probe ... ms before the run, ... ms after``."""
    probe = Probe(before_ms=cpu_probe_ms())
    yield probe
    probe.after_ms = cpu_probe_ms()
    print(
        f"{label} box probe {probe.before_ms:.1f} ms before the run, "
        f"{probe.after_ms:.1f} ms after",
        flush=True,
    )


def probe_words() -> str:
    """What a report says of the probe it shows before / after each run."""
    return (
        "Box probe: the CPU milliseconds a fixed loop of Python took on the "
        "idle box just before the variant's stack started and just after it "
        f"stopped (the fastest of {PROBE_ROUNDS}); when it grows with run "
        "order, the box slowed down, whatever ran; when it stays level, the "
        "cores are as fast, but memory, cache and kernel work may still have "
        "slowed (the loop does none)."
    )


def probe_cell(before_ms: float, after_ms: float) -> str:
    """The probe before / after a run, as a table cell; ``-`` when not taken
    (a run recorded before the probe existed)."""
    if not before_ms:
        return "-"
    return f"{before_ms:.1f} / {after_ms:.1f}"


def _fixed_work(steps: int) -> int:
    """Small-integer arithmetic in the interpreter's loop, in cache: no I/O,
    no system call, only what a core does per CPU second."""
    total = 0
    for i in range(steps):
        total = (total + i * i) % 1_000_003
    return total
