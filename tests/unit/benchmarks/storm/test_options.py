"""The storm's options: one value from the command line, and back.

The report's "Reproduce" line must run the same storm again under the same
name, so the line is parsed back here and must give the same options.
"""

from __future__ import annotations

import argparse

import pytest

from benchmarks import options
from benchmarks.salt_trees import EXEMPT_POOL
from benchmarks.storm.options import (
    COMMAND,
    StormOptions,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="storm")
    options.add_arguments(parser, StormOptions)
    return parser


def _parse(words: list[str]) -> StormOptions:
    return options.from_args(StormOptions, _parser().parse_args(words))


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
        "exempt_pool": EXEMPT_POOL,
    }
    assert StormOptions(**defaults).reproduce_command() == "nox -s bench -- storm"
    changed = dict(
        defaults, minions=200, max_wait=90.5, variants=("on",), exempt_pool=0
    )
    assert StormOptions(**changed).reproduce_command() == (
        "nox -s bench -- storm --minions 200 --variants on --exempt-pool 0 "
        "--max-wait 90.5"
    )


def test_no_flags_give_the_defaults() -> None:
    assert _parse([]) == StormOptions()
    assert StormOptions().variants == ("on", "off")
    assert StormOptions().output_name == "storm"


@pytest.mark.parametrize(
    "words",
    [
        [],
        ["--variants", "both"],
        ["--jobs", "400", "--variants", "on", "--output-name", "storm-long-400"],
        ["--jobs", "60", "--max-master-jobs", "1000", "--variants", "on"],
        ["--max-wait", "90.5", "--exempt-pool", "0", "--variants", "off"],
        ["--consumer-rate", "0", "--slice-min-targets", "100"],
        ["--consumer-rate", "62.5"],
        ["--variants", "off,pools,on"],
        ["--variants", "on,off"],
        ["--minion-jobs", "184", "--variants", "off,tuned"],
        [
            *("--minions", "200", "--jobs", "10", "--processes", "1"),
            *("--submitters", "2", "--max-wait", "600", "--decide-calls", "5"),
            *("--max-master-jobs", "500", "--exempt-pool", "3"),
            *("--output-name", "storm-small"),
        ],
    ],
)
def test_the_reproduce_line_parses_back_to_the_same_options(words) -> None:
    options = _parse(words)
    line = options.reproduce_command()
    assert line.startswith(COMMAND)
    assert _parse(line.removeprefix(COMMAND).split()) == options


def test_the_reproduce_line_names_the_report_when_it_is_not_the_default() -> None:
    line = _parse(["--output-name", "storm-capacity-1000"]).reproduce_command()
    assert line == "nox -s bench -- storm --output-name storm-capacity-1000"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ["--variants", "all"],
            "comma-separated list without repetition of off, on, pools",
        ),
        (["--variants", "on,on"], "without repetition"),
        (["--output-name", "../storm"], "invalid report name"),
        (["--output-name", "results/storm"], "invalid report name"),
        (["--max-wait", "0"], "must be more than 0 seconds"),
        (["--exempt-pool", "-1"], "must not be negative"),
        (["--exempt-pool", "4"], "every master has 4 MWorkers in all, so at most 3"),
        (["--consumer-rate", "-5"], "must be 0 or more events per second"),
        (["--consumer-rate", "fast"], "not a number of events per second"),
        (["--consumer-rate", "nan"], "must be 0 or more events per second"),
        (["--slice-min-targets", "-1"], "must not be negative"),
    ],
)
def test_a_bad_flag_is_a_usage_error_that_names_the_problem(
    words, message, capsys
) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse(words)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_the_limiter_on_master_gets_the_options_rate_limiting() -> None:
    limits = StormOptions(max_master_jobs=1000, exempt_pool=0).rate_limiting()
    assert (limits.max_master_jobs, limits.exempt_pool_workers) == (1000, 0)


def test_publishing_in_slices_reaches_only_the_limiter_on_masters_settings() -> None:
    plain = StormOptions().limiter_master_options(4)
    assert plain == StormOptions().rate_limiting().master_options(4 - EXEMPT_POOL)
    # Salt's target_delay, read from Salt
    assert plain["rate_limiting"]["slices"] == {"min_targets": 100, "target_delay": 2}
    fixed = StormOptions(slice_target_delay=0).limiter_master_options(4)
    assert fixed["rate_limiting"]["slices"] == {
        "min_targets": 100,
        "target_delay": None,
    }
    unsliced = StormOptions(slice_min_targets=0).limiter_master_options(4)
    assert "slices" not in unsliced["rate_limiting"]
    assert unsliced["worker_pools"] == plain["worker_pools"]


