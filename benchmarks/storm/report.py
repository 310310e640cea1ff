"""The storm report: Markdown sections, the raw data beside them, the plot.

:func:`write_report` writes ``<output_name>.md``, ``<output_name>.json`` and
``<output_name>-timeline.png`` to ``benchmarks/results/``;
:func:`report_lines` is the Markdown alone, section by section.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import report
from benchmarks.hostspeed import probe_cell, probe_words
from benchmarks.salt_trees import MASTER_MWORKERS
from benchmarks.storm.accounting import (
    PING_MAX_OUTSTANDING,
    PING_TARGETS,
    PING_TIMEOUT,
    SLEEP_LENGTHS,
    START_JITTER,
    STATE_DURATION,
    VariantResult,
    beside_master,
    whole,
    whole_runs,
)
from benchmarks.storm.consumer import BOUND_S, TREND_SHARE
from benchmarks.storm.decide import DecideResult
from benchmarks.storm.goals import (
    BOX_ROLE,
    DRIVER_ROLE,
    FLEET_ROLE,
    answered_words,
    called,
    completed_words,
    cpu_per_return,
    cpu_per_return_by_role,
    goal_lines,
    goals_over_runs,
    outside_cpu_per_return,
    possessive,
    took_words,
    why_lines,
)
from benchmarks.storm.options import (
    MINION_VARIANTS,
    PRIORITY_FUNCTIONS,
    StormOptions,
)
from benchmarks.storm.plot import Measure, consumer_plot, runs_plot, timeline_plot
from harness.ratelimit import RateLimiting, salt_slice_defaults

PSS_ROLES_SHOWN: Final = 6  # master processes per variant in the memory table


def write_report(
    results: list[VariantResult], decisions: list[DecideResult], options: StormOptions
) -> Path:
    """Write the report, its plots and its data under ``options.output_name``;
    return the report's path."""
    lines = report_lines(results, decisions, options)
    # one run of each variant: every run's lines in one panel would hide them
    first = [r for r in results if r.run == 1]
    plot = timeline_plot(first, options.output_name)
    lines += ["", f"![storm over time, run 1]({plot.name})"]
    if any(r.consumer and r.consumer.points for r in first):
        consumer = consumer_plot(first, options.output_name)
        lines += ["", f"![event consumer over time, run 1]({consumer.name})"]
    if max(r.run for r in results) > 1:
        runs = runs_plot(results, HEADLINE, options.output_name)
        lines += ["", f"![headline measures, every run]({runs.name})"]
    report.write_data(
        options.output_name,
        {
            "variants": results,
            "decisions": [d.summary() for d in decisions],
        },
    )
    return report.write(options.output_name, "\n".join(lines))


def report_lines(
    results: list[VariantResult], decisions: list[DecideResult], options: StormOptions
) -> list[Any]:
    """The report's Markdown, section by section (no plot)."""
    limits = (
        next((r.limiter for r in results if r.limiter), None) or options.rate_limiting()
    )
    found = goals_over_runs(results, limits, decisions)
    return [
        *_intro(limits, options),
        *_run_starts(results),
        *goal_lines(found),
        *why_lines(found),
        *_headline(results),
        *_end_counts(results),
        *_over_time(results),
        *_ping_section(results),
        *_consumer_section(results),
        *_cpu_section(results),
        *_memory_section(results),
        *_decision_section(decisions, options.minions),
    ]


