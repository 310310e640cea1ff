"""The README's set-up lines and what CI runs are the same command."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def readme_setup_lines() -> dict[str, str]:
    """The README's indented set-up lines, by the nox session they end with."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set up and run") : text.index("## What is here")]
    lines = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    return {line.rsplit(" ", 1)[1]: line for line in lines if "nox -s" in line}


def ci_lines() -> list[str]:
    """The command lines of ``.ci/run`` (no comments, no shell options)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [
        line for line in lines if line and not line.startswith(("#", "set ", "cd "))
    ]


def test_ci_runs_the_readme_test_line_verbatim_first() -> None:
    setup = readme_setup_lines()
    assert set(setup) == {"demo", "tests"}
    assert ci_lines()[0] == setup["tests"]


def test_ci_then_lints_and_checks_the_upstream_prs() -> None:
    assert ci_lines()[1:] == [
        "python3 -m nox -s lint",
        "exec python3 -m nox -s upstream -- --base 3008.x --draft",
    ]


def test_the_setup_lines_work_where_the_system_pip_refuses_installs() -> None:
    # PEP 668: on stock Debian/Ubuntu `python3 -m pip install` outside a
    # virtual environment stops with externally-managed-environment.
    for line in readme_setup_lines().values():
        first = line.split(" && ")
        assert first[0] == "python3 -m venv .venv", line
        assert first[1] == ". .venv/bin/activate", line
        assert first[2].startswith("python3 -m pip install"), line
