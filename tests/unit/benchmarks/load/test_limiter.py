"""The limiter-on master of a load run: what the load command's flags put
into its configuration."""

from __future__ import annotations

from benchmarks.load import run
from benchmarks.load.__main__ import build_parser


def _settings(*words: str) -> run.LoadSettings:
    args = build_parser().parse_args(list(words))
    return run.LoadSettings(
        max_master_jobs=args.max_master_jobs,
        max_queue=args.max_queue,
        exempt_pool=args.exempt_pool,
        slice_min_targets=args.slice_min_targets,
    )


def test_limiter_off_changes_nothing() -> None:
    assert run._limiter_options(_settings(), "off") == {}


def test_limiter_on_publishes_in_slices_with_an_exempt_pool_by_default() -> None:
    options = run._limiter_options(_settings("--max-master-jobs", "700"), "on")
    limits = options["rate_limiting"]
    assert limits["max_master_jobs"] == 700
    assert limits["slices"]["min_targets"] == 100
    pools = options["worker_pools"]
    assert "test.ping" in next(
        pool["functions"] for pool in pools.values() if "functions" in pool
    )


def test_slices_and_exempt_pool_can_be_turned_off() -> None:
    options = run._limiter_options(
        _settings("--slice-min-targets", "0", "--exempt-pool", "0"), "on"
    )
    assert "slices" not in options["rate_limiting"]
    assert "worker_pools" not in options


def test_the_report_names_the_limiter_settings() -> None:
    text = run._limits(_settings("--slice-min-targets", "50"))
    assert "slices of at least 50 minions" in text
    assert "1 MWorker" in text
