"""How the storm benchmark counts jobs and returns from the bus events it sees.

The report's "lost returns", "jobs with every return" and "in flight" come
from this accounting, so it is tested with made-up events here.
"""

from __future__ import annotations

import datetime
import pickle

from benchmarks.proctree import role
from benchmarks.storm import (
    PING_TARGETS,
    DecideResult,
    JobBook,
    JobTrack,
    Ping,
    Sample,
    StormSetup,
    VariantResult,
    job_cache_returns,
    ping_order,
    ping_targets,
    report_lines,
    reproduce_command,
    storm_jobs,
)
from harness.events import Event
from harness.ratelimit import RateLimiting


def _ret(jid: str, minion: str, at: float = 100.0, age: float = 0.5) -> Event:
    stamp = datetime.datetime.fromtimestamp(at - age, datetime.UTC)
    return Event(
        f"salt/job/{jid}/ret/{minion}", {"_stamp": stamp.isoformat()}, received=at
    )


def _outcome(jid: str, outcome: str, excluded: list[str] = ()) -> Event:
    return Event(
        f"salt/ratelimit/job/{jid}/{outcome}",
        {"jid": jid, "excluded": list(excluded)},
        received=50.0,
    )


def test_without_the_limiter_a_job_is_in_flight_until_every_target_returned():
    book = JobBook()
    book.add(JobTrack("1", "test.sleep", targets=2, accepted=10.0))
    assert book.in_flight() == 1
    returns, ages = book.feed([_ret("1", "a"), _ret("1", "a"), _ret("other", "a")])
    assert returns == 1  # the duplicate and the unrelated job do not count
    assert ages == [0.5, 0.5, 0.5]  # every return on the bus shows the delay
    assert book.in_flight() == 1
    book.feed([_ret("1", "b", at=120.0)])
    assert book.in_flight() == 0
    assert book.jobs["1"].completed == 120.0
    assert (book.expected_total(), book.received_total()) == (2, 2)


def test_with_the_limiter_a_queued_job_expects_nothing_until_published():
    book = JobBook()
    book.limited = True
    book.add(JobTrack("1", "state.apply", targets=3, accepted=10.0))
    book.add(JobTrack("2", "state.apply", targets=3, accepted=10.0))
    assert book.in_flight() == 0 and book.expected_total() == 0
    book.feed(
        [
            _outcome("1", "queued"),
            _outcome("1", "published_excluding", excluded=["c"]),
            _outcome("2", "expired"),
        ]
    )
    assert book.in_flight() == 1
    assert book.expected_total() == 2  # the excluded minion owes no return
    book.feed([_ret("1", "a"), _ret("1", "b")])
    assert book.in_flight() == 0
    assert book.jobs["2"].outcome == "expired" and book.jobs["2"].expected == 0


def test_an_outcome_seen_before_the_submitter_recorded_the_job_is_kept():
    book = JobBook()
    book.limited = True
    book.feed([_outcome("7", "published")])
    book.add(JobTrack("7", "test.sleep", targets=1, accepted=10.0))
    assert book.jobs["7"].outcome == "published"
    assert book.in_flight() == 1


def test_a_job_published_unchecked_is_in_flight():
    # the criteria module failed on it and the master published it anyway
    book = JobBook()
    book.limited = True
    book.add(JobTrack("8", "test.sleep", targets=2, accepted=10.0))
    book.feed([_outcome("8", "published_unchecked")])
    assert book.jobs["8"].published is not None
    assert book.in_flight() == 1


def test_job_cache_returns_counts_return_files_per_jid(tmp_path):
    for jid, minions in (("1", ["a", "b"]), ("2", ["a"]), ("3", ["a"])):
        job_dir = tmp_path / "jobs" / jid[:1] / f"hash{jid}"
        job_dir.mkdir(parents=True)
        (job_dir / "jid").write_text(jid)
        for minion in minions:
            (job_dir / minion).mkdir()
            (job_dir / minion / "return.p").write_bytes(pickle.dumps(True))
        (job_dir / "nobody").mkdir()  # a minion dir without a return
    assert job_cache_returns(tmp_path, {"1", "2"}) == {"1": 2, "2": 1}


def test_the_storm_mixes_sleeps_and_state_runs_reproducibly():
    jobs = storm_jobs(200)
    assert jobs == storm_jobs(200)
    assert sum(1 for fun, _ in jobs if fun == "state.apply") == 100
    assert all(1 <= arg[0] <= 5 for fun, arg in jobs if fun == "test.sleep")