def test_each_variant_gets_a_consumer_of_its_own_unless_the_rate_is_0() -> None:
    from benchmarks.storm.run import consumer_settings

    on = consumer_settings("on", StormOptions(consumer_rate=80))
    assert on is not None and (on.rate, on.name) == (80, "storm-on")
    assert consumer_settings("off", StormOptions()).name == "storm-off"
    assert consumer_settings("on", StormOptions(consumer_rate=0)) is None


@pytest.mark.parametrize("exempt", [0, 1, 3])
def test_the_limiter_on_master_has_as_many_mworkers_as_the_others(exempt) -> None:
    from benchmarks.salt_trees import MASTER_MWORKERS

    pools = StormOptions(exempt_pool=exempt).limiter_master_options().get(
        "worker_pools"
    ) or {"default": {"worker_count": MASTER_MWORKERS}}
    assert sum(pool["worker_count"] for pool in pools.values()) == MASTER_MWORKERS


def test_an_exempt_pool_that_leaves_no_default_worker_is_refused() -> None:
    with pytest.raises(ValueError, match="leaves no MWorker of 4"):
        StormOptions(exempt_pool=4).limiter_master_options(4)


def test_the_pools_master_has_the_limiter_on_pools_and_no_limiter() -> None:
    options = StormOptions(variants=("on", "off", "pools"), exempt_pool=2)
    on = options.master_options("on")
    pools = options.master_options("pools")
    assert on is not None and pools is not None
    assert pools == {"worker_pools": on["worker_pools"]}
    assert pools["worker_pools"]["exempt"]["worker_count"] == 2
    assert "test.ping" in pools["worker_pools"]["exempt"]["functions"]
    assert options.master_options("off") is None


def test_variants_run_in_the_order_given() -> None:
    assert _parse(["--variants", "pools, off"]).variants == ("pools", "off")
    assert _parse(["--variants", "both"]).variants == ("on", "off")


def test_pools_without_an_exempt_pool_is_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="needs an exempt pool"):
        _parse(["--variants", "pools", "--exempt-pool", "0"])


def test_the_prio_variant_is_off_with_minions_that_send_presence_returns_first(
    tmp_path,
) -> None:
    from benchmarks.storm.run import _fleet_stack

    options = _parse(["--variants", "off,prio"])
    assert options.variants == ("off", "prio")
    assert options.master_options("prio") is None
    assert options.priority_functions("prio") == ("test.ping", "saltutil.find_job")
    for variant in ("off", "on", "pools", "tuned"):
        assert options.priority_functions(variant) == ()
    fleets = {
        name: _fleet_stack(name, options, tmp_path / name, None, None).settings.fleet
        for name in ("off", "prio")
    }
    assert fleets["prio"] is not None and fleets["off"] is not None
    assert fleets["prio"].return_priority_functions == (
        "test.ping",
        "saltutil.find_job",
    )
    assert fleets["off"].return_priority_functions == ()
    # nothing else differs between the two fleets
    assert fleets["prio"].timing == fleets["off"].timing


def test_the_tuned_master_has_3008_3_knobs_and_as_many_mworkers() -> None:
    from benchmarks.salt_trees import MASTER_MWORKERS

    tuned = StormOptions(variants=("tuned",)).master_options("tuned")
    assert tuned is not None and tuned["master_async_mworker"] is True
    pools = tuned["worker_pools"]
    assert pools["publish"]["commands"] == ["publish"]
    assert sum(pool["worker_count"] for pool in pools.values()) == MASTER_MWORKERS
    assert "rate_limiting" not in tuned


def test_the_minion_model_defaults_to_the_limiters_budget_per_minion() -> None:
    from benchmarks.storm.options import DEFAULT_MINION_PROCESS_LIMIT

    assert StormOptions().minion_jobs == StormOptions().rate_limiting().max_minion_jobs
    assert DEFAULT_MINION_PROCESS_LIMIT == 184


def test_the_pools_prio_variant_is_pools_with_prios_minions() -> None:
    options = _parse(["--variants", "pools,pools-prio"])
    assert options.master_options("pools-prio") == options.master_options("pools")
    assert options.master_of("pools-prio") == "pools"
    assert options.master_options("pools-prio") is not None
    assert options.priority_functions("pools-prio") == (
        "test.ping",
        "saltutil.find_job",
    )


def test_pools_prio_without_an_exempt_pool_is_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="pools-prio needs an exempt"):
        _parse(["--variants", "off,pools-prio", "--exempt-pool", "0"])


def test_every_minion_variant_runs_a_master_every_comparison_has() -> None:
    from benchmarks.salt_trees import MASTER_VARIANTS
    from benchmarks.storm.options import MINION_VARIANTS

    for variant in MINION_VARIANTS:
        assert variant.master in MASTER_VARIANTS, variant
        assert StormOptions.master_of(variant.name) == variant.master
