"""The rate-limiting section: a storm with the limiter on and off, and a
full queue that refuses a publication with an error the client sees.

The limiter-on storm runs first: the simulated minions count the most jobs
one of them ever had (their whole life), so the storm that must stay low
goes before the one expected to pile up.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

import salt.exceptions

from harness.master import salt_script
from harness.polling import wait_until
from harness.ratelimit import (
    OUTCOMES,
    QueueProbe,
    RateLimiting,
    listener_outcomes,
    outcome_problems,
)
from harness.restart import wait_for_minions
from tour import plots
from tour.context import TourContext
from tour.options import storm_limits
from tour.registry import Finding, Registry, ScenarioFailed
from tour.storm import STORM_FUNCTION, fleet_target, run_storm
from tour.storm_result import StormResult

SECTION = "Rate limiting"
#: the message and exit code of a refused publication (SaltMasterOverloadedError)
OVERLOADED = "Salt master overloaded, retry later"
EXIT_OVERLOADED = 75
RECONNECT_TIMEOUT = 180.0
IDLE_TIMEOUT = 120.0
COMMAND_TIMEOUT = 120


def overload_limits(ctx: TourContext) -> RateLimiting:
    """Room for one job to the whole fleet and one more in the queue."""
    return RateLimiting(
        max_master_jobs=len(ctx.fleet_ids),
        max_minion_jobs=ctx.options.minion_slots,
        max_queue=1,
    )


def restart_master(ctx: TourContext, limits: RateLimiting | None) -> float:
    """Restart the master by pid with ``limits`` (None: the limiter off);
    return the seconds until every minion answered again."""
    master = ctx.stack.master
    assert master is not None
    began = time.monotonic()
    master.stop()
    master.settings.extra.pop("rate_limiting", None)
    if limits is not None:
        master.settings.extra.update(limits.master_options())
    master.start()
    silent = wait_for_minions(
        master.settings.conf_file, ctx.all_minions(), RECONNECT_TIMEOUT
    )
    if silent:
        raise ScenarioFailed(
            f"after the master restart {len(silent)} minion(s) did not answer "
            f"within {RECONNECT_TIMEOUT:.0f}s ({', '.join(silent[:3])}"
            + (", ..." if len(silent) > 3 else "")
            + ")"
        )
    return time.monotonic() - began


def _salt(
    ctx: TourContext, command: str, *args: str
) -> subprocess.CompletedProcess[str]:
    assert ctx.stack.master is not None
    return subprocess.run(
        [salt_script(command), "-c", str(ctx.stack.master.settings.conf_dir), *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def ratelimit_status(ctx: TourContext) -> dict[str, Any]:
    """``salt-run ratelimit.status``, parsed."""
    proc = _salt(ctx, "salt-run", "--out", "json", "ratelimit.status")
    try:
        status = json.loads(proc.stdout)
    except ValueError:
        status = None
    if (
        proc.returncode != 0
        or not isinstance(status, dict)
        or "submitted" not in status
    ):
        said = " ".join((proc.stdout or proc.stderr).split())
        raise ScenarioFailed(
            f"salt-run ratelimit.status exited {proc.returncode}: {said[:300]}"
        )
    return status


def _probe(ctx: TourContext) -> QueueProbe:
    assert ctx.stack.master is not None
    return QueueProbe(ctx.stack.master.settings.sock_dir)


def _wait_idle(ctx: TourContext) -> None:
    def idle() -> bool:
        status = _probe(ctx).status()
        return bool(status["queued"] == 0 and status["master_jobs"] == 0)

    if not wait_until(idle, timeout=IDLE_TIMEOUT):
        raise ScenarioFailed(
            f"the master still holds jobs after {IDLE_TIMEOUT:.0f}s: "
            f"{_probe(ctx).status()}"
        )


def _outcome_counts(status: dict[str, Any]) -> dict[str, int]:
    counts = status.get("outcomes") or {}
    return {name: int(counts.get(name, 0)) for name in OUTCOMES}


def _check_storm(result: StormResult, jobs: int) -> None:
    if result.completed != jobs:
        raise ScenarioFailed(
            f"storm ({result.label}): {result.completed} of {jobs} jobs got every "
            f"expected return within {result.seconds:.0f}s "
            f"({result.missing_returns} returns missing)"
        )


def storm_with_limiter(ctx: TourContext) -> Finding:
    """Every job published once, no minion above its capacity, all returns in."""
    limits = storm_limits(ctx.options)
    result = run_storm(ctx, "on", limited=True)
    ctx.storms["on"] = result
    _check_storm(result, ctx.options.storm_jobs)
    problems = outcome_problems(result.outcomes, result.jids)
    if problems:
        raise ScenarioFailed(
            f"{len(problems)} storm jobs did not end in exactly one outcome: "
            f"{dict(list(problems.items())[:3])}"
        )
    if result.peak_minion_jobs > limits.max_minion_jobs:
        raise ScenarioFailed(
            f"a minion had {result.peak_minion_jobs} jobs at once, above "
            f"max_minion_jobs {limits.max_minion_jobs}"
        )
    _wait_idle(ctx)
    status = ratelimit_status(ctx)
    counts = _outcome_counts(status)
    if sum(counts.values()) != int(status.get("submitted", -1)):
        raise ScenarioFailed(
            f"ratelimit.status: {status.get('submitted')} jobs submitted but "
            f"outcomes {counts} add up to {sum(counts.values())}"
        )
    body = [
        f"Limiter on (`max_minion_jobs: {limits.max_minion_jobs}`, "
        f"`max_master_jobs: {limits.max_master_jobs}`): {ctx.options.storm_jobs} "
        f"`{STORM_FUNCTION} {ctx.options.job_seconds():g}` jobs to {result.targets} "
        f"minions; every job ended in one outcome ({_describe_outcomes(result)}), "
        f"{_excluded_text(result)} every expected return arrived in "
        f"{result.seconds:.1f}s.",
        "",
        "`salt-run ratelimit.status` afterwards accounts for every job the "
        f"master accepted: {status.get('submitted')} submitted = "
        + " + ".join(f"{n} {name}" for name, n in counts.items())
        + f"; {status.get('queued')} queued.",
    ]
    return Finding(
        f"{result.completed}/{ctx.options.storm_jobs} jobs, at most "
        f"{result.peak_minion_jobs} per minion (capacity {limits.max_minion_jobs})",
        body,
    )


def _excluded_text(result: StormResult) -> str:
    left_out = sum(result.excluded.values())
    if not left_out:
        return "no minion was left out;"
    return (
        f"{left_out} times a minion at `max_minion_jobs` was left out of a job "
        "(it shows as not returned, as an unreachable minion would);"
    )


def _describe_outcomes(result: StormResult) -> str:
    counts: dict[str, int] = {}
    for found in result.outcomes.values():
        for outcome in found:
            counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))


def overload_refuses(ctx: TourContext) -> Finding:
    """A full queue refuses with SaltMasterOverloadedError; every job is accounted for."""
    limits = overload_limits(ctx)
    restarted = restart_master(ctx, limits)
    listener = ctx.stack.listener
    assert listener is not None
    before = _outcome_counts(ratelimit_status(ctx))
    mark = listener.mark()
    target = fleet_target(ctx)
    with ctx.stack.client() as client:
        running = str(client.cmd_async(target, "test.sleep", [5]))  # fills the master
        queued = str(client.cmd_async(target, "test.sleep", [1]))  # the one queue slot
        try:
            client.run_job(target, "test.sleep", [1])
        except salt.exceptions.SaltMasterOverloadedError as exc:
            client_error = str(exc)
        else:
            raise ScenarioFailed("LocalClient.run_job was accepted by a full queue")
    cli = _salt(ctx, "salt", "--async", target, "test.sleep", "1")
    said = (cli.stdout + cli.stderr).strip()
    if cli.returncode != EXIT_OVERLOADED or OVERLOADED not in said:
        raise ScenarioFailed(
            f"salt --async on a full queue exited {cli.returncode} "
            f"(expected {EXIT_OVERLOADED}) saying {said[:300]!r}"
        )
    _wait_idle(ctx)
    found = listener_outcomes(listener, mark)
    problems = outcome_problems(found, list(found))
    rejected = [jid for jid, f in found.items() if f == ["rejected"]]
    accepted = {running: found.get(running), queued: found.get(queued)}
    if (
        problems
        or len(rejected) != 2
        or any(f != ["published"] for f in accepted.values())
    ):
        raise ScenarioFailed(
            f"outcomes after the burst: {found} (expected the two accepted jobs "
            "published, the two refused ones rejected, each exactly once)"
        )
    after = _outcome_counts(ratelimit_status(ctx))
    if after["rejected"] - before["rejected"] != 2:
        raise ScenarioFailed(
            f"ratelimit.status counts {after['rejected'] - before['rejected']} new "
            "rejections, expected 2"
        )
    body = [
        f"Master restarted ({restarted:.0f}s until every minion answered) with "
        f"`max_master_jobs: {limits.max_master_jobs}` (one job to the whole fleet) "
        f"and `max_queue: {limits.max_queue}`. One job ran, one waited in the queue; "
        "the next two were refused:",
        "",
        "```",
        f"$ salt --async '{target}' test.sleep 1    # exit {cli.returncode}",
        *said.splitlines()[-3:],
        f">>> LocalClient.run_job(...)  # raises SaltMasterOverloadedError: {client_error}",
        "```",
        "",
        "Nothing was lost silently: the two accepted jobs were published, the two "
        "refused ones are recorded as `rejected` (events "
        "`salt/ratelimit/job/<jid>/rejected`, and `ratelimit.status` counts "
        f"{after['rejected'] - before['rejected']} more rejections).",
    ]
    return Finding(
        f"salt exits {cli.returncode} '{OVERLOADED}', 2 jobs recorded rejected", body
    )


def storm_without_limiter(ctx: TourContext) -> Finding:
    """The same storm with the limiter off; what the limiter changes."""
    restart_master(ctx, None)
    on = ctx.storms.get("on")
    result = run_storm(ctx, "off", limited=False)
    ctx.storms["off"] = result
    _check_storm(result, ctx.options.storm_jobs)
    slots = ctx.options.minion_slots
    cap = storm_limits(ctx.options).max_minion_jobs
    if result.peak_minion_jobs <= cap:
        raise ScenarioFailed(
            f"without the limiter no minion had more than {result.peak_minion_jobs} "
            f"jobs, no more than the limiter allows ({cap}): the storm shows "
            "nothing; raise --storm-jobs"
        )
    if on is None:
        raise ScenarioFailed("no limiter-on storm to compare with (it failed)")
    figures = [
        plots.ping_latency(ctx.plot_path("ratelimit-ping.png"), [result, on]),
        plots.returns_over_time(ctx.plot_path("ratelimit-returns.png"), [result, on]),
    ]
    body = [
        f"{ctx.options.storm_jobs} `{STORM_FUNCTION} {ctx.options.job_seconds():g}` "
        f"jobs at once to {result.targets} simulated minions that run {slots} jobs "
        "at a time "
        f"(more wait on the minion); meanwhile `test.ping` to "
        f"{ctx.options.ping_minions} minions at a time, the next batch "
        f"{ctx.options.ping_interval:g}s after the last answered.",
        "",
        *comparison_table([result, on], slots),
        "",
        "Without the limiter every job lands on every minion at once and waits "
        "there, and a presence check waits behind them: p95 "
        f"{result.ping_quantile(0.95):.1f}s. With it the master holds the jobs "
        "and publishes as returns give capacity back, so no minion holds more "
        f"than `max_minion_jobs` ({storm_limits(ctx.options).max_minion_jobs}) "
        "and `test.ping`, exempt from the queue, waits for at most those: p95 "
        f"{on.ping_quantile(0.95):.1f}s. {limiter_cost(result, on)}",
        "",
        *(f"![{p.stem}]({p.name})" for p in figures),
    ]
    return Finding(
        f"most jobs on one minion {result.peak_minion_jobs} off vs "
        f"{on.peak_minion_jobs} on; ping p95 {result.ping_quantile(0.95):.1f}s vs "
        f"{on.ping_quantile(0.95):.1f}s",
        body,
        plots=figures,
    )


def limiter_cost(off: StormResult, on: StormResult) -> str:
    """What the limiter costs, as sentences: storm duration, and the presence
    ping's median where the limiter makes it worse."""
    if on.seconds <= off.seconds:
        said = ["The storm took no longer with the limiter."]
    else:
        said = [
            f"The price: the storm took {on.seconds:.0f}s instead of "
            f"{off.seconds:.0f}s, the master waiting for returns before it "
            "publishes more."
        ]
    median_off, median_on = off.ping_quantile(0.5), on.ping_quantile(0.5)
    if median_on > median_off:
        said.append(
            f"The median presence ping is worse with the limiter: "
            f"{median_on:.2f}s instead of {median_off:.2f}s."
        )
    return " ".join(said)


