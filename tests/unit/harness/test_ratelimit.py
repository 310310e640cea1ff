"""The harness side of rate limiting: the option it renders is one the patched
master accepts, outcomes are counted per job from the events, and the probe
speaks the queue manager's socket protocol."""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.events import Event
from harness.ratelimit import (
    OUTCOMES,
    LimiterState,
    QueueProbe,
    RateLimiting,
    job_event,
    outcome_problems,
    outcomes,
    slice_event,
)


def event(tag: str) -> Event:
    return Event(tag, {}, 0.0)


def test_master_options_pass_salts_validation() -> None:
    config = pytest.importorskip("salt.config.rate_limiting")
    opts = RateLimiting(max_queue=5, exempt=("test.ping",)).master_options()
    effective = config.rate_limiting_config(opts)
    assert effective["max_queue"] == 5
    assert "test.ping" in effective["exempt"]
    assert "saltutil.find_job" in effective["exempt"]


def test_slices_render_an_option_salt_accepts() -> None:
    config = pytest.importorskip("salt.config.rate_limiting")
    assert "slices" not in RateLimiting().master_options()["rate_limiting"]
    on = config.rate_limiting_config(RateLimiting(slices=True).master_options())
    assert on["slices"] == config.DEFAULT_SLICES
    sized = RateLimiting(slices=True, slice_min_targets=20, slice_backlog=4.5)
    effective = config.rate_limiting_config(sized.master_options())
    # the settings given replace Salt's; the rest (target_delay) stay Salt's
    assert effective["slices"] == dict(
        config.DEFAULT_SLICES, min_targets=20, backlog=4.5
    )


def test_a_slice_rate_renders_an_option_salt_accepts() -> None:
    """``--slice-max-rate`` (benchmarks, ``up``) is ``slices:max_rate``; 0
    is none, as Salt's default."""
    config = pytest.importorskip("salt.config.rate_limiting")
    bounded = RateLimiting().with_slices(100, max_rate=130)
    effective = config.rate_limiting_config(bounded.master_options())
    assert effective["slices"]["max_rate"] == 130
    assert "130 minions a second (max_rate)" in bounded.describe_budget()
    unbounded = RateLimiting().with_slices(100, max_rate=0)
    effective = config.rate_limiting_config(unbounded.master_options())
    assert effective["slices"]["max_rate"] is None
    assert "max_rate" not in unbounded.describe_budget()


def test_slice_settings_without_slices_are_refused() -> None:
    with pytest.raises(ValueError, match="need slices=True"):
        RateLimiting(slice_backlog=2.0)


@pytest.mark.parametrize(
    ("limiter", "words"),
    [
        (RateLimiting(max_master_jobs=700), "a fixed budget of max_master_jobs (700)"),
        (
            RateLimiting(max_master_jobs=700, slices=True, slice_target_delay=0),
            "a fixed budget of max_master_jobs (700)",
        ),
        (
            RateLimiting(slices=True, slice_backlog=30),
            "a budget of 30 s of returns",
        ),
        (
            RateLimiting(max_master_jobs=700, slices=True, slice_target_delay=2.5),
            "a budget sized for returns waiting 2.5 s (target_delay, Salt's is "
            "{default:g} s), max_master_jobs (700) its ceiling",
        ),
        (
            RateLimiting(max_master_jobs=700, slices=True),
            "a budget sized for returns waiting {default:g} s (target_delay, "
            "Salt's default), max_master_jobs (700) its ceiling",
        ),
    ],
)
def test_a_report_says_how_the_budget_is_sized(limiter, words) -> None:
    from harness.ratelimit import salt_slice_defaults

    default = salt_slice_defaults()["target_delay"]
    assert default != 2.5  # the case above is not the default
    assert limiter.describe_budget() == words.format(default=default)


def test_slice_event_reads_slice_tags_only() -> None:
    assert slice_event("salt/ratelimit/slice/123/2") == ("123", 2)
    assert slice_event("salt/ratelimit/job/123/published") is None


def test_default_exempt_list_is_salts() -> None:
    assert "exempt" not in RateLimiting().master_options()["rate_limiting"]


def test_exempt_pool_claims_the_exempt_functions_and_passes_validation() -> None:
    pools = pytest.importorskip("salt.config.worker_pools")
    opts = RateLimiting(exempt=("test.ping",), exempt_pool_workers=2).master_options(
        worker_threads=3
    )
    layout = opts["worker_pools"]
    assert layout["exempt"] == {
        "worker_count": 2,
        # the machinery's own functions are exempt even when not listed
        "functions": ["saltutil.find_job", "saltutil.running", "test.ping"],
    }
    assert layout["default"] == {"worker_count": 3, "commands": ["*"]}
    assert pools.validate_worker_pools_config(opts) is True
    routes = pools.function_routes(layout)
    assert pools.pool_for_function(routes, "_return", {"fun": "test.ping"}) == "exempt"
    assert pools.pool_for_function(routes, "_return", {"fun": "test.sleep"}) is None


def test_no_exempt_pool_leaves_the_workers_alone() -> None:
    assert "worker_pools" not in RateLimiting().master_options()


def test_outcomes_are_salts() -> None:
    ratelimit = pytest.importorskip("salt.ratelimit")
    assert OUTCOMES == ratelimit.OUTCOMES