def _intro(limits: RateLimiting, options: StormOptions) -> list[Any]:
    masters = {options.master_of(v) for v in options.variants}
    return [
        "# Storm benchmark: " + " vs ".join(map(called, options.variants)),
        "",
        report.environment(),
        f"{options.minions} simulated minions (each runs at most "
        f"{options.minion_jobs} jobs at once and queues the rest, as a 3008.3 "
        "minion at its `process_count_max`), a storm of "
        f"{options.jobs} jobs "
        "to `*`: `test.sleep` of "
        f"{'/'.join(map(str, SLEEP_LENGTHS))} s and `state.apply` of "
        f"{STATE_DURATION[0]:g}-{STATE_DURATION[1]:g} s, alternating, each after a "
        f"start-up delay of {START_JITTER[0]:g}-{START_JITTER[1]:g} s per minion "
        "(a real minion forks a process per job), submitted "
        f"with `LocalClient.run_job` by {options.submitters} client threads as fast as "
        "they can. "
        + (_limiter_intro(limits) if "on" in masters else "")
        + (f"{_master_name('off', options)}: one pool. " if "off" in masters else "")
        + (
            f"{_master_name('pools', options)}: the series without the limiter, "
            "the limiter-on master's worker pools, function-routed, and no "
            "`rate_limiting`. " + ("" if "on" in masters else _pool_intro(limits))
            if "pools" in masters
            else ""
        )
        + (
            "Tuned (what 3008.3 offers without the series): a master running "
            "pristine 3008.3 with `master_async_mworker: True` and a worker pool "
            "of its own for `publish` requests (`worker_pools` by command), "
            "the default pool taking the rest. "
            if "tuned" in masters
            else ""
        )
        + _prio_intro(options.variants)
        + f"Every variant's master has {MASTER_MWORKERS} MWorkers in all. "
        + _consumer_intro(options)
        + f"Presence ping: `test.ping` to {PING_TARGETS} minions every second "
        f"({PING_TIMEOUT} s timeout), {PING_TARGETS} other minions each time "
        "(a fixed shuffled order through the fleet). "
        f"Reproduce: `{options.reproduce_command()}`.",
        "",
    ]


def _master_name(master: str, options: StormOptions) -> str:
    """How the intro names ``master`` (``off``, ``pools``): by its variant
    when that is run (``Limiter off``), else as the master of the variants
    that run it (``Limiter off's master (prio's)``)."""
    if master in options.variants:
        return _capitalised(called(master))
    users = [v for v in options.variants if options.master_of(v) == master]
    return (
        f"{_capitalised(possessive(called(master)))} master "
        f"({', '.join(possessive(v) for v in users)})"
    )


def _capitalised(words: str) -> str:
    """``words`` with a capital first letter, the rest as it is
    (``limiter off's`` -> ``Limiter off's``; ``str.capitalize`` would lower
    the rest)."""
    return words[:1].upper() + words[1:]


def _limiter_intro(limits: RateLimiting) -> str:
    """The limiter-on master's settings."""
    defaults = RateLimiting()
    changed = [
        f"{name} {getattr(limits, name)}"
        for name in ("max_master_jobs", "max_minion_jobs", "max_queue")
        if getattr(limits, name) != getattr(defaults, name)
    ]
    return (
        "Limiter on: `rate_limiting` "
        + (f"defaults except {', '.join(changed)} " if changed else "defaults ")
        + f"(criteria `{limits.criteria}`, "
        f"max_master_jobs {limits.max_master_jobs}, max_minion_jobs "
        f"{limits.max_minion_jobs}, max_queue {limits.max_queue}). "
        + _pool_intro(limits)
        + (
            "A job is published in slices of at least "
            f"{limits.slice_min_targets or salt_slice_defaults()['min_targets']} "
            "minions under its one jid, each as returns free the budget: "
            f"{limits.describe_budget()}. "
            if limits.slices
            else ""
        )
    )


def _pool_intro(limits: RateLimiting) -> str:
    """The exempt functions' pool on the limiter-on and pools masters."""
    if not limits.exempt_pool_workers:
        return "No worker pool of its own for the exempt functions. "
    return (
        f"The exempt functions ({', '.join(limits.exempt_functions())}) have a "
        f"worker pool of their own with {limits.exempt_pool_workers} MWorker(s), "
        f"beside the {MASTER_MWORKERS - limits.exempt_pool_workers} of the "
        "default pool (`worker_pools:exempt:functions`). "
    )


def _prio_intro(variants: tuple[str, ...]) -> str:
    """What the variants with minions that send presence returns first
    run, if any is run."""
    masters = [
        f"{v.name} on {possessive(called(v.master))} master"
        for v in MINION_VARIANTS
        if v.name in variants
    ]
    if not masters:
        return ""
    return (
        "The minion-side alternative: minions that send the returns of "
        f"{' and '.join(f'`{fun}`' for fun in PRIORITY_FUNCTIONS)} before "
        "the returns waiting on their request channel "
        "(`return_priority_functions`, the series' minion option), "
        + " and ".join(masters)
        + ". "
    )


#: a table column: its header and its cell for one variant
Column = tuple[str, Callable[[VariantResult], Any]]

