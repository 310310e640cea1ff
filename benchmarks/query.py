"""The query runner (issue 14) against what operators do without it.

Three comparisons, each side by side in one process run:

1. **Fields and a filter over the cache.** ``minions`` minions with accepted
   keys and synthetic grains (the simulated minions' own) in a master's data
   cache, no master running. 20 fields and a compound filter through
   ``salt.utils.query.execute`` in-process, against what a script does
   today: ``MasterPillarUtil.get_minion_grains`` (what ``salt-run
   cache.grains`` runs) and the same filter and fields in Python. Both must
   select the same minions.
2. **Ten names against the whole fleet.** The same fields for a filter of
   ten ``name ==`` (looked up, no scan) against no filter.
3. **Live fields with stopped minions.** A real stack with ``running``
   simulated minions plus ``stopped`` minions that have accepted keys and
   cached grains but no process: ``fields=name,running`` (one
   ``saltutil.running`` job) against ``LocalClient.cmd`` of the same
   function, both with the same timeout. Both wait the same way (the
   timeout, then Salt's ``saltutil.find_job`` round for the minions still
   missing); the stopped minions come back offline (status 4: no answer and
   no connection from their address).

    python -m benchmarks query --minions 1000 --stopped 100   (or nox -s bench -- query ...)
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import report

if TYPE_CHECKING:
    from benchmarks.plain_options import QueryOptions

#: the query API's cell statuses this report counts
NORMAL, OFFLINE = 0, 4
# query field -> the grain it shows
GRAIN_FIELDS = {
    "os": "os",
    "os_family": "os_family",
    "osrelease": "osrelease",
    "osarch": "osarch",
    "kernel": "kernel",
    "kernelrelease": "kernelrelease",
    "fqdn": "fqdn",
    "virtual": "virtual",
    "saltversion": "saltversion",
    "cpus": "num_cpus",
    "mem_total": "mem_total",
}
FIELDS = [
    "name",
    "key_state",
    "last_seen",
    *GRAIN_FIELDS,
    "ip4.0",
    "ip4.1",
    "ip6.0",
    "ip6.1",
    "grain.num_gpus",
    "grain.domain",
]
FILTER = (
    '(os_family == "Suse" or os_family == "RedHat") and mem_total >= 4096 '
    'and cpus > 1 and not name =* "*9"'
)
NAMES = 10
PREFIX = "bench"


def _python_filter(minion: str, grains: dict[str, Any]) -> bool:
    """``FILTER`` written by hand, as a script would."""
    return (
        grains.get("os_family") in ("Suse", "RedHat")
        and grains.get("mem_total", 0) >= 4096
        and grains.get("num_cpus", 0) > 1
        and not minion.endswith("9")
    )


def _python_fields(minion: str, grains: dict[str, Any]) -> list[Any]:
    ip4 = [a for a in grains.get("ipv4", []) if a != "127.0.0.1"]
    ip6 = [a for a in grains.get("ipv6", []) if a != "::1"]
    return [
        minion,
        "accepted",
        None,
        *(grains.get(g) for g in GRAIN_FIELDS.values()),
        ip4[0] if ip4 else None,
        ip4[1] if len(ip4) > 1 else None,
        ip6[0] if ip6 else None,
        ip6[1] if len(ip6) > 1 else None,
        grains.get("num_gpus"),
        grains.get("domain"),
    ]


def fill_cache(opts: dict[str, Any], ids: list[str], pem: str) -> None:
    """Accept a key for each of ``ids`` and cache its synthetic grains."""
    import salt.cache

    from harness.fleet import synthetic_grains

    accepted = Path(opts["pki_dir"]) / "minions"
    accepted.mkdir(parents=True, exist_ok=True)
    cache = salt.cache.factory(opts)
    for minion in ids:
        (accepted / minion).write_text(pem)
        cache.store("grains", minion, synthetic_grains(minion))


def _timed(rounds: int, fn: Callable[[], Any]) -> tuple[list[float], Any]:
    seconds, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return seconds, result


def measure_cache(minions: int, rounds: int) -> dict[str, Any]:
    """Comparisons 1 and 2, on a master data cache in a temporary directory."""
    import salt.utils.master
    import salt.utils.query
    from salt.utils.query import minion as qminion

    from harness.fleet import minion_ids
    from harness.master import in_process_opts

    ids = minion_ids(PREFIX, minions)
    with tempfile.TemporaryDirectory(prefix="query-bench-") as workdir:
        opts = in_process_opts(Path(workdir))
        fill_cache(
            opts, ids, "-----BEGIN PUBLIC KEY-----\nbench\n-----END PUBLIC KEY-----\n"
        )

        def query(qfilter: Any) -> dict[str, Any]:
            source = qminion.MinionSource(opts)
            return dict(
                salt.utils.query.execute(qminion.TABLE, source, FIELDS, qfilter)
            )

        def by_hand() -> list[list[Any]]:
            util = salt.utils.master.MasterPillarUtil(
                "*",
                "glob",
                use_cached_grains=True,
                grains_fallback=False,
                opts=opts,
            )
            grains = util.get_minion_grains()
            return [
                _python_fields(m, g)
                for m, g in sorted(grains.items())
                if _python_filter(m, g)
            ]

        names = ids[:: max(1, len(ids) // NAMES)][:NAMES]
        name_filter = " or ".join(f'name == "{n}"' for n in names)
        query(FILTER), by_hand()  # warm-up: imports, loader
        filtered_s, filtered = _timed(rounds, lambda: query(FILTER))
        hand_s, hand = _timed(rounds, by_hand)
        full_s, full = _timed(rounds, lambda: query(None))
        names_s, named = _timed(rounds, lambda: query(name_filter))
    selected = [row[0][1] for row in filtered["data"]]
    if selected != [row[0] for row in hand]:
        raise AssertionError("the query and the hand-written filter disagree")
    return {
        "minions": minions,
        "selected": len(selected),
        "query_filter": filtered_s,
        "by_hand": hand_s,
        "query_full": full_s,
        "query_names": names_s,
        "full_rows": len(full["data"]),
        "named_rows": len(named["data"]),
    }


def measure_live(
    running: int, stopped: int, timeout: int, root: Path
) -> dict[str, Any]:
    """Comparison 3, on a real stack."""
    import salt.cache
    import salt.exceptions
    import salt.utils.query
    from salt.utils.query import minion as qminion

    from harness.fleet import minion_ids
    from harness.stack import fleet_stack

    with fleet_stack(running, root=root / "stack") as stack:
        assert stack.master is not None and stack.fleet is not None
        opts = stack.master.effective_opts()
        pki = stack.master.settings.pki_dir / "minions"
        pem = (pki / stack.fleet.ids[0]).read_text()
        ghosts = minion_ids("stopped", stopped)
        cache = salt.cache.factory(opts)
        for ghost in ghosts:
            (pki / ghost).write_text(pem)
            cache.store("grains", ghost, {"id": ghost, "os": "SUSE"})

        def query() -> dict[str, Any]:
            source = qminion.MinionSource(opts, timeout=timeout)
            return dict(
                salt.utils.query.execute(qminion.TABLE, source, ["name", "running"])
            )

        def plain() -> dict[str, Any]:
            with stack.client() as client:
                try:
                    return dict(client.cmd("*", "saltutil.running", timeout=timeout))
                except salt.exceptions.SaltClientError as exc:
                    # Salt's find_job round after the timeout can itself time
                    # out on a loaded master: the comparison says so
                    return {"error": str(exc).splitlines()[0]}

        query_s, result = _timed(1, query)
        plain_s, answered = _timed(1, plain)
    statuses: dict[int, int] = {}
    for row in result["data"]:
        statuses[row[1][0]] = statuses.get(row[1][0], 0) + 1
    return {
        "running": running,
        "stopped": stopped,
        "timeout": timeout,
        "query": query_s[0],
        "plain": plain_s[0],
        "statuses": statuses,
        "plain_answers": len(answered),
        "plain_error": answered.get("error") if len(answered) == 1 else None,
    }


def _ms(seconds: list[float]) -> str:
    return f"{report.median(seconds) * 1000:.1f}"


def render(cache: dict[str, Any], live: dict[str, Any] | None, command: str) -> str:
    """The report's Markdown."""
    lines = [
        "# Query runner",
        "",
        report.environment(),
        "",
        f"Command: `{command}`",
        "",
        f"## Fields and a filter over the cache ({cache['minions']} minions)",
        "",
        f"{len(FIELDS)} fields, filter `{FILTER}`: {cache['selected']} minions "
        "selected by both.",
        "",
        report.table(
            ["variant", "median ms", "p90 ms"],
            [
                [
                    "query.query (in-process)",
                    _ms(cache["query_filter"]),
                    f"{report.percentile(cache['query_filter'], 90) * 1000:.1f}",
                ],
                [
                    "cache.grains + Python filter",
                    _ms(cache["by_hand"]),
                    f"{report.percentile(cache['by_hand'], 90) * 1000:.1f}",
                ],
            ],
        ),
        "",
        f"## {NAMES} names against the whole fleet",
        "",
        report.table(
            ["variant", "rows", "median ms"],
            [
                ["no filter", cache["full_rows"], _ms(cache["query_full"])],
                [f"{NAMES} x name ==", cache["named_rows"], _ms(cache["query_names"])],
            ],
        ),
    ]
    if live is not None:
        lines += [
            "",
            f"## Live field with {live['stopped']} stopped minions",
            "",
            f"{live['running']} running simulated minions, {live['stopped']} with "
            f"accepted keys and cached grains but no process; timeout "
            f"{live['timeout']} s.",
            "",
            report.table(
                ["variant", "seconds", "answers"],
                [
                    [
                        "query.query fields=name,running",
                        f"{live['query']:.2f}",
                        ", ".join(
                            f"status {s}: {n}"
                            for s, n in sorted(live["statuses"].items())
                        ),
                    ],
                    [
                        "LocalClient.cmd saltutil.running",
                        f"{live['plain']:.2f}",
                        live.get("plain_error") or f"{live['plain_answers']} entries",
                    ],
                ],
            ),
        ]
    lines += ["", "## Goals", "", *goal_lines(cache, live)]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def goal_lines(cache: dict[str, Any], live: dict[str, Any] | None) -> list[str]:
    """The issue's goals as ratios of this run's medians, each with its verdict."""
    full = report.median(cache["query_filter"])
    baseline = report.median(cache["by_hand"])
    names = report.median(cache["query_names"]) / report.median(cache["query_full"])
    lines = [
        f"- full query no slower than cache.grains + Python: {full / baseline:.2f}x "
        f"<= 1.0x: {_verdict(full <= baseline)}",
        f"- {NAMES}-name query at most 0.05x of the full query: {names:.3f}x: "
        f"{_verdict(names <= 0.05)}",
    ]
    if live is None:
        return [*lines, "- live query: not run (--no-live)"]
    limit = live["timeout"] + 1
    stopped_ok = live["statuses"].get(OFFLINE, 0) == live["stopped"]
    running_ok = live["statuses"].get(NORMAL, 0) == live["running"]
    return [
        *lines,
        f"- live query within its timeout + 1 s: {live['query']:.2f} s <= {limit} s: "
        f"{_verdict(live['query'] <= limit)}",
        f"- statuses exact: {live['statuses'].get(NORMAL, 0)} of {live['running']} "
        f"running normal, {live['statuses'].get(OFFLINE, 0)} of {live['stopped']} "
        f"stopped offline: {_verdict(stopped_ok and running_ok)}",
    ]


def run(opts: QueryOptions) -> Path:
    """Measure, write ``results/query.md`` (and ``.json``), return its path."""
    cache = measure_cache(opts.minions, opts.rounds)
    live_result = None
    if not opts.no_live:
        with tempfile.TemporaryDirectory(prefix="query-live-") as root:
            live_result = measure_live(
                opts.running, opts.stopped, opts.timeout, Path(root)
            )
    command = opts.reproduce_command()
    report.write_data("query", {"cache": cache, "live": live_result})
    return report.write("query", render(cache, live_result, command))