def comparison_table(results: list[StormResult], slots: int) -> list[str]:
    """A Markdown table: one column per storm."""
    header = "| | " + " | ".join(f"limiter {r.label}" for r in results) + " |"
    rows = [
        (
            "jobs completed (every return in)",
            [f"{r.completed} of {len(r.jids)}" for r in results],
        ),
        (
            f"most jobs on one minion at once (it runs {slots}; pings count)",
            [str(r.peak_minion_jobs) for r in results],
        ),
        (
            "minions left out at capacity",
            [str(sum(r.excluded.values())) for r in results],
        ),
        ("storm duration", [f"{r.seconds:.1f}s" for r in results]),
        (
            "presence ping p50 / p95 / max (samples)",
            [
                f"{r.ping_quantile(0.5):.2f}s / {r.ping_quantile(0.95):.2f}s / "
                f"{r.ping_quantile(1.0):.2f}s ({_samples(len(r.pings))})"
                for r in results
            ],
        ),
        ("pings unanswered", [str(r.unanswered_pings) for r in results]),
        ("rate-limiting outcomes", [_describe_outcomes(r) or "-" for r in results]),
    ]
    lines = [header, "| --- |" + " --- |" * len(results)]
    lines += [f"| {name} | " + " | ".join(values) + " |" for name, values in rows]
    return lines


def _samples(count: int) -> str:
    """How many pings a latency cell rests on; says when they are so few that
    p95 is the slowest ping (the quantile of StormResult.ping_quantile)."""
    said = f"{count} ping" + ("" if count == 1 else "s")
    if count > 0 and round(0.95 * (count - 1)) == count - 1:
        said += ": p95 = max"
    return said


def register(registry: Registry) -> None:
    """Add the rate-limiting section's scenarios to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "storm with the limiter on": storm_with_limiter,
            "full queue: refused, recorded, nothing lost": overload_refuses,
            "storm with the limiter off, compared": storm_without_limiter,
        },
    )
