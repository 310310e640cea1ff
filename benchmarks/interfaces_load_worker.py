"""One variant of the ``interfaces`` benchmark, in its own process.

``python -m benchmarks.interfaces_load_worker CONFIG RESULT``: the Salt tree
under test comes first on ``PYTHONPATH`` (pristine 3008.3 or the series), so
this module imports Salt only inside :func:`measure`. It loads every
execution module the way a minion does (``salt.loader.minion_mods`` with this
host's real grains and otherwise default minion options), first the warm-up
loads, then the counted ones, and loads each declaring module alone with
``salt.loader.raw_mod``; it writes the times to RESULT.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class WorkerConfig:
    """What one worker loads, and how often."""

    workdir: str
    module_interfaces: bool | None  # None: the option is left out (pristine)
    loads: int
    warmup: int
    single_loads: int
    single_modules: list[str]


@dataclass
class WorkerResult:
    """Seconds per full load, what the loader loaded, single-module times."""

    salt_file: str
    os: str
    os_family: str
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    apply_seconds: list[float] = field(default_factory=list)
    modules: int = 0
    functions: int = 0
    interfaces: list[str] = field(default_factory=list)
    single: dict[str, list[float]] = field(default_factory=dict)


@contextmanager
def apply_timer(sink: list[float]) -> Iterator[None]:
    """Add the time spent in ``LazyLoader._apply_interface`` to ``sink[0]``.

    Pristine 3008.3 has no such method: then nothing is timed.
    """
    import salt.loader.lazy

    loader_class: Any = salt.loader.lazy.LazyLoader
    original = getattr(loader_class, "_apply_interface", None)
    if original is None:
        yield
        return

    def timed(self: Any, *args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            original(self, *args, **kwargs)
        finally:
            sink[0] += time.perf_counter() - start

    loader_class._apply_interface = timed
    try:
        yield
    finally:
        loader_class._apply_interface = original


def minion_opts(config: WorkerConfig) -> dict[str, Any]:
    """Default minion options, this host's grains, caches in the workdir."""
    import salt.config
    import salt.loader

    workdir = Path(config.workdir)
    opts: dict[str, Any] = dict(salt.config.minion_config(None))
    opts["cachedir"] = str(workdir / "cache")
    opts["extension_modules"] = str(workdir / "extmods")
    if config.module_interfaces is not None:
        opts["module_interfaces"] = config.module_interfaces
    opts["grains"] = salt.loader.grains(opts)
    return opts


def load_all(opts: dict[str, Any], result: WorkerResult | None) -> None:
    """One full load of the execution modules, as a minion starts;
    recorded in ``result`` unless it is a warm-up load (``None``)."""
    import salt.loader

    applied = [0.0]
    gc.collect()
    with apply_timer(applied):
        start, cpu_start = time.perf_counter(), time.process_time()
        utils = salt.loader.utils(opts)
        modules = salt.loader.minion_mods(opts, utils=utils)
        modules._load_all()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
    if result is None:
        return
    result.seconds.append(elapsed)
    result.cpu_seconds.append(cpu)
    result.apply_seconds.append(applied[0])
    result.functions = len(modules._dict)
    result.modules = len(modules.loaded_modules)
    result.interfaces = sorted(getattr(modules, "interface_conformance", {}))


def load_one(opts: dict[str, Any], name: str) -> float:
    """Seconds to load one module without ``__virtual__``, as ``raw_mod`` does."""
    import salt.loader

    start = time.perf_counter()
    loaded = salt.loader.raw_mod(opts, name, None)
    elapsed = time.perf_counter() - start
    if not loaded:
        raise RuntimeError(f"{name} did not load")
    return elapsed


def measure(config: WorkerConfig) -> WorkerResult:
    """Warm up, then time the counted full loads and the single modules."""
    import salt

    opts = minion_opts(config)
    grains = opts["grains"]
    result = WorkerResult(
        salt_file=str(salt.__file__),
        os=str(grains.get("os")),
        os_family=str(grains.get("os_family")),
    )
    for _ in range(config.warmup):
        load_all(opts, None)
    for _ in range(config.loads):
        load_all(opts, result)
    for name in config.single_modules:
        load_one(opts, name)
        result.single[name] = [load_one(opts, name) for _ in range(config.single_loads)]
    return result


def main(argv: list[str]) -> int:
    """``CONFIG RESULT``: read the config, measure, write the result."""
    config = WorkerConfig(**json.loads(Path(argv[0]).read_text()))
    Path(argv[1]).write_text(json.dumps(asdict(measure(config))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
