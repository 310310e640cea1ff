"""The benchmark names nox checks before installing anything are the CLI's names.

``nox -s bench -- nosuchbench`` used to install every dependency (about a
minute) before the CLI said no; the session now asks ``unknown_benchmark``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from benchmarks.__main__ import RUNS, main
from benchmarks.names import BENCHMARKS, unknown_benchmark


def test_an_unknown_name_is_refused_with_the_valid_choices() -> None:
    message = unknown_benchmark(["nosuchbench", "--minions", "5"])
    assert message == (
        "unknown benchmark 'nosuchbench': choose from minions, pillar, interfaces, storm, query, "
        "pkgstates, pillar-compile, router, client-drain, job-cache"
    )


@pytest.mark.parametrize(
    "args", [["storm", "--jobs", "5"], ["pillar"], [], ["--help"], ["-h"]]
)
def test_names_and_help_are_left_to_the_cli(args: list[str]) -> None:
    assert unknown_benchmark(args) is None


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_name_is_a_benchmark_of_the_cli(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"python -m benchmarks {name}" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_benchmark_runs_with_its_options_at_their_defaults(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.md"
    report.write_text("the report\n")
    passed: list[Any] = []
    with mock.patch.object(importlib, "import_module") as load:
        load.return_value.run.side_effect = lambda value: passed.append(value) or report
        assert main([name]) == 0
    assert f"report: {report}" in capsys.readouterr().out
    module_name, options_class = RUNS[name]
    load.assert_called_once_with(module_name)
    assert passed == [options_class()]
    assert passed[0].reproduce_command() == f"nox -s bench -- {name}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["interfaces", "--runs", "2"], "--runs 2: at least 3"),
        (["router", "--runs", "1"], "--runs 1: at least 3"),
        (["pillar-compile", "--fleet", "10"], "exceed --fleet 10"),
        (["pillar", "--variants", "nosuch"], "invalid variants 'nosuch'"),
        (["client-drain", "--rates", "0,-5"], "'0,-5': want whole numbers"),
        (["client-drain", "--rates", "100,100"], "each once"),
        (["client-drain", "--rates", "fast"], "'fast': want whole numbers"),
        (["job-cache", "--minions", "0,100"], "want whole numbers of minions, 1 or"),
        (["job-cache", "--minions", "100,100"], "each once (e.g. 100,1000)"),
        (["job-cache", "--minions", "many"], "'many': want whole numbers of minions"),
        (["job-cache", "--minions", ""], "'': want whole numbers of minions"),
        (["job-cache", "--runs", "2"], "--runs 2: at least 3"),
        (["job-cache", "--warmup", "0"], "--warmup"),
        (["job-cache", "--output-name", "../x"], "invalid report name '../x'"),
    ],
)
def test_bad_sizes_are_a_usage_error_not_a_traceback(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_changed_size_is_in_the_reproduce_line() -> None:
    value = RUNS["query"][1](minions=50, no_live=True)
    assert value.reproduce_command() == "nox -s bench -- query --minions 50 --no-live"
