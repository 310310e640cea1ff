"""status.json: worker counters summed, readiness computed, and wait_ready
ignoring what an earlier run left behind."""

from __future__ import annotations

import threading
import time

import pytest

from evil_minions.status import (
    ProcessStats,
    aggregate,
    format_summary,
    read_status,
    wait_ready,
    write_json_atomic,
)


def _worker(index, minions, **counters):
    stats = ProcessStats(
        index=index, pid=100 + index, minions=minions, pub_connected=True, **counters
    )
    return stats.to_dict()


def test_aggregate_sums_and_derives():
    per_process = [
        _worker(
            0,
            3,
            authenticated=3,
            connected=3,
            returns_sent=5,
            return_retries=2,
            returns_given_up=1,
            return_errors=1,
            rss_kb=5000,
            baseline_rss_kb=4000,
        ),
        _worker(
            1,
            2,
            authenticated=2,
            connected=2,
            auth_failures=2,
            rss_kb=4600,
            baseline_rss_kb=4000,
        ),
    ]
    total = aggregate(
        per_process, count=5, processes=2, started_at=time.time() - 10, state="starting"
    )
    assert total["authenticated"] == 5 and total["returns_sent"] == 5
    assert total["errors"] == 3
    assert total["ready"] is True
    assert total["rss_kb_per_minion"] == 320.0
    assert "returns_sent=5" in format_summary(total)
    # retries and give-ups are counted, not errors: the return may arrive
    assert total["return_retries"] == 2 and total["returns_given_up"] == 1
    assert "return_retries=2 " in format_summary(total)


def test_not_ready_until_every_minion_and_subscription_is_up():
    per_process = [_worker(0, 2, authenticated=2, connected=1)]
    assert not aggregate(
        per_process, count=2, processes=1, started_at=0, state="starting"
    )["ready"]
    per_process = [_worker(0, 2, authenticated=2, connected=2)]
    per_process[0]["pub_connected"] = False
    assert not aggregate(
        per_process, count=2, processes=1, started_at=0, state="starting"
    )["ready"]


def test_wait_ready_ignores_a_stale_file_and_returns_a_fresh_one(tmp_path):
    write_json_atomic(
        tmp_path / "status.json",
        {"ready": True, "state": "stopped", "updated_at": time.time() - 60},
    )

    def later():
        time.sleep(0.3)
        write_json_atomic(
            tmp_path / "status.json",
            {
                "ready": True,
                "state": "ready",
                "updated_at": time.time(),
                "supervisor_pid": 42,
            },
        )

    threading.Thread(target=later).start()
    status = wait_ready(tmp_path, timeout=5, pid=42, poll=0.05)
    assert status["state"] == "ready"
    assert read_status(tmp_path)["supervisor_pid"] == 42


def test_wait_ready_times_out_and_reports_failure(tmp_path):
    with pytest.raises(TimeoutError, match=r"no fresh status\.json"):
        wait_ready(tmp_path, timeout=0.2, poll=0.05)

    def fail():
        time.sleep(0.1)
        write_json_atomic(
            tmp_path / "status.json",
            {"ready": False, "state": "failed", "updated_at": time.time()},
        )

    threading.Thread(target=fail).start()
    with pytest.raises(RuntimeError, match="is failed"):
        wait_ready(tmp_path, timeout=5, poll=0.05)
