"""The tests upstream's CI would run for a PR, run on the PR's tree.

Selected like upstream's ``--from-filenames`` and ``tests/filename_map.yml``
(docs/upstream/checks.md): the PR's own new or changed test files; for every
``salt/<dirs>/<module>.py`` it touches, the area ``tests/pytests/unit/<dirs>``
(``tests/pytests/unit/test_<module>.py`` for a top-level module); and the
set the map's ``'*'`` entry always runs. Only paths the tree has are run.

An area of more than :data:`AREA_LIMIT` test modules (``modules``, ``states``
and ``utils`` in 3008: hundreds of modules, each about one Salt module) is not
one topic; there the module's own tests are taken by upstream's naming
convention, ``tests/{pytests/,}unit/<dirs>/test_<module>.py``, as
``--from-filenames`` would.

The tests run with the interpreter given (the tests venv, which has upstream's
test dependencies), against the tree itself: ``PYTHONPATH=<tree>`` and
upstream's own conftest, not this project's pytest configuration. A test
that failed only upstream's 50 ms asyncio slow-callback check runs again
alone (:mod:`series.timing_reruns`); the summary says so. The tests
``patches/upstream-slow-callbacks`` lists run with a raised threshold.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from series import timing_reruns, vendor

ALWAYS = (
    "tests/pytests/unit/utils/test_versions.py",
    "tests/unit/test_module_names.py",
    "tests/unit/test_virtualname.py",
    "tests/unit/utils/test_doc.py",
)
_COUNTS = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)"
)
NO_TESTS_COLLECTED = 5
#: upstream tests over the 50 ms slow-callback check on the pristine release
SLOW_CALLBACKS = vendor.Layout.of_project().patches_dir / "upstream-slow-callbacks"
TIMING_SENSITIVE = vendor.Layout.of_project().patches_dir / "upstream-timing-sensitive"
AREA_LIMIT = 60


def select(files: list[str], tree: Path) -> list[str]:
    """Test paths (relative to ``tree``) for a PR that adds or changes ``files``."""
    paths: set[str] = set()
    for name in files:
        path = PurePosixPath(name)
        if vendor.is_test_file(name):
            paths.add(name)
        elif path.parts[0] == "salt" and path.suffix == ".py":
            paths.update(_area(path, tree))
    paths.update(ALWAYS)
    return vendor.outermost({p for p in paths if (tree / p).exists()})


def _area(module: PurePosixPath, tree: Path) -> list[str]:
    dirs = module.parts[1:-1]
    if not dirs:
        return [f"tests/pytests/unit/test_{module.stem}.py"]
    area = "/".join(("tests/pytests/unit", *dirs))
    if sum(1 for _ in (tree / area).rglob("test_*.py")) <= AREA_LIMIT:
        return [area]
    sub = "/".join(dirs)
    return [
        f"{unit}/{sub}/test_{module.stem}.py"
        for unit in ("tests/pytests/unit", "tests/unit")
    ]


@dataclass(frozen=True)
class TestOutcome:
    """What pytest said, in one line, and whether it counts as a pass."""

    ok: bool
    summary: str


def run(
    python: str,
    tree: Path,
    paths: list[str],
    log: Path,
    *,
    timeout: float,
    workers: int,
) -> TestOutcome:
    """Run ``paths`` with ``python -m pytest`` in ``tree``; output goes to ``log``."""
    if not paths:
        return TestOutcome(True, "no tests")
    cmd = [
        python,
        "-m",
        "pytest",
        "-c",
        os.devnull,
        "--rootdir",
        str(tree),
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTEST_ADDOPTS", None)
    shown = " ".join([*cmd, *paths])
    try:
        outcome = timing_reruns.run(
            cmd,
            paths,
            cwd=tree,
            env=env,
            workers=workers,
            slow_callbacks=SLOW_CALLBACKS,
            timing_sensitive=TIMING_SENSITIVE,
            capture=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else ""
        log.write_text(f"$ {shown}\n{output}\n(timed out)\n")
        return TestOutcome(False, f"timed out after {timeout:.0f} s")
    log.write_text(f"$ {shown}\n{outcome.output}")
    if outcome.returncode == NO_TESTS_COLLECTED:
        return TestOutcome(True, "no tests collected")
    # the first run's counts: a rerun's are only of the tests it ran again
    counts = summarize(outcome.runs[0] if outcome.runs else "")
    if outcome.note:
        counts = f"{counts}; {outcome.note}" if counts else outcome.note
    if outcome.returncode == 0:
        return TestOutcome(True, counts or "passed")
    return TestOutcome(False, counts or f"pytest exited {outcome.returncode}")


def summarize(output: str) -> str:
    """``3 failed, 120 passed`` from pytest's last summary line."""
    for line in reversed(output.splitlines()):
        found = _COUNTS.findall(line)
        if found and (" in " in line or line.startswith("=")):
            return ", ".join(f"{n} {word}" for n, word in found)
    return ""
