"""How the storm benchmark counts jobs and returns from the bus events it sees.

The report's "lost returns", "jobs with every return" and "in flight" come
from this accounting, so it is tested with made-up events here.
"""

from __future__ import annotations

import datetime
import pickle
import threading
from pathlib import Path

import pytest
from salt.utils.jid import jid_dir

from benchmarks.proctree import role
from benchmarks.storm.accounting import (
    PING_TARGETS,
    JobBook,
    JobTrack,
    Ping,
    VariantResult,
    answers_from_bus,
    first_returns,
    job_cache_returns,
    ping_order,
    ping_targets,
    storm_jobs,
)
from harness.events import Event
from harness.fleet import minion_ids


def _ret(
    jid: str, minion: str, at: float = 100.0, age: float = 0.5, fun: str = "test.sleep"
) -> Event:
    stamp = datetime.datetime.fromtimestamp(at - age, datetime.UTC)
    return Event(
        f"salt/job/{jid}/ret/{minion}",
        {"_stamp": stamp.isoformat(), "fun": fun},
        received=at,
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


def test_the_book_knows_when_its_last_new_return_came():
    book = JobBook()
    assert book.last_return is None
    book.add(JobTrack("1", "test.sleep", targets=2, accepted=10.0))
    book.feed([_ret("1", "a", at=110.0), _ret("other", "b", at=130.0)])
    assert book.last_return == 110.0  # an unbooked job's return does not count
    book.feed([_ret("1", "b", at=120.0), _ret("1", "b", at=140.0)])
    assert book.last_return == 120.0  # nor does a duplicate


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


def test_a_job_whose_submission_failed_but_ran_is_found_by_its_returns():
    """The master took a submission after its client timed out and published
    it: its returns come under a jid nobody was given. Pings and jobs the
    submitter did get are not counted among them."""
    book = JobBook()
    book.add(JobTrack("1", "test.sleep", targets=2, accepted=10.0))
    book.feed(
        [
            _ret("1", "a"),
            _ret("20261126010000000001", "a", fun="state.apply"),
            _ret("20261126010000000001", "a", fun="state.apply"),
            _ret("20261126010000000001", "b", fun="state.apply"),
            _ret("20261126010000000002", "c"),
            _ret("20261126010000000003", "a", fun="test.ping"),
        ]
    )
    assert book.unbooked() == {
        "20261126010000000001": {"a", "b"},
        "20261126010000000002": {"c"},
    }
    assert book.received_total() == 1  # they are no storm job's returns
    assert book.unbooked_seen == 4  # every copy, as the sampler's rate counts
    # booked late (the submitter's answer came after its return): not unbooked
    book.add(JobTrack("20261126010000000002", "test.sleep", targets=1, accepted=9.0))
    assert set(book.unbooked()) == {"20261126010000000001"}
    assert book.received_total() == 2  # and its early return counts


def _cache_job(
    cachedir: Path, jid: str, minions: list[str], hash_type: str = "sha256"
) -> Path:
    """A job as local_cache stores it: in the directory its jid hashes to."""
    job_dir = Path(jid_dir(jid, str(cachedir / "jobs"), hash_type))
    job_dir.mkdir(parents=True)
    (job_dir / "jid").write_text(jid)
    for minion in minions:
        (job_dir / minion).mkdir()
        (job_dir / minion / "return.p").write_bytes(pickle.dumps(True))
    (job_dir / "nobody").mkdir()  # a minion dir without a return
    return job_dir


def test_job_cache_returns_counts_return_files_per_jid(tmp_path):
    for jid, minions in (("1", ["a", "b"]), ("2", ["a"]), ("3", ["a"])):
        _cache_job(tmp_path, jid, minions)
    assert job_cache_returns(tmp_path, {"1", "2", "4"}) == {"1": 2, "2": 1}


def test_job_cache_returns_looks_where_the_masters_hash_type_files_jobs(tmp_path):
    _cache_job(tmp_path, "1", ["a"], hash_type="md5")
    assert job_cache_returns(tmp_path, {"1"}, hash_type="md5") == {"1": 1}
    assert job_cache_returns(tmp_path, {"1"}) == {}


def test_a_job_whose_jid_file_is_being_rewritten_keeps_its_returns(tmp_path):
    # the master truncates and rewrites a job's jid file for every return it
    # stores: a late duplicate return made the job read as lost with all
    # its returns in place
    job_dir = _cache_job(tmp_path, "20261127041032853862", ["a", "b"])
    (job_dir / "jid").write_text("")
    assert job_cache_returns(tmp_path, {"20261127041032853862"}) == {
        "20261127041032853862": 2
    }


def test_the_storm_mixes_sleeps_and_state_runs_reproducibly():
    jobs = storm_jobs(200)
    assert jobs == storm_jobs(200)
    assert sum(1 for fun, _ in jobs if fun == "state.apply") == 100
    assert all(1 <= arg[0] <= 5 for fun, arg in jobs if fun == "test.sleep")


def test_presence_pings_go_to_other_minions_each_tick_through_the_whole_fleet():
    ids = minion_ids("evil", 100)
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


def test_the_end_counts_add_up_the_book_and_take_the_job_cache_as_received():
    book = JobBook()
    book.limited = True
    book.add(JobTrack("1", "state.apply", targets=3, accepted=10.0))
    book.add(JobTrack("2", "state.apply", targets=3, accepted=10.0))
    book.add(JobTrack("3", "test.sleep", targets=3, accepted=10.0))
    book.feed(
        [
            _outcome("1", "published"),
            _outcome("2", "published_excluding", excluded=["c"]),
            _outcome("3", "expired"),
            _ret("1", "a"),
            _ret("2", "a"),
            _ret("2", "b"),
        ]
    )
    result = VariantResult("on", None)
    result.tally(book.jobs.values(), {"1": 3, "2": 2})
    assert result.outcomes == {"published": 1, "published_excluding": 1, "expired": 1}
    assert result.expected_returns == 3 + 2  # job 3 expired: no returns owed
    assert result.received_bus == 3
    assert result.received_cache == 5  # the job cache also has job 1's late ones
    assert result.completed_jobs == 1  # only job 2 got every return on the bus
    assert result.missing_returns == 0
    assert result.short_in_cache == {}


def test_the_end_counts_name_a_job_the_job_cache_holds_too_few_returns_of():
    """The bus showed every return of job 2, the job cache has none: a
    loss at the master, named by its jid."""
    book = JobBook()
    book.add(JobTrack("1", "test.sleep", targets=2, accepted=10.0))
    book.add(JobTrack("2", "test.sleep", targets=2, accepted=10.0))
    book.feed([_ret("1", "a"), _ret("1", "b"), _ret("2", "a"), _ret("2", "b")])
    result = VariantResult("off", None)
    result.tally(book.jobs.values(), {"1": 2})
    assert result.missing_returns == 2
    assert result.short_in_cache == {"2": [0, 2, 2]}


def test_a_return_the_bus_shows_twice_is_one_received_and_one_duplicate():
    """A minion's retry after a try that timed out but still reached the
    master: the master fires both; one return received, one duplicate."""
    book = JobBook()
    book.add(JobTrack("1", "test.sleep", targets=2, accepted=10.0))
    book.add(JobTrack("2", "test.sleep", targets=1, accepted=10.0))
    book.feed([_ret("1", "a"), _ret("1", "b"), _ret("1", "a"), _ret("2", "a")])
    book.feed([_ret("1", "a")])
    result = VariantResult("off", None)
    result.tally(book.jobs.values(), {"1": 2, "2": 1})
    assert (result.received_bus, result.duplicate_returns) == (3, 2)
    assert result.missing_returns == 0


def test_a_book_can_share_its_lock_with_the_run_that_owns_it():
    lock = threading.RLock()
    book = JobBook(lock)
    assert book.lock is lock
    with lock:  # held by a run's thread while it reads the book
        book.add(JobTrack("1", "test.sleep", targets=1, accepted=10.0))
        assert book.in_flight() == 1


def _slice(jid: str, number: int, minions: list[str]) -> Event:
    return Event(
        f"salt/ratelimit/slice/{jid}/{number}",
        {"jid": jid, "slice": number, "minions": minions, "excluded": []},
        received=60.0 + number,
    )


def test_a_job_going_out_in_slices_expects_the_returns_of_its_slices_so_far():
    book = JobBook()
    book.limited = True
    book.add(JobTrack("9", "test.sleep", targets=4, accepted=10.0))
    book.feed([_outcome("9", "queued"), _slice("9", 1, ["a", "b"])])
    book.feed([_ret("9", "a"), _ret("9", "b")])
    # its first slice returned: still in flight, nothing received unexpected
    assert (book.expected_total(), book.received_total()) == (2, 2)
    assert book.in_flight() == 1 and not book.all_settled()
    assert book.jobs["9"].completed is None

    result = VariantResult("on", None)
    result.tally(book.jobs.values(), {"9": 2})  # the job cache has both
    assert (result.expected_returns, result.received_cache) == (2, 2)
    assert result.missing_returns == 0
    assert result.targets_unpublished == 2

    book.feed([_slice("9", 2, ["c", "d"]), _outcome("9", "published")])
    book.feed([_ret("9", "c")])
    assert (book.expected_total(), book.received_total()) == (4, 3)
    assert book.all_settled() and book.in_flight() == 1
    result = VariantResult("on", None)
    result.tally(book.jobs.values(), {"9": 3})
    assert (result.expected_returns, result.missing_returns) == (4, 1)
    assert result.targets_unpublished == 0
    book.feed([_ret("9", "d", at=130.0)])
    assert book.in_flight() == 0 and book.jobs["9"].completed == 130.0


def test_a_ping_is_answered_by_its_returns_on_the_bus_within_the_timeout() -> None:
    pings = [
        Ping(1.0, 10.0, 0, targets=2, jid="111", began_at=100.0),
        Ping(2.0, 10.0, 0, targets=2, jid="222", began_at=200.0),
        Ping(3.0, 10.0, 0, targets=2),  # the master never answered its publish
    ]
    answers_from_bus(
        pings,
        [
            Event("salt/job/111/ret/evil-0001", {}, 101.0),
            Event("salt/job/111/ret/evil-0001", {}, 101.5),  # a duplicate
            Event("salt/job/111/ret/evil-0002", {}, 111.0),  # past the timeout
            Event("salt/job/222/new", {}, 200.1),
            Event("salt/job/222/ret/evil-0003", {}, 200.2),
            Event("salt/job/222/ret/evil-0004", {}, 200.4),
            Event("salt/job/333/ret/evil-0004", {}, 200.4),  # not a ping's
        ],
    )
    late, quick, unpublished = pings
    # every target returned, one after the timeout: not answered, but the
    # report still says how late its last return came
    assert (late.returned, late.seconds, late.answered) == (1, 10.0, False)
    assert late.first_s == pytest.approx(1.0) and late.bus_s == pytest.approx(11.0)
    assert (quick.returned, quick.answered) == (2, True)
    assert quick.seconds == pytest.approx(0.4) and quick.first_s == pytest.approx(0.2)
    assert (unpublished.returned, unpublished.answered) == (0, False)
    assert (unpublished.first_s, unpublished.bus_s) == (None, None)
    # per tick: a skipped tick is a ping that failed
    result = VariantResult("off", None, 1, pings=pings, pings_skipped=1)
    assert result.ping_answered_share == pytest.approx(1 / 4)
    assert result.pings_incomplete == 2


def test_a_return_counts_from_when_the_master_fired_it_not_when_it_was_forwarded() -> (
    None
):
    ping = Ping(1.0, 10.0, 0, targets=1, jid="111", began_at=1_700_000_000.0)
    # fired 9 s after the ping, forwarded to the listener 3 s later
    fired = datetime.datetime.fromtimestamp(1_700_000_009.0, datetime.UTC)
    stamp = fired.replace(tzinfo=None).isoformat()
    answers_from_bus(
        [ping],
        [Event("salt/job/111/ret/evil-0001", {"_stamp": stamp}, 1_700_000_012.0)],
    )
    assert ping.seconds == pytest.approx(9.0) and ping.answered


def test_a_return_at_the_timeout_itself_is_in_time() -> None:
    ping = Ping(1.0, 10.0, 0, targets=1, jid="111", began_at=100.0)
    answers_from_bus([ping], [Event("salt/job/111/ret/evil-0001", {}, 110.0)])
    assert ping.answered and ping.seconds == 10.0


def test_first_returns_add_up_over_batches_and_keep_a_minions_earliest() -> None:
    seen = first_returns([Event("salt/job/1/ret/a", {}, 5.0)], {"1"})
    # a later batch: a's retry does not replace its first return; b's first
    first_returns(
        [
            Event("salt/job/1/ret/a", {}, 7.0),
            Event("salt/job/1/ret/b", {}, 6.0),
            Event("salt/job/2/ret/a", {}, 6.0),  # not asked about
        ],
        {"1"},
        into=seen,
    )
    assert seen == {"1": {"a": 5.0, "b": 6.0}}