#: jobs and returns at the end
END_COUNTS: Final[tuple[Column, ...]] = (
    ("variant", lambda r: r.label),
    ("jobs submitted", lambda r: r.submitted),
    ("accepted", lambda r: r.accepted),
    ("rejected", lambda r: r.rejected),
    ("published", lambda r: r.outcomes["published"] if r.limiter else r.accepted),
    ("published excluding", lambda r: r.outcomes["published_excluding"]),
    ("run though their submission failed", lambda r: _unbooked_cell(r)),
    ("expired", lambda r: r.outcomes["expired"]),
    ("jobs with every return", lambda r: r.completed_jobs),
    ("returns expected", lambda r: r.expected_returns),
    ("targets no slice reached yet", lambda r: r.targets_unpublished),
    ("received (job cache)", lambda r: r.received_cache),
    ("received (bus)", lambda r: r.received_bus),
    ("lost", lambda r: _lost_cell(r)),
    ("duplicate returns (bus)", lambda r: r.duplicate_returns),
    ("minion return retries", lambda r: r.minion_return_retries),
    ("minion jobs given up", lambda r: r.minion_returns_given_up),
    ("minion return errors", lambda r: r.minion_return_errors),
    ("max jobs on one minion (minion's count)", lambda r: r.peak_minion_jobs),
    (
        "max points on one minion (ledger)",
        lambda r: r.max_minion_points if r.limiter else "-",
    ),
)

#: what the sampler saw over the storm, the CPU it took and the box probe around it
OVER_TIME: Final[tuple[Column, ...]] = (
    ("variant", lambda r: r.label),
    ("storm s (ended by)", lambda r: f"{r.storm_s:.0f} ({r.ended_by})"),
    ("submit s", lambda r: f"{r.submit_s:.1f}"),
    ("master PSS peak MiB", lambda r: f"{r.peak_pss_mb:.0f}"),
    (
        "PSS at end MiB",
        lambda r: f"{r.samples[-1].master_pss_mb:.0f}" if r.samples else "-",
    ),
    ("bus delay p50 / max s", lambda r: _delay_summary(r)),
    ("max queued", lambda r: max((s.queued for s in r.samples), default=0)),
    ("max in flight", lambda r: max((s.in_flight for s in r.samples), default=0)),
    (
        "max points held",
        lambda r: (
            max((s.master_points for s in r.samples), default=0) if r.limiter else "-"
        ),
    ),
    ("budget min / median / max", lambda r: _budget_cell(r)),
    ("limiter wait p50 / max s (cuts)", lambda r: _limiter_wait_cell(r)),
    (
        "returns/s peak",
        lambda r: f"{max((s.returns_per_s for s in r.samples), default=0):.0f}",
    ),
    ("master CPU s", lambda r: f"{r.master_cpu_s:.0f}"),
    ("driver CPU s", lambda r: f"{r.driver_cpu_s:.0f}"),
    ("fleet CPU s", lambda r: f"{r.fleet_cpu_s:.0f}" if r.fleet_cpu_s else "-"),
    ("box busy", lambda r: _busy_cell(r)),
    (
        "box probe ms before / after",
        lambda r: probe_cell(r.cpu_probe_before_ms, r.cpu_probe_after_ms),
    ),
)


def _busy_cell(result: VariantResult) -> str:
    """The share of the box's CPU time in use over the storm; ``-`` when
    not taken."""
    if not result.box_capacity_s:
        return "-"
    return f"{result.box_busy_s / result.box_capacity_s:.0%}"


#: the presence pings, split into publish, first and last return
PINGS: Final[tuple[Column, ...]] = (
    ("variant", lambda r: r.label),
    ("answered in time", lambda r: answered_words(r)),
    ("completed p50 / p99 s", lambda r: completed_words(r)),
    ("publish p50 / p99", lambda r: _ping_cell([p.publish_s for p in r.pings])),
    ("first return p50 / p99", lambda r: _ping_cell([p.first_s for p in r.pings])),
    (
        "every return, however late, p50 / p99",
        lambda r: _ping_cell([p.bus_s for p in r.pings]),
    ),
    ("incomplete", lambda r: r.pings_incomplete),
)


def _run_starts(results: list[VariantResult]) -> list[Any]:
    """When each run started: a resumed storm's runs come from more than one
    sitting (``--resume``), and the machine's speed moves between them."""
    starts: dict[int, str] = {}
    for result in results:
        if result.started:
            starts.setdefault(result.run, result.started)
    if not starts:
        return []
    runs = ", ".join(f"run {run} {at}" for run, at in sorted(starts.items()))
    return [f"Runs started (UTC): {runs}.", ""]


