"""Load-time cost of module interfaces in Salt's LazyLoader.

Loads every execution module the way a minion does (``salt.loader.minion_mods``
with this host's real grains and otherwise default minion options) with
``module_interfaces`` on and off, interleaved in one process so both modes
see the same machine load, and reports median / p90 and the overhead. The
goal is at most 5 % more time with interfaces on.

Two more measurements explain the end-to-end number: the time the loader
spends inside ``_apply_interface`` per full load, and, per module that
declares an interface, one module loaded with and without it (no
``__virtual__``, so SUSE and Red Hat providers are measured here too).

    python -m benchmarks.interfaces_load --rounds 20    (or nox -s bench -- ...)
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import salt.config
import salt.loader
import salt.loader.lazy

from benchmarks import report

GOAL_PERCENT = 5.0
# Execution modules that declare an interface in the patched tree
DECLARING_MODULES = ("aptpkg", "yumpkg", "zypperpkg")


@dataclasses.dataclass
class Samples:
    """Wall-clock and CPU seconds of one mode, plus what the loader did."""

    seconds: list[float] = dataclasses.field(default_factory=list)
    cpu_seconds: list[float] = dataclasses.field(default_factory=list)
    apply_seconds: list[float] = dataclasses.field(default_factory=list)
    functions: int = 0
    modules: int = 0
    interfaces: tuple[str, ...] = ()

    def median(self) -> float:
        """Median wall-clock seconds of one full load."""
        return report.median(self.seconds)

    def p90(self) -> float:
        """90th-percentile wall-clock seconds of one full load."""
        return report.percentile(self.seconds, 90)

    def cpu_median(self) -> float:
        """Median CPU seconds of one full load."""
        return report.median(self.cpu_seconds)


def minion_opts(workdir: Path) -> dict[str, Any]:
    """Default minion options, this host's grains, caches in ``workdir``."""
    opts: dict[str, Any] = dict(salt.config.minion_config(None))
    opts["cachedir"] = str(workdir / "cache")
    opts["extension_modules"] = str(workdir / "extmods")
    opts["grains"] = salt.loader.grains(opts)
    return opts


