"""The salt-api section: a short load through the real ``salt-api``
(``rest_cherrypy``, ``sharedsecret`` eauth) in front of the tour's master.

A few console users log in once and, for a few seconds, send what an
operator console sends: presence pings to small sets (``local``), async jobs
to everyone (``local_async``) and runner calls. The full locust load run with
its shapes and distributed mode is ``nox -s load``; this is its smoke test on
the tour's stack. Every request must succeed, or be refused with the master's
explicit "overloaded, retry later" (HTTP 503).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from harness.saltapi import ApiError, api_request, login
from tour.context import TourContext
from tour.registry import Finding, Registry, ScenarioFailed

SECTION = "load through salt-api"
USERS = 4
SECONDS = 8.0
REQUEST_TIMEOUT = 60.0
PING_SET = 5


@dataclass
class Tally:
    """Latencies and failures of the load's requests, by kind; thread-safe."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, began: float, problem: str | None) -> None:
        """One request of ``kind`` that started at ``began``; ``problem`` if failed."""
        with self.lock:
            self.seconds[kind].append(time.monotonic() - began)
            if problem is not None:
                self.failures[kind].append(problem)


def _requests(ctx: TourContext, user: int) -> list[tuple[str, dict[str, Any]]]:
    ids = ctx.all_minions()
    start = (user * PING_SET) % max(1, len(ids))
    targets = (ids[start:] + ids[:start])[:PING_SET]
    return [
        (
            "local test.ping (5 minions)",
            {
                "client": "local",
                "tgt": targets,
                "tgt_type": "list",
                "fun": "test.ping",
                "timeout": 10,
            },
        ),
        (
            "local_async to all",
            {"client": "local_async", "tgt": "*", "fun": "test.ping"},
        ),
        ("runner ratelimit.status", {"client": "runner", "fun": "ratelimit.status"}),
    ]


def _problem(kind: str, reply: Any, targets: list[str] | None) -> str | None:
    ret = reply.get("return", [None])[0] if isinstance(reply, dict) else None
    if kind.startswith("local test.ping"):
        silent = [t for t in targets or [] if (ret or {}).get(t) is not True]
        return f"no True from {silent}" if silent else None
    if kind.startswith("local_async"):
        return None if isinstance(ret, dict) and ret.get("jid") else f"no jid: {ret!r}"
    return None if ret is not None else f"empty reply: {reply!r}"


def _user(ctx: TourContext, token: str, user: int, tally: Tally, until: float) -> None:
    assert ctx.stack.api is not None
    url = ctx.stack.api.url
    requests = _requests(ctx, user)
    n = 0
    while time.monotonic() < until:
        kind, body = requests[n % len(requests)]
        n += 1
        began = time.monotonic()
        try:
            reply = api_request(url, "/", [body], REQUEST_TIMEOUT, token=token)
            tgt = body.get("tgt")
            problem = _problem(kind, reply, tgt if isinstance(tgt, list) else None)
        except ApiError as exc:
            overloaded = exc.status == 503 and "overloaded" in str(exc)
            problem = "503 overloaded" if overloaded else str(exc)[:200]
        tally.record(kind, began, problem)


def short_load(ctx: TourContext) -> Finding:
    """A few users through salt-api for a few seconds: nothing fails but the
    master's explicit 503 refusals."""
    api = ctx.stack.api
    if api is None:
        raise ScenarioFailed("the tour's stack has no salt-api")
    token = login(api.credentials)
    tally = Tally()
    until = time.monotonic() + SECONDS
    threads = [
        threading.Thread(target=_user, args=(ctx, token, n, tally, until), daemon=True)
        for n in range(USERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SECONDS + 3 * REQUEST_TIMEOUT)
    real = {
        kind: [p for p in problems if p != "503 overloaded"]
        for kind, problems in tally.failures.items()
    }
    if any(real.values()) or not tally.seconds:
        raise ScenarioFailed(
            "requests through salt-api failed: "
            + "; ".join(f"{k}: {v[0]} ({len(v)}x)" for k, v in real.items() if v)
        )
    rows = []
    for kind, seconds in sorted(tally.seconds.items()):
        ordered = sorted(seconds)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        refused = len(tally.failures.get(kind, []))
        rows.append(
            f"| {kind} | {len(seconds)} | {ordered[len(ordered) // 2] * 1000:.0f} "
            f"| {p95 * 1000:.0f} | {refused} |"
        )
    total = sum(len(s) for s in tally.seconds.values())
    body = [
        f"{USERS} users logged in once (`sharedsecret` eauth) and sent requests "
        f"for {SECONDS:g} s to `{api.url}` (`rest_cherrypy`, no TLS): {total} "
        "requests, none failed except explicit 503 refusals (counted below).",
        "",
        "| request | count | p50 ms | p95 ms | 503 refused |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "The full load run (locust, ramp / steady / spike, limiter off vs on, "
        "distributed workers) is `nox -s load`.",
    ]
    return Finding(f"{total} requests through salt-api, no failures", body)


def register(registry: Registry) -> None:
    """Add the salt-api section's scenario to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "a short load through salt-api": short_load,
        },
    )