def _table(results: list[VariantResult], columns: Sequence[Column]) -> str:
    """One row per variant."""
    return report.table(
        [header for header, _ in columns],
        [tuple(cell(r) for _, cell in columns) for r in results],
    )


#: the headline measures: a name and its value in one run (None: not measured)
HEADLINE: Final[tuple[Measure, ...]] = (
    (
        "pings answered in time %",
        lambda r: (
            None if r.ping_answered_share is None else 100 * r.ping_answered_share
        ),
    ),
    ("completed ping p50 s", lambda r: r.answered_ping_percentile(50)),
    ("completed ping p99 s", lambda r: r.answered_ping_percentile(99)),
    ("storm s", lambda r: r.storm_s),
    ("master CPU ms per return", cpu_per_return),
    ("master PSS peak MiB", lambda r: r.peak_pss_mb),
    ("lost returns", lambda r: r.missing_returns if not r.cut else None),
)


def _headline(results: list[VariantResult]) -> list[Any]:
    """Per variant, the median of each headline measure over the runs and
    its range; runs cut by ``--max-wait`` are counted apart."""
    names = list(dict.fromkeys(r.name for r in results))
    rows = []
    for name in names:
        runs = [r for r in results if r.name == name]
        cut = sum(1 for r in runs if r.cut)
        cells: list[Any] = [name, f"{len(runs)}" + (f" ({cut} cut)" if cut else "")]
        for _, value in HEADLINE:
            cells.append(_median_cell([v for _, v in whole_runs(runs, name, value)]))
        rows.append(cells)
    return [
        "## Headline: medians over the runs",
        "",
        report.table(["variant", "runs", *(h for h, _ in HEADLINE)], rows),
        "",
        "Each cell is the median over the variant's runs, its lowest and highest "
        "value in brackets. A run cut short by `--max-wait` is left out of every "
        "median (its storm time is the cap, not what the storm needed); "
        "completed pings are those every target answered within the timeout, "
        "so their times never include the timeout; master CPU per return "
        "divides the master's CPU seconds over the storm (its event consumer's "
        "and the benchmark's event forwarder's apart; master PSS leaves them "
        "out too) by the storm's returns it handled: those in its job cache, "
        "and those of jobs run though their submission failed (see End "
        "counts).",
        "",
    ]


def _median_cell(values: list[float | None], digits: int = 1) -> str:
    """``12.3 (11.0-14.1)``; ``-`` without a measured value."""
    measured = [v for v in values if v is not None]
    if not measured:
        return "-"
    middle = report.median(measured)
    if len(measured) == 1:
        return f"{middle:.{digits}f}"
    low, high = min(measured), max(measured)
    return f"{middle:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def _end_counts(results: list[VariantResult]) -> list[Any]:
    """Jobs and returns at the end, per variant."""
    return _section(
        "End counts",
        _table(results, END_COUNTS),
        "Lost returns are returns expected from published jobs (targets "
        "minus the minions a job was published without; of a job still "
        "going out in slices at the end, the minions of its slices so far) "
        "that never reached "
        "the master's job cache; when a variant was cut short by "
        "`--max-wait`, missing returns may still have been on their way and "
        "are not called lost. The minions try a return as a 3008.3 minion "
        "does (`return_retry_timer`..`return_retry_timer_max` s per try, "
        "`return_retry_tries` tries): a retry follows a try that timed out or "
        "failed; a duplicate is a return the master's bus showed again for "
        "the same job and minion (a timed-out try that still arrived, then "
        "its retry); a job given up logged Salt's \"The minion failed to "
        'return the job information" (its return may still have arrived); a '
        "return error is a return whose every try failed, lost unless one "
        "of its timed-out tries reached the master. Points are the queue "
        "manager's ledger: one per published job and minion until the "
        "minion's return arrives. A job run though its submission failed is "
        "one whose returns reached the bus under a jid no submitter was "
        "given: the master took the request after its client had given up, "
        "published it, and the job ran with nobody waiting for it (its "
        "returns count from the bus until the variant ended, so at least).",
        *_short_in_cache(results),
        *_not_taken(results),
    )


def _not_taken(results: list[VariantResult]) -> list[str]:
    """A paragraph of a line per variant whose master did not take every job
    submitted: its storm was smaller than the others', and says why."""
    lines = [
        f"- {result.label}: {took_words(result)}"
        for result in results
        if result.took_fewer_jobs
    ]
    return ["\n".join(lines)] if lines else []


