"""The issue's goals for the storm, limiter on against every other variant in
the same run (off, and what a user would pick instead: pristine 3008.3
tuned, the series' pools without the limiter), each with its verdict and,
when missed, by how much and the run's own data on why.

A relative goal reads ``on / other`` as a ratio for each other variant:
"vs off 1000 s: 1.34x, goal <= 1.1x: missed by 0.24x; vs tuned 900 s: ...".
It is met when it is met against every one of them: the limiter is worth
its code only where it beats each thing a user could run instead. A goal
that needs a variant the run did not have (or a number it did not measure)
is "not measured", never met.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from benchmarks import report
from benchmarks.proctree import WORKER_ROLE_PREFIX
from benchmarks.storm.accounting import PING_TIMEOUT, VariantResult, master_roles
from benchmarks.storm.consumer import BOUND_S, ConsumerRun
from benchmarks.storm.decide import DecideResult
from harness.ratelimit import RateLimiting

#: presence pings answered within their timeout with the limiter on, at least
PING_ANSWERED_SHARE: Final = 0.99
#: limiter on against each other variant, same run: the most each ratio may be
STORM_RATIO: Final = 1.1
CPU_RATIO: Final = 1.1
#: the rows :func:`outside_cpu_per_return` adds below the master's roles
FLEET_ROLE: Final = "simulated fleet"
DRIVER_ROLE: Final = "storm driver"
BOX_ROLE: Final = "whole box, master included"
PSS_RATIO: Final = 1.05
#: one decision of the criteria module, p99 microseconds
GOAL_DECIDE_US: Final = 50.0

NOT_MEASURED: Final = "not measured"


@dataclass
class Goal:
    """One goal: what it is about, its line in the report, whether it was
    met (None: not measured) and, when missed, facts from the run on why."""

    name: str
    line: str
    met: bool | None
    why: list[str] = field(default_factory=list)
    #: False for a goal no run's numbers decide (limiter on not run, the
    #: criteria module's decisions, timed once for the storm): the same in
    #: every run, it is shown once, not once per run
    per_run: bool = True


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def ratio_text(on: float, off: float, limit: float) -> tuple[str, bool | None]:
    """``on / off`` against ``limit``: the words and whether it is met
    (None when ``off`` is 0: no ratio).

    .. code-block:: python

        ratio_text(13.4, 10.0, 1.1)  # ('1.34x, goal <= 1.1x: missed by 0.24x', False)
    """
    if off <= 0:
        return (
            f"no ratio (off measured {off:g}), goal <= {limit:g}x: {NOT_MEASURED}",
            None,
        )
    # compared as printed: "1.10x" is within "<= 1.1x"
    ratio = round(on / off, 2)
    if ratio <= limit:
        return f"{ratio:.2f}x, goal <= {limit:g}x: met", True
    return f"{ratio:.2f}x, goal <= {limit:g}x: missed by {ratio - limit:.2f}x", False


#: the name of the goal line of a storm without limiter on
ON_NOT_RUN: Final = "limiter on not run"


def _on_not_run() -> Goal:
    """The goal line of a storm without limiter on: its goals that compare it
    with the other variants are not measured (the criteria module's is)."""
    return Goal(
        ON_NOT_RUN,
        "- limiter on was not run: its goals that compare it with the other "
        "variants are not measured (the tables below compare the variants run)",
        None,
        per_run=False,
    )


def goals(
    results: list[VariantResult],
    limits: RateLimiting,
    decisions: list[DecideResult],
) -> list[Goal]:
    """Every goal of the issue with its verdict, in the report's order."""
    on = next((r for r in results if r.name == "on"), None)
    others = [r for r in results if r.name != "on"]
    found: list[Goal] = []
    if on is None:
        found.append(_on_not_run())
    else:
        found += [
            _ping_goal(on, others),
            _duration_goal(on, others),
            _cpu_goal(on, others),
            _pss_goal(on, others),
            _lost_goal(on, others),
            _capacity_goal(on, others, limits),
            *_consumer_goals(on, others),
        ]
    if decisions:
        worst = max(report.percentile(d.samples_us, 99) for d in decisions)
        found.append(
            Goal(
                "one decision",
                f"- one decision of the criteria module: worst p99 {worst:.1f} us "
                f"<= {GOAL_DECIDE_US:g} us: " + _verdict(worst <= GOAL_DECIDE_US),
                worst <= GOAL_DECIDE_US,
                per_run=False,
            )
        )
    return found


def goals_over_runs(
    results: list[VariantResult],
    limits: RateLimiting,
    decisions: list[DecideResult],
) -> list[Goal]:
    """:func:`goals` of each run (its variants side by side), folded into one
    goal per name: met when more than half of the runs meet it (for an odd
    number of runs, when the median run does), each run's own line below it;
    a goal no run decides (:attr:`Goal.per_run` False) once, as it is. A
    single run's goals are that run's."""
    numbers = sorted({r.run for r in results})
    per_run = {
        n: goals([r for r in results if r.run == n], limits, decisions) for n in numbers
    }
    if len(numbers) == 1:
        return per_run[numbers[0]]
    by_name: dict[str, list[tuple[int, Goal]]] = {}
    for n, found in per_run.items():
        for goal in found:
            by_name.setdefault(goal.name, []).append((n, goal))
    return [
        runs[0][1] if not runs[0][1].per_run else _folded(name, runs, len(numbers))
        for name, runs in by_name.items()
    ]


def _folded(name: str, runs: list[tuple[int, Goal]], total: int) -> Goal:
    """One goal over ``total`` runs from the runs that measured it."""
    met = sum(1 for _, goal in runs if goal.met)
    measured = sum(1 for _, goal in runs if goal.met is not None)
    if not measured:
        verdict: bool | None = None
        words = NOT_MEASURED
    else:
        verdict = met * 2 > total
        words = f"met in {met} of {total} runs: " + _verdict(verdict)
    line = "\n".join(
        [f"- {name}: {words}"]
        + [f"  - run {n}: {goal.line.removeprefix('- ')}" for n, goal in runs]
    )
    why = [
        f"run {n}: {fact}" for n, goal in runs if goal.met is False for fact in goal.why
    ]
    return Goal(name, line, verdict, why)


def called(name: str) -> str:
    """How a text names a variant: ``limiter on``, ``limiter off``, ``tuned``."""
    return f"limiter {name}" if name in ("on", "off") else name


def possessive(words: str) -> str:
    """``words``' possessive: ``limiter off's``, ``pools'``."""
    return f"{words}'" if words.endswith("s") else f"{words}'s"


def _combined(verdicts: list[bool | None]) -> bool | None:
    """One verdict from a goal's verdict against each other variant: missed
    against one is missed; met only when met against all of them."""
    if any(v is False for v in verdicts):
        return False
    if verdicts and all(verdicts):
        return True
    return None


def _relative(
    what: str,
    on: VariantResult,
    others: list[VariantResult],
    value: Callable[[VariantResult], float | None],
    words: Callable[[VariantResult], str],
    limit: float,
    unfit: Callable[[VariantResult], str | None] = lambda _: None,
) -> tuple[str, bool | None]:
    """The goal line ``what on X vs off Y: ratio; vs tuned Z: ratio`` and
    its verdict (:func:`_combined`); ``words`` shows a variant's value
    (``"1000 s"``), ``unfit`` says why a variant is no yardstick (then its
    ratio is not measured)."""
    head = f"- {what} on {words(on)}"
    if not others:
        return (
            f"{head} vs off -: {NOT_MEASURED}, the run had no other variant "
            f"(goal <= {limit:g}x of off)",
            None,
        )
    parts: list[str] = []
    verdicts: list[bool | None] = []
    mine = value(on)
    for other in others:
        theirs = value(other)
        reason = unfit(other)
        if reason is None:
            if mine is not None and theirs is not None:
                text, met = ratio_text(mine, theirs, limit)
                parts.append(f"vs {other.name} {words(other)}: {text}")
                verdicts.append(met)
                continue
            reason = "a value missing"
        parts.append(
            f"vs {other.name} {words(other)}: {NOT_MEASURED}, {reason} "
            f"(goal <= {limit:g}x of {other.name})"
        )
        verdicts.append(None)
    return f"{head} " + "; ".join(parts), _combined(verdicts)


def _shown(
    value: Callable[[VariantResult], float | None], form: str
) -> Callable[[VariantResult], str]:
    """A variant's value as ``form`` shows it (``"{:.0f} MiB"``), ``-``
    when it has none."""

    def words(result: VariantResult) -> str:
        number = value(result)
        return "-" if number is None else form.format(number)

    return words


def _ping_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    """Pings answered within their timeout, the headline: a ratio of ping
    times would divide by the timeout wherever pings timed out."""
    if not on.ping_ticks:
        return Goal(
            "presence pings answered",
            f"- presence pings answered within their {PING_TIMEOUT} s timeout: "
            f"{NOT_MEASURED}, the limiter-on storm ended before its first ping",
            None,
        )
    share = on.ping_answered_share or 0.0
    met = round(share * 100, 1) >= PING_ANSWERED_SHARE * 100
    verdict = (
        "met"
        if met
        else f"missed by {PING_ANSWERED_SHARE * 100 - share * 100:.1f} points"
    )
    line = (
        f"- presence pings answered within their {PING_TIMEOUT} s timeout: on "
        f"{answered_words(on)}, goal >= {PING_ANSWERED_SHARE * 100:g} %: {verdict}"
        + (
            " (" + "; ".join(f"{r.name}: {answered_words(r)}" for r in others) + ")"
            if others
            else ""
        )
        + "; completed pings p50 / p99: "
        + "; ".join(f"{r.name} {completed_words(r)}" for r in (on, *others))
    )
    why = []
    if not met:
        why.append(
            "presence pings, p99 of publish / first return / every return "
            "however late: "
            + "; ".join(f"{r.name} {_ping_parts(r)}" for r in (on, *others))
        )
        backlog = _little(on)
        if backlog:
            why.append(backlog)
    return Goal("presence pings answered", line, met, why)


def answered_words(result: VariantResult) -> str:
    """``98.5 % (1629 of 1653 ticks, 12 skipped)``: a skipped tick is a
    ping that failed."""
    share = result.ping_answered_share
    return (
        ("-" if share is None else f"{share:.1%}".replace("%", " %"))
        + f" ({len(result.answered_pings)} of {result.ping_ticks} ticks, "
        f"{result.pings_skipped} skipped)"
    )


def completed_words(result: VariantResult) -> str:
    """p50 / p99 of the pings every target answered in time; ``-`` for none."""
    p50 = result.answered_ping_percentile(50)
    p99 = result.answered_ping_percentile(99)
    if p50 is None or p99 is None:
        return "- (none answered)"
    return f"{p50:.2f} / {p99:.2f} s"


def _ping_parts(result: VariantResult) -> str:
    def p99(values: list[float | None]) -> str:
        known = [v for v in values if v is not None]
        return f"{report.percentile(known, 99):.2f}" if known else "-"

    pings = result.pings
    return (
        f"{p99([p.publish_s for p in pings])} / {p99([p.first_s for p in pings])} / "
        f"{p99([p.bus_s for p in pings])} s"
    )


def _little(on: VariantResult) -> str | None:
    """Little's law on the limiter-on master: points held / returns per
    second is how long a new return waits behind those in flight."""
    points = max((s.master_points for s in on.samples), default=0)
    rates = [s.returns_per_s for s in on.samples if s.returns_per_s > 0]
    if not points or not rates:
        return None
    rate = report.median(rates)
    return (
        f"limiter on held up to {points} points (returns awaited at once) "
        f"while returns arrived at a median {rate:.0f}/s: a return waited "
        f"about {points / rate:.0f} s behind those in flight (Little's law)"
    )


def _duration_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    def unfit(other: VariantResult) -> str | None:
        short = [r for r in (on, other) if r.took_fewer_jobs]
        if short:
            # a master that took fewer jobs ran a smaller storm: no ratio of it
            return "not the same storm: " + "; ".join(took_words(r) for r in short)
        if other.cut:
            # its duration is --max-wait, not its storm's: no ratio of it
            return f"{called(other.name)} was cut short by --max-wait"
        return None

    def seconds(result: VariantResult) -> str:
        at_least = "at least " if result.cut else ""
        return f"{at_least}{result.storm_s:.0f} s"

    line, met = _relative(
        "storm duration", on, others, lambda r: r.storm_s, seconds, STORM_RATIO, unfit
    )
    if on.cut:
        line += " (limiter on was cut short by --max-wait)"
        if met:
            # a lower bound within the goal says nothing of the whole storm
            met = None
            line += f", {NOT_MEASURED}"
    why = []
    if met is False:
        queued = max((s.queued for s in on.samples), default=0)
        for other in others:
            if other.storm_s and on.storm_s / other.storm_s > STORM_RATIO:
                why.append(
                    f"submitting the storm took {on.submit_s:.0f} s on vs "
                    f"{other.submit_s:.0f} s {other.name}; up to {queued} jobs "
                    f"waited in the limiter's queue; returns arrived at "
                    f"{_return_rate(on):.0f}/s on average on vs "
                    f"{_return_rate(other):.0f}/s {other.name}"
                )
    return Goal("storm duration", line, met, why)


def took_words(result: VariantResult) -> str:
    """``off took 39 of 100 jobs (61 submissions failed: Salt
    request timed out.)``: the jobs a variant's master never took."""
    words = f"{result.name} took {result.accepted} of {result.submitted} jobs"
    why = []
    if result.rejected:
        why.append(f"{result.rejected} refused by the limiter")
    if result.submit_errors:
        first = result.submit_errors[0].split(". ")[0].rstrip(".")
        why.append(f"{len(result.submit_errors)} submissions failed: {first}.")
    words += f" ({', '.join(why)})" if why else ""
    if result.unbooked_jobs:
        words += (
            f"; {result.unbooked_jobs} of the jobs whose submission failed ran "
            f"anyway ({result.unbooked_returns} returns on the bus under jids "
            "no submitter was given)"
        )
    return words


def _return_rate(result: VariantResult) -> float:
    return result.received_cache / result.storm_s if result.storm_s else 0.0


def cpu_per_return(result: VariantResult) -> float | None:
    """Master CPU milliseconds per return it handled (its event consumer and
    the benchmark's event forwarder apart); None without a return."""
    if not result.returns_handled:
        return None
    return 1000 * result.master_cpu_s / result.returns_handled


def _cpu_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    line, met = _relative(
        "master CPU per return",
        on,
        others,
        cpu_per_return,
        _shown(cpu_per_return, "{:.1f} ms"),
        CPU_RATIO,
        lambda r: f"{called(r.name)} was cut short by --max-wait" if r.cut else None,
    )
    if on.cut:
        line += " (limiter on was cut short by --max-wait)"
    why = (
        _grown(
            on,
            others,
            _cpu_difference,
            "the processes that spent the most more CPU per return on than",
            "{:+.2f} ms",
        )
        if met is False
        else []
    )
    return Goal("master CPU per return", line, met, why)


def outside_cpu_per_return(result: VariantResult) -> dict[str, float]:
    """CPU milliseconds per return handled beside the master's: the
    simulated fleet's, the storm driver's, and the whole box's (every
    process, the master's, PostgreSQL's and the kernel's included); a part
    not taken (a result written before it was) is left out."""
    handled = result.returns_handled
    if not handled:
        return {}
    parts = {
        FLEET_ROLE: result.fleet_cpu_s,
        DRIVER_ROLE: result.driver_cpu_s,
        BOX_ROLE: result.box_busy_s,
    }
    return {name: 1000 * s / handled for name, s in parts.items() if s > 0}


def cpu_per_return_by_role(result: VariantResult) -> dict[str, float]:
    """Master CPU milliseconds per return handled, per process role
    (:func:`benchmarks.proctree.role`), those beside the master (the event
    consumer, the event forwarder) among them."""
    handled = result.returns_handled
    if not handled:
        return {}
    return {
        name: 1000 * seconds / handled
        for name, seconds in result.master_cpu_by_role.items()
    }


def _cpu_difference(
    on: VariantResult, other: VariantResult, shown: int = 3
) -> list[tuple[str, float]]:
    """The master's roles that spent the most more CPU per return on than
    ``other``, the consumer's and the forwarder's left out as the
    master's CPU leaves them out."""
    return _largest(
        master_roles(cpu_per_return_by_role(on)),
        master_roles(cpu_per_return_by_role(other)),
        shown,
    )


def _grown(
    on: VariantResult,
    others: list[VariantResult],
    difference: Callable[[VariantResult, VariantResult], list[tuple[str, float]]],
    lead: str,
    form: str,
) -> list[str]:
    """A why line per other variant: ``lead <variant>: role +N, ...``, the
    roles ``difference`` finds using more with the limiter on."""
    return [
        f"{lead} {other.name}: "
        + ", ".join(f"{name} {form.format(amount)}" for name, amount in grown)
        for other in others
        if (grown := difference(on, other))
    ]


#: the role every MWorker counts under when two masters are compared
ALL_POOLS: Final = "MWorkers (every pool)"


def _pools_as_one(roles: dict[str, float]) -> dict[str, float]:
    """``roles`` with the MWorkers of every pool summed as :data:`ALL_POOLS`.

    Every variant's master has the same number of MWorkers, split into pools
    differently (the limiter's two default and two exempt against off's
    four default): compared pool by pool, the exempt pool would show as all
    extra and the smaller default pool's saving would not show at all."""
    merged: dict[str, float] = {}
    for name, amount in roles.items():
        key = ALL_POOLS if name.startswith(WORKER_ROLE_PREFIX) else name
        merged[key] = merged.get(key, 0.0) + amount
    return merged


def _largest(
    mine: dict[str, float], theirs: dict[str, float], shown: int
) -> list[tuple[str, float]]:
    """The ``shown`` roles with the most more of something in ``mine``, the
    MWorkers of every pool as one."""
    mine, theirs = _pools_as_one(mine), _pools_as_one(theirs)
    differences = [
        (name, mine.get(name, 0.0) - theirs.get(name, 0.0))
        for name in set(mine) | set(theirs)
    ]
    differences.sort(key=lambda item: (-item[1], item[0]))
    return [item for item in differences[:shown] if item[1] > 0]


def _pss_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    line, met = _relative(
        "master PSS peak",
        on,
        others,
        lambda r: r.peak_pss_mb,
        _shown(lambda r: r.peak_pss_mb, "{:.0f} MiB"),
        PSS_RATIO,
    )
    why = (
        _grown(
            on,
            others,
            _role_difference,
            "at each variant's PSS peak, the processes with the most more "
            "memory on than",
            "{:+.0f} MiB",
        )
        if met is False
        else []
    )
    return Goal("master PSS peak", line, met, why)


def _role_difference(
    on: VariantResult, other: VariantResult, shown: int = 3
) -> list[tuple[str, float]]:
    def at_peak(result: VariantResult) -> dict[str, float]:
        if not result.samples:
            return {}
        return max(result.samples, key=lambda s: s.master_pss_mb).pss_by_role

    return _largest(at_peak(on), at_peak(other), shown)


def _lost_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    reference = "".join(f" ({r.name}: {_lost_words(r)})" for r in others)
    if on.cut:
        return Goal(
            "lost returns",
            f"- lost returns: {NOT_MEASURED}, limiter on was cut short with "
            f"{on.missing_returns} returns missing{reference}",
            None,
        )
    lost = on.missing_returns
    goal = Goal(
        "lost returns",
        f"- lost returns with the limiter on: {lost}, goal 0: "
        + (_verdict(True) if lost == 0 else f"missed by {lost}")
        + reference,
        lost == 0,
    )
    if lost:
        goal.why.append(
            f"{on.expected_returns} returns expected from published jobs, "
            f"{on.received_cache} in the job cache, {on.received_bus} seen on "
            f"the bus; {_retry_words(on)}; "
            f"{on.outcomes['expired']} jobs expired unpublished"
        )
    return goal


def _lost_words(result: VariantResult) -> str:
    if result.cut:
        words = f"cut short, {result.missing_returns} missing"
    else:
        words = f"{result.missing_returns} lost"
    tried = (
        result.minion_return_retries,
        result.minion_returns_given_up,
        result.minion_return_errors,
        result.duplicate_returns,
    )
    return words + (f"; {_retry_words(result)}" if any(tried) else "")


def _retry_words(result: VariantResult) -> str:
    """What the minions' retries did: the fleet's counts and the bus's duplicates."""
    return (
        f"the minions retried {result.minion_return_retries} returns, gave up "
        f"{result.minion_returns_given_up} jobs and reported "
        f"{result.minion_return_errors} return errors; "
        f"{result.duplicate_returns} duplicate returns on the bus"
    )


def _capacity_goal(
    on: VariantResult, others: list[VariantResult], limits: RateLimiting
) -> Goal:
    cap = limits.max_minion_jobs
    reference = (
        " ("
        + ", ".join(f"{r.name}: at most {r.peak_minion_jobs}" for r in others)
        + ")"
        if others
        else ""
    )
    over = on.peak_minion_jobs - cap
    goal = Goal(
        "minion capacity",
        f"- no minion over its capacity with the limiter on: at most "
        f"{on.peak_minion_jobs} jobs in flight on one minion, goal <= {cap}: "
        + (_verdict(True) if over <= 0 else f"missed by {over}")
        + reference,
        over <= 0,
    )
    if over > 0:
        goal.why.append(
            f"the minions counted up to {on.peak_minion_jobs} jobs running or "
            f"waiting on one of them; the queue manager's ledger held at most "
            f"{on.max_minion_points} points for one minion"
        )
    return goal


def _consumer_goals(on: VariantResult, others: list[VariantResult]) -> list[Goal]:
    """The consumer's backlog bounded with the limiter on, how far it grew
    in the other variants; and no event lost by the consumer in any."""
    if on.consumer is None or not on.consumer.points:
        return [
            Goal(
                "event consumer backlog",
                f"- event consumer backlog bounded with the limiter on: "
                f"{NOT_MEASURED}, "
                + (
                    "the run had no consumer (--consumer-rate 0)"
                    if on.consumer is None
                    else "the consumer wrote no sample"
                ),
                None,
            )
        ]
    run = on.consumer
    bounded = bool(run.bounded())
    line = (
        f"- event consumer ({run.rate:g} events/s) backlog bounded with the "
        f"limiter on (peak <= {BOUND_S:g} s of its work, {run.bound:.0f} "
        f"events, and a trend over the storm's second half <= "
        f"{run.flat_trend:g} events/s): {_backlog_words(run)}: " + _verdict(bounded)
    )
    for other in others:
        if other.consumer is not None and other.consumer.points:
            line += f"; {called(other.name)}: {_backlog_words(other.consumer)}"
    goal = Goal("event consumer backlog", line, bounded)
    if not bounded:
        rate = run.event_rate()
        if rate is not None:
            goal.why.append(
                f"events reached the consumer at {rate:.0f}/s on average over "
                f"the limiter-on storm, against the {run.rate:g}/s it stores"
                + (
                    ": faster on average, so no publishing order keeps its "
                    "backlog bounded without making the storm last longer"
                    if rate > run.rate
                    else ""
                )
            )
        needed = run.storm_needed_s()
        if needed is not None and needed > on.storm_s:
            goal.why.append(
                f"to end with at most {run.bound:.0f} events waiting, the "
                f"limiter-on storm would have had to last at least {needed:.0f} s, "
                f"not {on.storm_s:.0f} s"
            )
    return [goal, _consumer_lost_goal(on, others)]


def _backlog_words(run: ConsumerRun) -> str:
    peak, final = run.peak, run.final
    if peak is None or final is None:
        return "no sample"
    trend = run.trend()
    return (
        f"peak {peak.backlog} events ({peak.backlog / run.rate:.0f} s of work) "
        f"at {peak.t:.0f} s, final {final.backlog} at {final.t:.0f} s, trend "
        + (f"{trend:+.1f} events/s" if trend is not None else "-")
        + f", consumer RSS peak {run.peak_rss_mb:.0f} MiB, "
        f"final {final.rss_mb:.0f} MiB"
    )


def _consumer_lost_goal(on: VariantResult, others: list[VariantResult]) -> Goal:
    runs = [(r.name, r.consumer) for r in (on, *others) if r.consumer]
    parts = []
    lost_any = False
    for name, run in runs:
        lost = run.unaccounted + run.missing_rows
        lost_any = lost_any or lost > 0
        last = run.final
        stored = last.stored if last else 0
        parts.append(
            f"{name}: received {last.received if last else 0} = stored {stored} "
            f"+ waiting {last.backlog if last else 0}"
            + (f" ({run.unaccounted} unaccounted)" if run.unaccounted else "")
            + f", {run.rows_stored} rows in its table"
            + (f" ({run.missing_rows} missing)" if run.missing_rows else "")
        )
    return Goal(
        "event consumer events",
        "- event consumer lost no event (at its last sample): "
        + "; ".join(parts)
        + ": "
        + _verdict(not lost_any),
        not lost_any,
    )


def goal_lines(found: list[Goal]) -> list[str]:
    """The goals section."""
    on_run = all(goal.name != ON_NOT_RUN for goal in found)
    return [
        "## Goals (limiter on vs each other variant, side by side in each run)"
        if on_run
        else "## Goals",
        "",
        *(goal.line for goal in found),
        "",
    ]


def why_lines(found: list[Goal]) -> list[str]:
    """For each goal missed: what the run's data says about why, then room
    for the analysis the data cannot give."""
    missed = [goal for goal in found if goal.met is False]
    if not missed:
        return []
    lines = ["## Why goals were missed", ""]
    for goal in missed:
        lines.append(f"- {goal.name}:")
        lines += [f"  - {fact}" for fact in goal.why] or [
            "  - the run's data says nothing more"
        ]
    lines += [
        "",
        "Analysis beyond these numbers: whoever ran the storm writes it, from "
        "the plots and the data file, into `<report>-analysis.md` beside this "
        "report, which a regeneration keeps and links at the end.",
        "",
    ]
    return lines
