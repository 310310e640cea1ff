"""FleetConfig is the harness's typed entry point: validation names the bad
option, it round-trips through JSON (the harness's and the supervisor's
hand-over) and the CLI's flags express every setting."""

from __future__ import annotations

import random

import pytest

from evil_minions.cli import _build_parser, config_from_args
from evil_minions.config import (
    ConfigError,
    FleetConfig,
    LatencySpec,
    TimingModel,
    minion_ids,
    parse_function_latencies,
    parse_master,
    split_evenly,
)


def test_latency_fixed_and_range():
    assert LatencySpec.parse("0.25") == LatencySpec(0.25, 0.25)
    spec = LatencySpec.parse("0.1-0.3")
    rng = random.Random(0)
    assert all(0.1 <= spec.sample(rng) <= 0.3 for _ in range(100))
    assert LatencySpec.parse(spec.render()) == spec


@pytest.mark.parametrize("text", ["", "fast", "-1", "0.5-0.1", "1-2-3"])
def test_latency_rejects(text):
    with pytest.raises(ConfigError):
        LatencySpec.parse(text)


def test_timing_applies_slowdown_and_per_function_latency():
    timing = TimingModel(
        default_latency=LatencySpec(1, 1),
        per_function={"test.ping": LatencySpec(0.5, 0.5)},
        slowdown=2.0,
    )
    rng = random.Random(0)
    assert timing.latency("test.ping", rng) == 1.0
    assert timing.latency("grains.items", rng) == 2.0
    assert timing.latency("grains.items", rng, slowdown=3.0) == 3.0


def test_function_latencies_parse():
    parsed = parse_function_latencies(["test.ping=0.01", "pkg.list_pkgs=0.5-2"])
    assert parsed["pkg.list_pkgs"] == LatencySpec(0.5, 2)
    with pytest.raises(ConfigError, match=r"MODULE\.FUNCTION=LATENCY"):
        parse_function_latencies(["ping=1"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:4506", ("127.0.0.1", 4506)),
        ("salt", ("salt", None)),
        ("[::1]:4506", ("::1", 4506)),
    ],
)
def test_parse_master(text, expected):
    assert parse_master(text) == expected


@pytest.mark.parametrize("text", ["", "127.0.0.1:http", "127.0.0.1:70000", ":4506"])
def test_parse_master_rejects(text):
    with pytest.raises(ConfigError):
        parse_master(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 0}, "--count"),
        ({"count": 2, "processes": 3}, "--processes 3 is more than --count 2"),
        ({"prefix": "bad prefix"}, "--prefix"),
        ({"transport": "carrier-pigeon"}, "--transport"),
        ({"keysize": 1024}, "--keysize"),
    ],
)
def test_fleet_config_validation_names_the_option(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        FleetConfig(**kwargs)


def test_minion_ids_are_zero_padded_and_widen():
    assert minion_ids("evil", 3) == ["evil-0001", "evil-0002", "evil-0003"]
    assert minion_ids("evil", 2, start_index=99999)[-1] == "evil-100000"


def test_split_evenly():
    parts = split_evenly([str(i) for i in range(10)], 3)
    assert [len(p) for p in parts] == [4, 3, 3]
    assert [item for part in parts for item in part] == [str(i) for i in range(10)]


def _sample_config() -> FleetConfig:
    return FleetConfig(
        master_host="10.0.0.1",
        ret_port=14506,
        publish_port=14505,
        count=50,
        processes=2,
        prefix="sim",
        keys_dir="/k",
        run_dir="/r",
        ramp_rate=25.0,
        timing=TimingModel(
            default_latency=LatencySpec(0.1, 0.2),
            per_function={"pkg.list_pkgs": LatencySpec(1, 2)},
            slowdown=1.5,
            max_concurrent_jobs=2,
            exempt_functions=frozenset({"saltutil.find_job"}),
        ),
        replay_file="/replay.json",
        replay_first=True,
        startup_pillar=False,
        state_pillar=False,
        return_retry_timer=2,
        return_retry_tries=4,
        return_priority_functions=("test.ping", "saltutil.find_job"),
        seed=3,
    )


def test_json_round_trip():
    cfg = _sample_config()
    assert FleetConfig.from_json(cfg.to_json()) == cfg


def test_argv_round_trip_through_the_cli_parser():
    cfg = _sample_config()
    argv = [
        "--master", "10.0.0.1:14506", "--publish-port", "14505",
        "--count", "50", "--processes", "2", "--prefix", "sim",
        "--keys-dir", "/k", "--run-dir", "/r", "--ramp-rate", "25",
        "--latency", "0.1-0.2", "--function-latency", "pkg.list_pkgs=1-2",
        "--slowdown", "1.5", "--max-concurrent-jobs", "2",
        "--exempt-functions", "saltutil.find_job",
        "--replay", "/replay.json", "--replay-first", "--no-startup-pillar",
        "--no-state-pillar",
        "--return-retry-timer", "2", "--return-retry-tries", "4",
        "--return-priority-functions", "test.ping,saltutil.find_job",
        "--seed", "3",
    ]  # fmt: skip
    args = _build_parser().parse_args(["run", *argv])
    assert config_from_args(args) == cfg


def test_run_reads_the_config_file_a_harness_writes(tmp_path):
    cfg = _sample_config()
    path = tmp_path / "fleet.json"
    path.write_text(cfg.to_json())
    args = _build_parser().parse_args(["run", "--config", str(path)])
    assert config_from_args(args) == cfg
    mixed = _build_parser().parse_args(
        ["run", "--config", str(path), "--count", "3", "--slowdown", "2"]
    )
    with pytest.raises(ConfigError, match=r"drop --count, --slowdown$"):
        config_from_args(mixed)


def test_a_broken_config_file_is_named(tmp_path):
    path = tmp_path / "fleet.json"
    path.write_text("{}")
    with pytest.raises(ConfigError, match=f"{path} is not a fleet config"):
        FleetConfig.load(path)
    with pytest.raises(ConfigError, match="cannot read fleet config"):
        FleetConfig.load(tmp_path / "missing.json")


def test_cli_defaults_are_fleet_config_defaults():
    args = _build_parser().parse_args(["run", "--master", "127.0.0.1"])
    assert config_from_args(args) == FleetConfig()