#: jobs named per variant when the job cache holds fewer returns than expected
SHORT_JOBS_SHOWN: Final = 5


def _section(title: str, *paragraphs: str) -> list[Any]:
    """A report section: its heading, then each paragraph (or table) followed
    by a blank line."""
    lines: list[Any] = [f"## {title}", ""]
    for paragraph in paragraphs:
        lines += [paragraph, ""]
    return lines


def _short_in_cache(results: list[VariantResult]) -> list[str]:
    """A paragraph of a line per variant whose job cache holds fewer returns
    of a job than expected, naming the jobs (at most SHORT_JOBS_SHOWN), so
    that a loss can be looked up in the master's log by its jid."""
    lines = []
    for result in results:
        if not result.short_in_cache:
            continue
        shown = sorted(result.short_in_cache.items())[:SHORT_JOBS_SHOWN]
        jobs = "; ".join(
            f"{jid}: {held} of {expected} in the job cache, {bus} on the bus"
            for jid, (held, expected, bus) in shown
        )
        more = len(result.short_in_cache) - len(shown)
        tail = f"; and {more} more" if more else ""
        lines.append(
            f"- {result.label}: {len(result.short_in_cache)} job(s) short in "
            f"the job cache: {jobs}{tail}"
        )
    return ["\n".join(lines)] if lines else []


def _over_time(results: list[VariantResult]) -> list[Any]:
    """What the sampler saw over the storm, per variant."""
    return _section(
        "Over time",
        _table(results, OVER_TIME),
        "Master CPU: the master's processes, the event consumer's engine "
        "and the benchmark's event forwarder apart (see Master CPU by "
        "process). Driver CPU: the storm's own "
        "process (the presence pinger, the submitters and the accounting of "
        "the bus), not in the master's; it shares the box's cores with the "
        "master and the fleet. "
        + probe_words()
        + " Limiter wait: what each budget decision of "
        "`rate_limiting:slices` saw, the wait of the fastest tenth of the "
        "last seconds' returns past their command's run time (the budget is "
        "cut above `target_delay`), and the cuts over the storm.",
    )


def _ping_section(results: list[VariantResult]) -> list[Any]:
    """The presence pings, split into publish, first and last return."""
    return _section(
        "Presence pings",
        f"A ping tick every second: answered in time when all {PING_TARGETS} "
        f"minions' returns reached the master's bus within the {PING_TIMEOUT} s "
        "timeout (each return's `_stamp`, read after the run from the events "
        "the harness's listener received), out of every tick (a skipped tick "
        "counts as a failure); completed: the time of the answered pings only "
        "(a ping that timed out has no time of its own). The pinger only "
        "publishes (`LocalClient.run_job`): a client waiting for returns "
        "decodes every event of the bus while it waits, so waiting ones would "
        "take more of the box beside the master whose pings go unanswered. "
        "Seconds from the start of `run_job` until the master answered the "
        "publish with the jid, until the first return, and until the last "
        "target's return reached the bus however late (the storm waits for "
        "the last ping's timeout before it reads the answers; pings whose "
        "targets had not all returned by then are left out of that one).",
        _table(results, PINGS),
        "A presence ping is incomplete when fewer "
        f"than {PING_TARGETS} minions' returns reached the bus within its "
        "timeout; a ping tick is skipped when the master has not yet taken "
        f"the publications of the {PING_MAX_OUTSTANDING} pings before it.",
    )


