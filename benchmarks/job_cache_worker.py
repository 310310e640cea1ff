"""One job of one variant of the ``job-cache`` benchmark, in its own process.

``python -m benchmarks.job_cache_worker CONFIG RESULT``: the Salt tree under
test comes first on ``PYTHONPATH`` (pristine 3008.3 or the series), so this
module imports Salt only inside :func:`measure`. In a master cache of its
own (a temporary directory under CONFIG's ``workdir``, removed at the end)
it publishes a job as the master does (``local_cache.prep_jid``, then
``save_load`` with the targeted minions), stores every minion's return one
after the other through ``salt.utils.job.store_job`` (what an MWorker runs
for each return) and writes the process's CPU seconds over those returns to
RESULT. A warm-up job comes first. The job cache must then hold every return
and still the publication's load; otherwise the worker fails and says what
it found.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from harness.fleet import minion_ids
from harness.master import in_process_opts

#: the job every minion returns: ``salt '*' test.sleep 1``
FUN: Final = "test.sleep"
FUN_ARGS: Final = [1]
TARGET: Final = "*"
#: the job cache the benchmark measures, Salt's default ``master_job_cache``
JOB_CACHE: Final = "local_cache"


class JobCacheLost(Exception):
    """The job cache does not hold what the job stored."""


@dataclass(frozen=True)
class JobCacheConfig:
    """One counted job: its minions, after a warm-up job of ``warmup``."""

    workdir: str  # where the worker's temporary master cache goes
    minions: int
    warmup: int


@dataclass(frozen=True)
class JobCacheResult:
    """CPU seconds over the counted job's returns, all of them and the last
    tenth (the returns that find the most of the job already stored)."""

    salt_file: str
    returns: int
    cpu_s: float
    last_returns: int
    last_cpu_s: float


def publish_load(jid: str) -> dict[str, Any]:
    """The load the master saves when it publishes job ``jid``."""
    return {
        "cmd": "publish",
        "jid": jid,
        "tgt": TARGET,
        "tgt_type": "glob",
        "fun": FUN,
        "arg": list(FUN_ARGS),
        "ret": "",
        "user": "root",
        "kwargs": {"show_jid": False, "delimiter": ":"},
    }


def return_load(jid: str, minion_id: str) -> dict[str, Any]:
    """A minion's return of job ``jid``, as the master receives it."""
    return {
        "cmd": "_return",
        "jid": jid,
        "id": minion_id,
        "return": True,
        "retcode": 0,
        "success": True,
        "fun": FUN,
        "fun_args": list(FUN_ARGS),
    }


def problems(
    jid: str, ids: Sequence[str], stored: dict[str, Any], load: dict[str, Any]
) -> list[str]:
    """What is wrong with job ``jid`` of minions ``ids`` in the job cache:
    ``stored`` is what ``get_jid`` gives (each minion's return), ``load`` what
    ``get_load`` gives (the publication's load). Empty when all is well."""
    found = []
    missing = [m for m in ids if m not in stored]
    if missing:
        found.append(
            f"{len(missing)} of {len(ids)} returns missing from get_jid "
            f"(first {missing[0]})"
        )
    wrong = [m for m in ids if m in stored and stored[m].get("return") is not True]
    if wrong:
        found.append(
            f"{len(wrong)} of {len(ids)} returns are not True (first {wrong[0]})"
        )
    published = publish_load(jid)
    for key in ("fun", "tgt", "tgt_type", "arg"):
        if load.get(key) != published[key]:
            found.append(
                f"get_load {key} is {load.get(key)!r}, the publication's "
                f"{published[key]!r}"
            )
    if load.get("Minions") != sorted(ids):
        found.append(
            f"get_load lists {len(load.get('Minions') or [])} minions, not the "
            f"{len(ids)} published to"
        )
    return [f"job {jid}: {line}" for line in found]


def last_count(returns: int) -> int:
    """How many returns are the job's last tenth (at least one)."""
    return max(1, returns // 10)


def measure(config: JobCacheConfig) -> JobCacheResult:
    """Store a warm-up job's returns, then the counted job's; CPU of the
    counted. Raises :class:`JobCacheLost` if the job cache lost any of it."""
    import salt.minion
    import salt.utils.job

    import salt

    with tempfile.TemporaryDirectory(dir=config.workdir, prefix="master-") as tmp:
        opts = in_process_opts(Path(tmp), master_job_cache=JOB_CACHE)
        mminion = salt.minion.MasterMinion(
            opts, states=False, rend=False, matcher=False
        )
        returners = mminion.returners

        def publish(ids: list[str]) -> str:
            jid: str = returners[f"{JOB_CACHE}.prep_jid"](nocache=False)
            returners[f"{JOB_CACHE}.save_load"](jid, publish_load(jid), minions=ids)
            return jid

        def store(jid: str, minion_id: str) -> None:
            salt.utils.job.store_job(
                opts, return_load(jid, minion_id), event=None, mminion=mminion
            )

        try:
            warm_jid = publish(minion_ids("warm", config.warmup))
            for minion_id in minion_ids("warm", config.warmup):
                store(warm_jid, minion_id)
            ids = minion_ids("evil", config.minions)
            jid = publish(ids)
            last = last_count(len(ids))
            started = time.process_time()
            for minion_id in ids[:-last]:
                store(jid, minion_id)
            last_started = time.process_time()
            for minion_id in ids[-last:]:
                store(jid, minion_id)
            ended = time.process_time()
            found = problems(
                jid,
                ids,
                returners[f"{JOB_CACHE}.get_jid"](jid),
                returners[f"{JOB_CACHE}.get_load"](jid),
            )
        finally:
            mminion.destroy()
    if found:
        raise JobCacheLost("the job cache lost data: " + "; ".join(found))
    return JobCacheResult(
        salt_file=str(salt.__file__),
        returns=len(ids),
        cpu_s=ended - started,
        last_returns=last,
        last_cpu_s=ended - last_started,
    )


def main(argv: list[str]) -> int:
    """Run one worker: ``CONFIG RESULT`` (JSON files)."""
    config = JobCacheConfig(**json.loads(Path(argv[0]).read_text()))
    try:
        result = measure(config)
    except JobCacheLost as exc:
        print(f"job-cache worker: {exc}", file=sys.stderr)
        return 1
    Path(argv[1]).write_text(json.dumps(asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