@contextmanager
def apply_timer(sink: list[float]) -> Iterator[None]:
    """Add the time spent in ``LazyLoader._apply_interface`` to ``sink[0]``."""
    original = salt.loader.lazy.LazyLoader._apply_interface

    def timed(self: Any, *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            original(self, *args, **kwargs)
        finally:
            sink[0] += time.perf_counter() - start

    salt.loader.lazy.LazyLoader._apply_interface = timed
    try:
        yield
    finally:
        salt.loader.lazy.LazyLoader._apply_interface = original


def load_all(opts: dict[str, Any], interfaces: bool, samples: Samples) -> None:
    """One full load of the execution modules, as a minion starts."""
    opts = dict(opts, module_interfaces=interfaces)
    applied = [0.0]
    gc.collect()
    with apply_timer(applied):
        start, cpu_start = time.perf_counter(), time.process_time()
        utils = salt.loader.utils(opts)
        modules = salt.loader.minion_mods(opts, utils=utils)
        modules._load_all()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    samples.seconds.append(elapsed)
    samples.cpu_seconds.append(cpu)
    samples.apply_seconds.append(applied[0])
    samples.functions = len(modules._dict)
    samples.modules = len(modules.loaded_modules)
    samples.interfaces = tuple(sorted(modules.interface_conformance))


def load_one(opts: dict[str, Any], name: str, interfaces: bool) -> float:
    """One module loaded without ``__virtual__``, as ``salt.loader.raw_mod`` does."""
    opts = dict(opts, module_interfaces=interfaces)
    start = time.perf_counter()
    loaded = salt.loader.raw_mod(opts, name, None)
    elapsed = time.perf_counter() - start
    if not loaded:
        raise RuntimeError(f"{name} did not load")
    return elapsed


def measure_one(
    opts: dict[str, Any], name: str, rounds: int
) -> dict[bool, list[float]]:
    """``rounds`` loads of one module per mode, after a warm-up load."""
    times: dict[bool, list[float]] = {True: [], False: []}
    load_one(opts, name, True)

    def run(interfaces: bool) -> None:
        times[interfaces].append(load_one(opts, name, interfaces))

    interleave(rounds, run)
    return times


def interleave(rounds: int, run: Callable[[bool], None]) -> None:
    """on, off, off, on, ...: neither mode always goes first."""
    for index in range(rounds):
        order = (True, False) if index % 2 == 0 else (False, True)
        for interfaces in order:
            run(interfaces)


def percent_change(new: float, old: float) -> float:
    """How much more ``new`` is than ``old``, in percent (negative if less)."""
    return (new / old - 1) * 100


def single_row(name: str, times: dict[bool, list[float]]) -> tuple[str, ...]:
    """A declaring module's row: median ms with interfaces on, off, the change."""
    on, off = report.median(times[True]), report.median(times[False])
    return (
        name,
        f"{on * 1000:.2f}",
        f"{off * 1000:.2f}",
        f"{percent_change(on, off):+.1f} %",
    )


def render(
    *,
    rounds: int,
    opts: dict[str, Any],
    full: dict[bool, Samples],
    single: dict[str, dict[bool, list[float]]],
    command: str,
) -> str:
    """The report's Markdown for one run's measurements."""
    on, off = full[True], full[False]
    overhead = percent_change(on.median(), off.median())
    apply_median = report.median(on.apply_seconds)
    verdict = "met" if overhead <= GOAL_PERCENT else "NOT met"
    grains = opts["grains"]
    lines = [
        "# Module interfaces: load-time cost",
        "",
        report.environment(),
        f"Host grains: os={grains.get('os')}, os_family={grains.get('os_family')}. "
        f"Reproduce: `{command}`.",
        "",
        f"Goal: loading all execution modules with interfaces on costs at most "
        f"{GOAL_PERCENT:g} % more time than with them off. **Goal {verdict}: "
        f"{overhead:+.2f} % (median).**",
        "",
        "## All execution modules",
        "",
        f"{rounds} full loads per mode, interleaved in one process (on/off, "
        "off/on, ...), each a fresh `salt.loader.minion_mods` with "
        f"`salt.loader.utils`, then `_load_all()`: {on.modules} virtual modules, "
        f"{on.functions} functions; interfaces applied to: "
        f"{', '.join(on.interfaces) or 'none'}.",
        "",
        report.table(
            ["interfaces", "median s", "p90 s", "min s", "max s", "CPU median s"],
            [
                (
                    label,
                    f"{samples.median():.4f}",
                    f"{samples.p90():.4f}",
                    f"{min(samples.seconds):.4f}",
                    f"{max(samples.seconds):.4f}",
                    f"{samples.cpu_median():.4f}",
                )
                for label, samples in (("on", on), ("off", off))
            ],
        ),
        "",
        f"Overhead (median on vs off): **{overhead:+.2f} %**; "
        f"p90: {percent_change(on.p90(), off.p90()):+.2f} %; process CPU time "
        f"(less sensitive to other load on the machine): "
        f"{percent_change(on.cpu_median(), off.cpu_median()):+.2f} %.",
        "",
        f"Time inside `LazyLoader._apply_interface` per full load (interfaces "
        f"on, both loaders `minion_mods` creates): median "
        f"{apply_median * 1000:.3f} ms = {apply_median / on.median() * 100:.3f} % "
        "of the load. Any difference beyond that is run-to-run noise of a shared "
        "machine; with interfaces off the loader only checks each module for a "
        "declaration.",
        "",
        "## One declaring module, without `__virtual__`",
        "",
        "`salt.loader.raw_mod`: import, register and (on) apply the interface "
        "of one module, a fresh loader each time. A minion loads one `pkg` "
        "provider, so at most one of these rows is part of a full load.",
        "",
        report.table(
            ["module", "on median ms", "off median ms", "overhead"],
            [single_row(name, times) for name, times in single.items()],
        ),
    ]
    return "\n".join(lines)


def run(rounds: int = 20, single_rounds: int = 30) -> Path:
    """Measure both modes, write ``results/interfaces-load.md``, return its path."""
    with tempfile.TemporaryDirectory(prefix="interfaces-load-") as workdir:
        opts = minion_opts(Path(workdir))
        # Warm-up: first imports of every module and its dependencies
        load_all(opts, True, Samples())
        load_all(opts, False, Samples())
        full = {True: Samples(), False: Samples()}
        interleave(rounds, lambda on: load_all(opts, on, full[on]))
        single = {
            name: measure_one(opts, name, single_rounds) for name in DECLARING_MODULES
        }
    command = (
        f"nox -s bench -- interfaces --rounds {rounds} --single-rounds {single_rounds}"
    )
    markdown = render(
        rounds=rounds, opts=opts, full=full, single=single, command=command
    )
    return report.write("interfaces-load", markdown)


def main(argv: list[str] | None = None) -> int:
    """Command line: parse the options, run the benchmark, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="full loads per mode")
    parser.add_argument(
        "--single-rounds", type=int, default=30, help="loads per declaring module"
    )
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.single_rounds < 1:
        parser.error("--rounds must be at least 2 and --single-rounds at least 1")
    if getattr(salt, "__file__", None) is None:
        # The project's salt/ (UPSTREAM, src/) shadows Salt when Salt is an
        # editable install and the project root is on sys.path
        parser.exit(
            2,
            f"error: 'salt' resolved to the directory {list(salt.__path__)}, "
            "not to an installed Salt; install the patched Salt as a wheel "
            "(nox -s bench does) or import salt before benchmarks\n",
        )
    path = run(args.rounds, args.single_rounds)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
