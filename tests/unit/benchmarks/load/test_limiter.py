"""The limiter-on master of a load run: what the load command's flags put
into its configuration."""

from __future__ import annotations

from benchmarks.load import run
from benchmarks.load.__main__ import build_parser, regenerate_command


def _settings(*words: str) -> run.LoadSettings:
    args = build_parser().parse_args(list(words))
    return run.LoadSettings(
        max_master_jobs=args.max_master_jobs,
        max_queue=args.max_queue,
        exempt_pool=args.exempt_pool,
        exempt=args.exempt,
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


def test_exempt_functions_bypass_the_queue_and_go_to_the_exempt_pool() -> None:
    settings = _settings("--exempt", "test.ping,pillar.get,pillar.items")
    options = run._limiter_options(settings, "on")

    exempt = options["rate_limiting"]["exempt"]
    assert {"test.ping", "pillar.get", "pillar.items"} <= set(exempt)
    assert "saltutil.kill_job" not in exempt  # Salt's list is replaced
    pool = options["worker_pools"]["exempt"]["functions"]
    assert {"pillar.get", "pillar.items", "saltutil.find_job"} <= set(pool)
    assert "exempt: pillar.get, pillar.items, saltutil.find_job" in run._limits(
        settings
    )


def test_a_bad_exempt_list_is_a_usage_error(capsys) -> None:
    try:
        build_parser().parse_args(["--exempt", "test.ping,,pillar get"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("a bad --exempt was accepted")
    assert "not a Salt function name (module.function): ''" in capsys.readouterr().err


def test_the_regenerate_command_names_the_report_file():
    assert regenerate_command(["--max-master-jobs", "700"], "load") == (
        "nox -s load -- --max-master-jobs 700 --name load"
    )
    assert regenerate_command([], "load") == "nox -s load -- --name load"
    given = ["--name", "load-x", "--exempt", "test.ping"]
    assert regenerate_command(given, "load-x") == (
        "nox -s load -- --name load-x --exempt test.ping"
    )