def test_job_event_reads_the_jid_and_outcome_of_rate_limit_job_tags_only() -> None:
    assert job_event("salt/ratelimit/job/1/published_excluding") == (
        "1",
        "published_excluding",
    )
    assert job_event("salt/ratelimit/job/1/queued") == ("1", "queued")
    assert job_event("salt/job/1/ret/m1") is None
    assert job_event("salt/ratelimit/capacity/reconciled") is None
    assert job_event("salt/ratelimit/job/1/published/extra") is None


def test_outcomes_per_job() -> None:
    found = outcomes(
        [
            event("salt/ratelimit/job/1/queued"),
            event("salt/ratelimit/job/1/published"),
            event("salt/ratelimit/job/2/rejected"),
            event("salt/ratelimit/job/3/queued"),
            event("salt/ratelimit/job/4/expired"),
            event("salt/ratelimit/job/4/published"),
            event("salt/ratelimit/job/5/published_unchecked"),
            event("salt/job/1/ret/m1"),
            event("salt/ratelimit/capacity/reconciled"),
        ]
    )
    assert found == {
        "1": ["published"],
        "2": ["rejected"],
        "4": ["expired", "published"],
        "5": ["published_unchecked"],
    }
    assert outcome_problems(found, ["1", "2", "3", "4", "5"]) == {
        "3": [],
        "4": ["expired", "published"],
    }
    assert outcome_problems(found, ["1", "2"]) == {}


@pytest.fixture
def fake_queue_manager() -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """A server speaking the queue manager's protocol, answering from a table."""
    ipc = pytest.importorskip("salt.ratelimit.ipc")
    asked: list[dict[str, Any]] = []
    answers = {
        "status": {
            "queued": 2,
            "master_jobs": 7,
            "slices": {"budget": 400, "cuts": 3, "delay": 2.61, "run_time": 1.05},
        },
        "queue": {"jobs": [{"jid": "1"}, {"jid": "2"}]},
        "capacity": {"minions": {"m1": {"jobs": 3, "held": {}}}},
        "job": {"job": {"jid": "1", "outcome": "published"}},
    }

    async def handle(message: dict[str, Any]) -> dict[str, Any]:
        asked.append(message)
        return answers.get(message["cmd"], {"error": "unknown command"})

    sock_dir = Path(tempfile.mkdtemp(prefix="rlp-"))
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(
            ipc.serve(str(sock_dir / ipc.SOCKET_NAME), handle)
        )
        ready.set()
        loop.run_forever()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield sock_dir, asked
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        for path in sock_dir.iterdir():
            path.unlink()
        sock_dir.rmdir()


def test_probe(fake_queue_manager: tuple[Path, list[dict[str, Any]]]) -> None:
    sock_dir, asked = fake_queue_manager
    probe = QueueProbe(sock_dir)
    assert probe.status()["master_jobs"] == 7
    assert [job["jid"] for job in probe.queue()] == ["1", "2"]
    assert probe.capacity(["m1"]) == {"m1": 3}
    assert probe.job("1") == {"jid": "1", "outcome": "published"}
    assert asked[2] == {"cmd": "capacity", "minions": ["m1"]}
    # what the storm samples once a second: the budget and what sized it
    assert probe.state() == LimiterState(
        queued=2, points=7, budget=400, cuts=3, delay=2.61, run_time=1.05
    )


def test_probe_without_a_queue_manager(tmp_path: Path) -> None:
    pytest.importorskip("salt.ratelimit.ipc")
    with pytest.raises(OSError):
        QueueProbe(tmp_path).status()


def test_defaults_are_read_from_salt_not_restated(monkeypatch) -> None:
    """A Salt that changes its defaults changes the harness's and the
    benchmarks' defaults with it (they once restated 2000 and 10000)."""
    import salt.config.rate_limiting as config

    from benchmarks.load.__main__ import build_parser
    from benchmarks.load.run import LoadSettings

    changed = dict(config.DEFAULT_RATE_LIMITING, max_master_jobs=1234, max_queue=56)
    monkeypatch.setattr(config, "DEFAULT_RATE_LIMITING", changed)
    assert (RateLimiting().max_master_jobs, RateLimiting().max_queue) == (1234, 56)
    settings = LoadSettings()
    assert (settings.limits.max_master_jobs, settings.limits.max_queue) == (1234, 56)
    args = build_parser().parse_args([])
    assert (args.max_master_jobs, args.max_queue) == (1234, 56)
    from benchmarks.load.options import LoadOptions

    assert LoadOptions().max_master_jobs == 1234
    # Salt's default is no flag of the reproduce line
    assert "--max-master-jobs" not in LoadOptions().reproduce_command()


@pytest.mark.parametrize(
    ("min_targets", "slices"), [(0, None), (100, {"min_targets": 100})]
)
def test_slice_min_targets_zero_means_no_slices(min_targets, slices) -> None:
    options = RateLimiting().with_slices(min_targets).master_options()
    assert options["rate_limiting"].get("slices") == slices


def test_a_queue_manager_that_does_not_answer_is_a_sample_missed(tmp_path) -> None:
    pytest.importorskip("salt.ratelimit.ipc")
    from harness.ratelimit import NO_ANSWER, QueueProbe

    # no master here: no socket
    assert QueueProbe(tmp_path, timeout=0.5).state() == NO_ANSWER
