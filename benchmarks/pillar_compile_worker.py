"""One run of one variant of the ``pillar-compile`` benchmark, in its own process.

``python -m benchmarks.pillar_compile_worker CONFIG RESULT``: the Salt tree
under test comes first on ``PYTHONPATH`` (pristine 3008.3 or the series), so
this module imports Salt only inside :func:`measure`. It builds the master's
``AESFuncs`` (the handler an MWorker runs) over the options in CONFIG, serves
the warm-up ``_pillar`` requests, then measures the process's CPU time over
the counted ones and writes the CPU seconds and every pillar to RESULT.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.master import in_process_opts


@dataclass(frozen=True)
class WorkerConfig:
    """What one run serves: master options and the minions that ask."""

    workdir: str
    overrides: dict[str, Any]
    warmup: list[str]
    minions: list[str]


@dataclass(frozen=True)
class WorkerResult:
    """CPU seconds over the counted requests, and the pillars they returned."""

    salt_file: str
    cpu_s: float
    requests: int
    pillars: dict[str, Any]


def grains(minion_id: str) -> dict[str, Any]:
    """Synthetic grains of about the size of a real minion's top level."""
    number = int("".join(c for c in minion_id if c.isdigit()) or 0)
    ret: dict[str, Any] = {
        "id": minion_id,
        "os": "Debian" if number % 2 else "RedHat",
        "os_family": "Debian" if number % 2 else "RedHat",
        "osrelease": f"{12 + number % 3}",
        "kernel": "Linux",
        "num_cpus": 2 + number % 8,
        "mem_total": 2048 * (1 + number % 4),
        "ipv4": [f"10.{number // 65536 % 256}.{number // 256 % 256}.{number % 256}"],
        "fqdn": f"{minion_id}.example.org",
    }
    ret.update({f"custom_{i}": f"value-{i}-{number}" for i in range(40)})
    return ret


def measure(config: WorkerConfig) -> WorkerResult:
    """Serve ``config``'s requests through ``AESFuncs._pillar``; CPU of the counted."""
    import salt.master

    import salt

    opts = in_process_opts(Path(config.workdir), **config.overrides)
    aes_funcs = salt.master.AESFuncs(opts)
    try:
        for minion_id in config.warmup:
            aes_funcs._pillar({"id": minion_id, "grains": grains(minion_id)})
        pillars = {}
        started = time.process_time()
        for minion_id in config.minions:
            pillars[minion_id] = aes_funcs._pillar(
                {"id": minion_id, "grains": grains(minion_id)}
            )
        cpu_s = time.process_time() - started
    finally:
        aes_funcs.destroy()
    return WorkerResult(
        salt_file=str(salt.__file__),
        cpu_s=cpu_s,
        requests=len(config.minions),
        pillars=pillars,
    )


def main(argv: list[str]) -> int:
    """Run one worker: ``CONFIG RESULT`` (JSON files)."""
    config = WorkerConfig(**json.loads(Path(argv[0]).read_text()))
    result = measure(config)
    Path(argv[1]).write_text(json.dumps(asdict(result), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