def _cpu_section(results: list[VariantResult]) -> list[Any]:
    """Master CPU per return and process role, per variant: where one
    variant spends more than another."""
    names = list(dict.fromkeys(r.name for r in results))
    per_run = {
        name: [cpu_per_return_by_role(r) for r in whole(results, name)]
        for name in names
    }
    roles = {role for shares in per_run.values() for share in shares for role in share}
    if not roles:
        return []

    def median(name: str, role: str) -> float:
        values = [share.get(role, 0.0) for share in per_run[name]]
        return report.median(values) if values else 0.0

    first = names[0]
    # the master's roles, most CPU first, then the consumer's and the
    # forwarder's apart
    order = sorted(
        roles, key=lambda role: (beside_master(role), -median(first, role), role)
    )
    rows = [
        (
            role + (" (not in master CPU)" if beside_master(role) else ""),
            *(_role_cell(per_run[name], role) for name in names),
        )
        for role in order
    ]
    outside = {
        name: [outside_cpu_per_return(r) for r in whole(results, name)]
        for name in names
    }
    rows += [
        (
            part if part == BOX_ROLE else f"{part} (not in master CPU)",
            *(_role_cell(outside[name], part) for name in names),
        )
        for part in (FLEET_ROLE, DRIVER_ROLE, BOX_ROLE)
        if any(part in share for shares in outside.values() for share in shares)
    ]
    return _section(
        "Master CPU by process",
        "CPU milliseconds (user + system) each role of the master's processes "
        "spent over the storm per return the master handled (the MWorkers of "
        "one pool are one role), per variant the median over its runs not cut "
        "short, their range in brackets. The event consumer's engine stands "
        "for SUSE Manager beside the master, and the event forwarder "
        "(`saltfleet_events`) is the benchmark's own instrument: their CPU is "
        "shown, not counted in the master's. Below them, where taken, over "
        "the same window (the storm and its quiet end): the simulated "
        "fleet's processes (on this box they share the master's cores; in a "
        "real fleet every minion has its own, and a job published in slices "
        "is that many publications every minion receives), the storm's own "
        "process, and the whole box's busy time (user, system and "
        "interrupts of every process, the master's included, and the "
        "kernel).",
        report.table(["process", *(f"{name} ms per return" for name in names)], rows),
    )


def _role_cell(shares: list[dict[str, float]], role: str) -> str:
    """A role's median over the runs; ``-`` where the variant has no such
    process (the queue manager without the limiter)."""
    if not any(role in share for share in shares):
        return "-"
    return _median_cell([share.get(role, 0.0) for share in shares], digits=2)


def _memory_section(results: list[VariantResult]) -> list[Any]:
    """Master PSS per process role: which grew."""
    return [
        "## Master memory by process",
        "",
        "PSS (proportional set size: a page shared copy-on-write is divided "
        "among the processes that map it, so the sum is what the master "
        "costs the machine) of the master's processes in MiB, summed per "
        "role (the MWorkers of one pool are one role), at the first sample "
        f"and at the end, the {PSS_ROLES_SHOWN} that grew most per variant. "
        "The event consumer's engine process is not counted here nor in the "
        "master's PSS: it "
        "stands for SUSE Manager beside the master (its RSS is in the "
        "consumer's table); nor is the event forwarder (`saltfleet_events`), "
        "the engine through which the benchmark watches the master's bus.",
        "",
        report.table(
            ["variant", "process", "first MiB", "end MiB", "growth MiB"],
            [row for r in results for row in _pss_growth_rows(r)],
        ),
        "",
    ]


def _decision_section(decisions: list[DecideResult], minions: int) -> list[Any]:
    """The criteria module micro-benchmark."""
    return [
        "## One decision of the criteria module",
        "",
        f"`capacity.decide(job, ledger)` for a job to {minions} minions, loaded "
        "through Salt's loader, with `check_decision` as the queue manager "
        "calls it.",
        "",
        report.table(
            ["ledger", "decision", "p50 us", "p99 us", "calls"],
            [
                (
                    d.case,
                    d.decision,
                    f"{report.percentile(d.samples_us, 50):.1f}",
                    f"{report.percentile(d.samples_us, 99):.1f}",
                    len(d.samples_us),
                )
                for d in decisions
            ],
        ),
        "",
    ]


def _consumer_intro(options: StormOptions) -> str:
    if not options.consumer_rate:
        return "No event consumer. "
    return (
        "Each master has an event consumer, as SUSE Manager reads the bus: an "
        "engine that takes every event off the master's bus into an "
        "unbounded queue in its memory and stores at most "
        f"{options.consumer_rate:g} events/s in PostgreSQL (`consumer_event`), "
        "sampling its backlog and RSS once a second. "
    )


#: the consumer, per variant
CONSUMER: Final[tuple[Column, ...]] = (
    ("variant", lambda r: r.label),
    ("events/s in (storm average)", lambda r: _consumer_rate_in(r)),
    ("stores events/s", lambda r: f"{r.consumer.rate:g}" if r.consumer else "-"),
    ("backlog peak (at s)", lambda r: _consumer_peak(r)),
    ("backlog final", lambda r: _consumer_final(r, "backlog")),
    ("trend, 2nd half, events/s", lambda r: _consumer_trend(r)),
    ("RSS peak MiB", lambda r: f"{r.consumer.peak_rss_mb:.0f}" if r.consumer else "-"),
    ("RSS final MiB", lambda r: _consumer_final(r, "rss_mb")),
    ("received", lambda r: _consumer_final(r, "received")),
    ("stored", lambda r: _consumer_final(r, "stored")),
    ("rows in table", lambda r: r.consumer.rows_stored if r.consumer else "-"),
    ("failed writes", lambda r: _consumer_final(r, "write_errors")),
)


