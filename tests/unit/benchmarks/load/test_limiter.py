"""The limiter-on master of a load run: what the load command's flags put
into its configuration."""

from __future__ import annotations

import pytest

from benchmarks.load import run
from benchmarks.load.__main__ import build_parser, parse


def _settings(*words: str) -> run.LoadSettings:
    return run.LoadSettings.of(parse(list(words)))


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
    assert "2 MWorker" in text


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


def test_small_publications_go_to_the_exempt_pool_of_on_and_pools() -> None:
    settings = _settings()  # one minion named by id, by default
    for variant in ("on", "pools"):
        pools = run._limiter_options(settings, variant)["worker_pools"]
        assert pools["exempt"]["max_targets"] == 1
        assert "max_targets" not in pools["default"]
    assert "at most 1 minion(s) by id" in run._limits(settings)
    none = _settings("--exempt-pool-targets", "0")
    assert "max_targets" not in str(run._limiter_options(none, "on"))
    assert "by id" not in run._limits(none)


def test_small_jobs_bypass_the_queue_only_when_asked() -> None:
    default = run._limiter_options(_settings(), "on")["rate_limiting"]
    assert "exempt_max_targets" not in default
    settings = _settings("--exempt-max-targets", "1")
    limits = run._limiter_options(settings, "on")["rate_limiting"]
    assert limits["exempt_max_targets"] == 1
    assert "rate_limiting" not in run._limiter_options(settings, "pools")
    assert "at most 1 minion(s) bypass the queue" in run._limits(settings)


def test_without_an_exempt_pool_small_publications_route_by_command() -> None:
    settings = _settings("--exempt-pool", "0", "--exempt-pool-targets", "3")
    assert "worker_pools" not in run._limiter_options(settings, "on")
    assert "by id" not in run._limits(settings)


def test_a_bad_exempt_list_is_a_usage_error(capsys) -> None:
    try:
        build_parser().parse_args(["--exempt", "test.ping,,pillar get"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("a bad --exempt was accepted")
    assert "not a Salt function name (module.function): ''" in capsys.readouterr().err


def test_the_reproduce_line_names_what_differs_and_parses_back() -> None:
    assert parse([]).reproduce_command() == "nox -s load --"
    words = ["--max-master-jobs", "700", "--exempt", "test.ping,pillar.get"]
    words += ["--variants", "on", "--name", "load-x", "--workdir", "w"]
    opts = parse(words)
    line = opts.reproduce_command()
    assert line == (
        "nox -s load -- --variants on --max-master-jobs 700 --exempt "
        "test.ping,pillar.get --name load-x --workdir w"
    )
    assert parse(line.removeprefix("nox -s load --").split()) == opts
    assert run.LoadSettings.of(opts).command == line


def test_the_options_make_the_runs_settings() -> None:
    settings = _settings("--users", "5", "--ramp", "0", "--workers", "2")
    assert (settings.profile.users, settings.profile.ramp_s) == (5, 0)
    assert settings.workers.local == 2
    assert settings.variants == ("off", "on")
    assert settings.limits.exempt is None  # Salt's own list


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--name", "../load"], "invalid report name"),
        # the default pool must keep one of the MWorkers every master has
        (["--exempt-pool", "4"], "every master has 4 MWorkers in all"),
        (["--variants", "all"], "list without repetition of off, on, pools, tuned"),
        (["--variants", "pools", "--exempt-pool", "0"], "needs an exempt pool"),
    ],
)
def test_a_bad_option_is_a_usage_error(words, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(words)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_the_pools_and_tuned_masters() -> None:
    settings = _settings("--variants", "on,pools,tuned")
    on = run._limiter_options(settings, "on")
    assert run._limiter_options(settings, "pools") == {
        "worker_pools": on["worker_pools"]
    }
    tuned = run._limiter_options(settings, "tuned")
    assert tuned["master_async_mworker"] is True
    assert tuned["worker_pools"]["publish"]["commands"] == ["publish"]
    assert sum(p["worker_count"] for p in tuned["worker_pools"].values()) == 4


def test_every_variants_master_has_as_many_mworkers() -> None:
    from benchmarks.salt_trees import MASTER_MWORKERS

    for pool in (0, 1, 3):
        options = run._limiter_options(_settings("--exempt-pool", str(pool)), "on")
        pools = options.get("worker_pools") or {"default": {"worker_count": 4}}
        assert sum(p["worker_count"] for p in pools.values()) == MASTER_MWORKERS


def test_the_budget_follows_salts_target_delay_unless_fixed_by_hand() -> None:
    config = pytest.importorskip("salt.config.rate_limiting")
    default = run._limiter_options(_settings(), "on")["rate_limiting"]
    assert default["slices"]["target_delay"] == config.DEFAULT_SLICES["target_delay"]
    assert "a budget sized for returns waiting 2 s" in run._limits(_settings())
    fixed = run._limiter_options(_settings("--slice-target-delay", "0"), "on")
    # null: the budget is max_master_jobs, as Salt validates it
    effective = config.rate_limiting_config(fixed)
    assert effective["slices"]["target_delay"] is None
    assert "a fixed budget of max_master_jobs (2000)" in run._limits(
        _settings("--slice-target-delay", "0", "--max-master-jobs", "2000")
    )
