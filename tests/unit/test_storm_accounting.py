"""How the storm benchmark counts jobs and returns from the bus events it sees.

The report's "lost returns", "jobs with every return" and "in flight" come
from this accounting, so it is tested with made-up events here.
"""

from __future__ import annotations

import datetime
import pickle

from benchmarks.storm import JobBook, JobTrack, job_cache_returns, storm_jobs
from harness.events import Event


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