def _consumer_section(results: list[VariantResult]) -> list[Any]:
    """The event consumer's backlog and memory, per variant."""
    if not any(r.consumer for r in results):
        return []
    return _section(
        "Event consumer",
        "The consumer's own samples: events received off the bus, stored in "
        "PostgreSQL, and waiting in its memory (the backlog), over the storm "
        "(final: its last sample, taken when the storm ended). Its backlog is "
        f"bounded when it never exceeds {BOUND_S:g} s of the consumer's work "
        "and its least-squares trend over the storm's second half is at most "
        f"{TREND_SHARE:.0%} of its rate. Rows in table: `consumer_event` "
        "counted after the last sample, at least its stored.",
        _table(results, CONSUMER),
    )


def _consumer_peak(result: VariantResult) -> str:
    peak = result.consumer.peak if result.consumer else None
    return f"{peak.backlog} ({peak.t:.0f})" if peak else "-"


def _consumer_final(result: VariantResult, attribute: str) -> str:
    final = result.consumer.final if result.consumer else None
    if final is None:
        return "-"
    value = getattr(final, attribute)
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def _consumer_trend(result: VariantResult) -> str:
    trend = result.consumer.trend() if result.consumer else None
    return f"{trend:+.1f}" if trend is not None else "-"


def _consumer_rate_in(result: VariantResult) -> str:
    rate = result.consumer.event_rate() if result.consumer else None
    return f"{rate:.0f}" if rate is not None else "-"


def _pss_growth_rows(result: VariantResult) -> list[tuple[Any, ...]]:
    if not result.samples:
        return []
    first, last = result.samples[0].pss_by_role, result.samples[-1].pss_by_role
    growth = sorted(
        ((name, first.get(name, 0.0), mib) for name, mib in last.items()),
        key=lambda row: row[1] - row[2],
    )
    return [
        (result.label, name, f"{start:.0f}", f"{end:.0f}", f"{end - start:+.0f}")
        for name, start, end in growth[:PSS_ROLES_SHOWN]
    ]


def _ping_cell(seconds: list[float | None]) -> str:
    known = [value for value in seconds if value is not None]
    if not known:
        return "-"
    return (
        f"{report.percentile(known, 50):.2f} / {report.percentile(known, 99):.2f}"
        + (f" ({len(seconds) - len(known)} never)" if len(known) < len(seconds) else "")
    )


def _unbooked_cell(result: VariantResult) -> str:
    if not result.unbooked_jobs:
        return "0"
    return f"{result.unbooked_jobs} ({result.unbooked_returns} returns)"


def _lost_cell(result: VariantResult) -> str:
    if result.cut:
        return f"n/a: cut, {result.missing_returns} missing"
    return str(result.missing_returns)


def _median_max(values: Iterable[float | None]) -> str | None:
    """``0.52 / 3.1``: the median and the largest of the sampled values
    that were measured; None when none was."""
    measured = [value for value in values if value is not None]
    if not measured:
        return None
    return f"{report.median(measured):.2f} / {max(measured):.1f}"


def _delay_summary(result: VariantResult) -> str:
    return _median_max(s.bus_delay_s for s in result.samples) or "-"


def _limiter_wait_cell(result: VariantResult) -> str:
    """The wait the limiter's budget decisions saw over the storm and how
    often it cut the budget, ``-`` without a delay-sized budget (or in data
    sampled before the storm recorded it)."""
    waits = _median_max(s.limiter_delay_s for s in result.samples)
    if not result.limiter or waits is None:
        return "-"
    return f"{waits} ({max(s.cuts for s in result.samples)})"


def _budget_cell(result: VariantResult) -> str:
    """The limiter's budget over the storm (the points it let be in flight),
    ``-`` without the limiter."""
    budgets = sorted(s.budget for s in result.samples if s.budget > 0)
    if not result.limiter or not budgets:
        return "-"
    return f"{budgets[0]} / {report.median(budgets):.0f} / {budgets[-1]}"
