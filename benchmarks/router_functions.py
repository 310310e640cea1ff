"""Router CPU per request with ``functions`` routes vs without (patch 0012).

An in-process micro-benchmark of the ZeroMQ pool router,
``salt.master.RequestRouter.route_request``, the code a ``functions`` list
adds work to. Minions' ``_return`` requests, encrypted with their session
keys as a minion of request protocol 3 sends them, are routed under three
pool layouts:

- ``commands: _auth only`` (3008.3's default layout): the router routes by
  the clear ``_auth`` command and never opens an encrypted request;
- ``commands: _return``: a pool claims ``_return``, so every encrypted
  request is opened to read its command (patch 0002);
- ``functions: test.ping, saltutil.find_job``: a pool claims functions, so
  every encrypted request is opened and its function looked up (patch 0012).

Two returns: ``test.ping`` (``True``) and a ``state.apply``-sized one (about
40 KB of results); half the ``functions`` requests are for a claimed
function. The layouts alternate inside each run, in one process; each run
counts the process's CPU time over ``--requests`` requests per layout and
return; the report gives the median over ``--runs`` runs and the spread.

    nox -s bench -- router [--runs 5 --requests 2000]
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import report
from benchmarks.salt_trees import rotated

if TYPE_CHECKING:
    from benchmarks.plain_options import RouterOptions

NAME = "router-functions"
MINIONS = 100
LAYOUTS: dict[str, dict[str, Any]] = {
    "commands: _auth only": {
        "auth": {"worker_count": 1, "commands": ["_auth"]},
        "default": {"worker_count": 4, "commands": ["*"]},
    },
    "commands: _return": {
        "returns": {"worker_count": 2, "commands": ["_return"]},
        "default": {"worker_count": 3, "commands": ["*"]},
    },
    "functions: test.ping, saltutil.find_job": {
        "auth": {"worker_count": 1, "commands": ["_auth"]},
        "presence": {
            "worker_count": 1,
            "functions": ["test.ping", "saltutil.find_job"],
        },
        "default": {"worker_count": 3, "commands": ["*"]},
    },
}
BASELINE = "commands: _auth only"


@dataclass
class Measured:
    """CPU microseconds per request of one layout and return, one per run."""

    layout: str
    ret: str
    us_per_request: report.Runs = field(default_factory=report.Runs)
    pools: dict[str, int] = field(default_factory=dict)


def state_return(size: int) -> dict[str, Any]:
    """A ``state.apply`` return of ``size`` states, as a minion sends it."""
    return {
        f"file_|-conf-{i}_|-/etc/app/conf-{i}_|-managed": {
            "result": True,
            "comment": f"File /etc/app/conf-{i} is in the correct state",
            "name": f"/etc/app/conf-{i}",
            "changes": {},
            "__run_num__": i,
            "duration": 1.234,
            "start_time": "12:00:00.000000",
            "__id__": f"conf-{i}",
            "__sls__": "app",
        }
        for i in range(size)
    }


def requests(cachedir: Path) -> dict[str, list[dict[str, Any]]]:
    """Encrypted ``_return`` requests of ``MINIONS`` minions, per return kind.

    Each minion gets a session key file where the MWorkers keep them, as
    after its ``_auth``.
    """
    import salt.crypt

    sessions = cachedir / "sessions"
    sessions.mkdir(parents=True)
    ret: dict[str, list[dict[str, Any]]] = {"test.ping": [], "state.apply": []}
    big = state_return(100)
    for number in range(MINIONS):
        minion = f"minion-{number:04d}"
        path = sessions / minion
        salt.crypt.Crypticle.write_key(str(path))
        crypticle = salt.crypt.Crypticle({}, salt.crypt.Crypticle.read_key(str(path)))
        # half the presence checks are for a function the pool does not claim
        ping = "test.ping" if number % 2 else "test.version"
        for kind, fun, value in (
            ("test.ping", ping, True),
            ("state.apply", "state.apply", big),
        ):
            load: dict[str, Any] = {
                "cmd": "_return",
                "id": minion,
                "fun": fun,
                "return": value,
                "jid": f"2026112312{number:08d}",
                "retcode": 0,
                "success": True,
            }
            ret[kind].append(
                {
                    "enc": "aes",
                    "id": minion,
                    "version": 3,
                    "load": crypticle.dumps(load),
                }
            )
    return ret


def measure(router: Any, payloads: list[dict[str, Any]], count: int) -> float:
    """CPU microseconds per ``route_request`` over ``count`` requests."""
    start = time.process_time()
    for index in range(count):
        router.route_request(payloads[index % len(payloads)])
    return (time.process_time() - start) / count * 1e6


def run(options: RouterOptions) -> Path:
    """Measure every layout and return ``options.runs`` times; write the report."""
    import salt.master

    runs, requests_per_run = options.runs, options.requests
    measured: dict[tuple[str, str], Measured] = {}
    with tempfile.TemporaryDirectory(prefix="saltfleet-router-") as tmp:
        cachedir = Path(tmp) / "cache"
        payloads = requests(cachedir)
        opts = {"cachedir": str(cachedir), "pki_dir": str(Path(tmp) / "pki")}
        routers = {
            name: salt.master.RequestRouter(dict(opts, worker_pools=pools), secrets={})
            for name, pools in LAYOUTS.items()
        }
        for router in routers.values():  # warm-up: crypticles cached
            for kind in payloads:
                measure(router, payloads[kind], MINIONS)
            router.stats = dict.fromkeys(router.stats, 0)
        for run_no in range(runs):
            for name in rotated(list(LAYOUTS), run_no):
                for kind, kind_payloads in payloads.items():
                    one = measured.setdefault((name, kind), Measured(name, kind))
                    before = dict(routers[name].stats)
                    one.us_per_request.append(
                        measure(routers[name], kind_payloads, requests_per_run)
                    )
                    one.pools = {
                        pool: count - before.get(pool, 0)
                        for pool, count in routers[name].stats.items()
                        if count - before.get(pool, 0)
                    }
    command = options.reproduce_command()
    results = list(measured.values())
    sizes = {
        kind: int(report.median([len(p["load"]) for p in kind_payloads]))
        for kind, kind_payloads in payloads.items()
    }
    report.write_data(
        NAME, {"command": command, "load_bytes": sizes, "results": results}
    )
    markdown = render(results, command, runs, requests_per_run, sizes)
    return report.write(NAME, markdown)


def render(
    results: list[Measured],
    command: str,
    runs: int,
    requests_per_run: int,
    sizes: dict[str, int],
) -> str:
    """The report's Markdown."""
    by_key = {(m.layout, m.ret): m for m in results}
    rows = []
    for m in results:
        base = by_key[(BASELINE, m.ret)].us_per_request.median
        rows.append(
            (
                m.layout,
                f"{m.ret} ({sizes[m.ret]} B)",
                f"{m.us_per_request.median:.1f}",
                m.us_per_request.spread,
                f"{m.us_per_request.median - base:+.1f}",
                ", ".join(f"{pool}: {count}" for pool, count in m.pools.items()),
            )
        )
    functions = "functions: test.ping, saltutil.find_job"
    lines = [
        "# Router CPU per request: `functions` routes vs without",
        "",
        report.environment(),
        f"Reproduce: `{command}` (writes `benchmarks/results/{NAME}.md` and `.json`).",
        "",
        f"`salt.master.RequestRouter.route_request` on encrypted `_return` "
        f"requests of {MINIONS} minions (session keys, request protocol 3), "
        f"{requests_per_run} requests per layout and return in each of {runs} "
        "runs, the layouts alternating in one process. CPU microseconds per "
        "request: median over runs, the runs' spread, and the difference to "
        f"`{BASELINE}`, the layout that never opens a request. Pools: where "
        "the last run's requests went.",
        "",
        report.table(
            [
                "layout",
                "return (encrypted load)",
                "CPU us/request",
                "spread",
                f"vs {BASELINE}",
                "pools (last run)",
            ],
            rows,
        ),
        "",
        "What a `functions` list costs is opening each encrypted request "
        "(the AES decrypt and HMAC check of the whole return, and msgpack) "
        "once more in the router, as any route by a command other than "
        "`_auth` does: compare the `functions` rows with `commands: "
        f"_return`. For the {functions.split(': ')[1]} pool the function "
        "lookup itself is one dictionary access.",
    ]
    return "\n".join(lines)