def test_presence_pings_go_to_other_minions_each_tick_through_the_whole_fleet():
    ids = [f"evil-{i:04d}" for i in range(1, 101)]
    order = ping_order(ids)
    assert sorted(order) == ids and order != ids  # shuffled, nobody left out
    assert ping_order(ids) == order  # the same order in both variants
    ticks = [ping_targets(order, tick) for tick in range(len(ids) // PING_TARGETS)]
    assert all(len(targets) == PING_TARGETS for targets in ticks)
    assert ticks[0] != ticks[1]
    pinged = [mid for targets in ticks for mid in targets]
    assert sorted(pinged) == ids  # one full turn pings every minion once
    assert ping_targets(order, len(ticks)) == ticks[0]  # and then starts over


def test_a_small_fleet_is_pinged_whole_and_an_empty_one_not_at_all():
    assert sorted(ping_targets(["b", "a", "c"], 5)) == ["a", "b", "c"]
    assert ping_targets([], 0) == []


def test_missing_returns_are_called_lost_only_when_the_storm_ran_to_its_end():
    done = VariantResult("on", None, expected_returns=10, received_cache=8)
    done.ended_by = "all expected returns arrived"
    assert not done.cut and done.missing_returns == 2
    cut = VariantResult("on", None, expected_returns=10, received_cache=8)
    cut.ended_by = "max wait of 600s reached"
    assert cut.cut and cut.missing_returns == 2
    from benchmarks.storm import _lost_cell

    assert _lost_cell(done) == "2"
    assert _lost_cell(cut) == "n/a: cut, 2 missing"


def test_reproduce_names_only_the_options_that_differ_from_the_defaults() -> None:
    defaults = {
        "minions": 1000,
        "jobs": 200,
        "processes": 2,
        "submitters": 4,
        "max_wait": 1800,
        "decide_calls": 20000,
        "variants": ("on", "off"),
        "max_master_jobs": 2000,
        "exempt_pool": 1,
    }
    assert reproduce_command(**defaults) == "nox -s bench -- storm"
    changed = dict(
        defaults, minions=200, max_wait=90.5, variants=("on",), exempt_pool=0
    )
    assert reproduce_command(**changed) == (
        "nox -s bench -- storm --minions 200 --max-wait 90.5 --variants on "
        "--exempt-pool 0"
    )


def test_master_processes_are_told_apart_by_the_name_salt_gives_them() -> None:
    base = ["/venv/bin/python", "/venv/bin/salt-master", "-c", "/etc/salt"]
    assert role([*base, "-l", "warning"]) == "main"
    assert role([*base, "-l", "warning", "RequestServer", "MWorker-default-3"]) == (
        "MWorker default"
    )
    assert role([*base, "-l", "warning", "RateLimitQueueManager"]) == (
        "RateLimitQueueManager"
    )
    assert role(["/venv/bin/python", "something-else"]) == "main"


def _sample(t: float, rss: dict[str, float]) -> Sample:
    return Sample(
        t=t,
        master_rss_mb=sum(rss.values()),
        bus_delay_s=0.1,
        queued=0,
        in_flight=1,
        returns_per_s=100.0,
        minion_returns_per_s=100.0,
        rss_by_role=rss,
    )


def test_the_report_gives_each_goal_its_verdict_and_names_what_grew() -> None:
    on = VariantResult("on", RateLimiting(exempt_pool_workers=1), submitted=2)
    on.ended_by = "all expected returns arrived"
    on.expected_returns = on.received_cache = 20
    on.peak_minion_jobs = 2
    on.samples = [
        _sample(1, {"MWorker default": 400.0, "RateLimitQueueManager": 90.0}),
        _sample(2, {"MWorker default": 450.0, "RateLimitQueueManager": 91.0}),
    ]
    on.pings = [Ping(1, 12.0, PING_TARGETS, 0.1, 1.0), Ping(2, 3.0, 3, 0.2, None)]
    decisions = [DecideResult("nothing in flight", "publish", [5.0, 6.0])]
    text = "\n".join(
        str(line)
        for line in report_lines(
            [on], decisions, StormSetup(10, 2, 3, "nox -s bench -- storm")
        )
    )
    assert "at most 2 jobs on one minion <= 10" in text
    assert "returns lost for published jobs: 0: met" in text
    assert "presence ping p99 " in text and "<= 2 s: NOT met" in text
    assert "one decision: worst p99 6.0 us <= 50 us: met" in text
    # the ping that never got a first return is counted, not dropped
    assert "(1 never)" in text
    # the process that grew most comes first
    assert text.index("| on | MWorker default | 400 | 450 | +50 |") < text.index(
        "| on | RateLimitQueueManager | 90 | 91 | +1 |"
    )
    assert "worker pool of their own with 1 MWorker(s)" in text
    assert "by 3 client threads" in text
