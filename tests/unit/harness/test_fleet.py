"""A simulated fleet's start-up fails early when it stops making progress."""

from __future__ import annotations

from harness.fleet import StallWatch


def _status(authenticated: int, connected: int = 0, failures: int = 0) -> dict:
    return {
        "authenticated": authenticated,
        "connected": connected,
        "auth_failures": failures,
        "updated_at": 0,
    }


def test_a_fleet_that_keeps_authenticating_never_stalls():
    watch = StallWatch(10, now=0)
    for second in range(100):
        assert watch.stalled(_status(second), now=second) is None


def test_a_fleet_that_sits_still_is_reported_after_the_stall_time():
    watch = StallWatch(10, now=0)
    assert watch.stalled(_status(5), now=1) is None
    assert watch.stalled(_status(5), now=10) is None
    assert watch.stalled(_status(5), now=11) == 10


def test_connections_and_failures_count_as_progress_too():
    watch = StallWatch(10, now=0)
    watch.stalled(_status(5), now=0)
    assert watch.stalled(_status(5, connected=3), now=9) is None
    assert watch.stalled(_status(5, connected=3, failures=1), now=18) is None
    assert watch.stalled(_status(5, connected=3, failures=1), now=28) == 10


def test_start_up_pillars_and_events_count_as_progress():
    watch = StallWatch(10, now=0)
    status = _status(5, connected=5)
    watch.stalled(status, now=0)
    assert watch.stalled(dict(status, pillar_requests=3), now=9) is None
    assert watch.stalled(dict(status, pillar_requests=3, events_sent=2), now=18) is None


def test_no_status_at_all_is_a_stall_too():
    watch = StallWatch(10, now=0)
    assert watch.stalled(None, now=5) is None
    assert watch.stalled(None, now=12) == 12
