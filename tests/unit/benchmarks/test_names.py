"""The benchmark names nox checks before installing anything are the CLI's names.

``nox -s bench -- nosuchbench`` used to install every dependency (about a
minute) before the CLI said no; the session now asks ``unknown_benchmark``.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from benchmarks.__main__ import PLAIN_RUNS, main
from benchmarks.names import BENCHMARKS, unknown_benchmark


def test_an_unknown_name_is_refused_with_the_valid_choices() -> None:
    message = unknown_benchmark(["nosuchbench", "--minions", "5"])
    assert message == (
        "unknown benchmark 'nosuchbench': choose from minions, pillar, interfaces, storm, query, "
        "pkgstates, pillar-compile, router"
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


@pytest.mark.parametrize("name", sorted(PLAIN_RUNS))
def test_every_plain_benchmark_gets_exactly_its_run_keywords(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.md"
    report.write_text("the report\n")
    passed: list[dict[str, Any]] = []
    with mock.patch.object(importlib, "import_module") as load:
        load.return_value.run.side_effect = lambda **kw: passed.append(kw) or report
        assert main([name]) == 0
    assert f"report: {report}" in capsys.readouterr().out
    module = importlib.import_module(PLAIN_RUNS[name][0])
    assert set(passed[0]) == set(inspect.signature(module.run).parameters)
