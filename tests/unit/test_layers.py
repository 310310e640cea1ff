"""The import graph of our packages follows the layer table of docs/ARCHITECTURE.md.

A package imports only packages on a floor below its own (never one beside
or above it), and ``evil_minions`` is imported only by the stack (through
``evil_minions/__init__.py``), by its own tests and the stack's, and by the
integration tests. Every import counts, also those inside functions and
``TYPE_CHECKING`` blocks: a type-level import back up is still a cycle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
SIMULATOR = "evil_minions"
STACK = "harness"
#: test trees that may import the simulator besides the stack itself
SIMULATOR_TESTS = (
    "tests/unit/evil_minions/",
    "tests/unit/harness/",
    "tests/integration/",
)
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([a-z_]+)`\s*\|")


class Violation(NamedTuple):
    """One import that breaks the layers: where, what, and which rule."""

    path: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.imported}: {self.rule}"


def read_floors(text: str) -> dict[str, int]:
    """Package -> floor, from the ``| floor | package | ...`` rows of the table."""
    floors = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            floors[match.group(2)] = int(match.group(1))
    return floors


def _imported(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                base = parts if is_package else parts[:-1]
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def check(root: Path, floors: dict[str, int]) -> list[Violation]:
    """Every import under ``root`` that breaks the layers of ``floors``."""
    violations = []
    for package in sorted(floors):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            module = rel.removesuffix(".py").replace("/", ".")
            tree = ast.parse(path.read_text(), filename=rel)
            for line, name in _imported(tree, module, path.name == "__init__.py"):
                target = name.split(".")[0]
                if target == package or target not in floors:
                    continue
                if floors[target] >= floors[package]:
                    where = "beside" if floors[target] == floors[package] else "above"
                    rule = f"{target} is {where} {package} (floor {floors[package]})"
                    violations.append(Violation(rel, line, name, rule))
                elif target == SIMULATOR and not _may_use_simulator(package, rel):
                    rule = f"only {STACK} and its tests import {SIMULATOR}"
                    violations.append(Violation(rel, line, name, rule))
                elif target == SIMULATOR and package == STACK and name != SIMULATOR:
                    rule = f"{STACK} takes the simulator from {SIMULATOR}/__init__.py"
                    violations.append(Violation(rel, line, name, rule))
    return violations


def _may_use_simulator(package: str, rel: str) -> bool:
    return package == STACK or rel.startswith(SIMULATOR_TESTS)


def test_the_table_names_every_package_of_ours() -> None:
    floors = read_floors(ARCHITECTURE.read_text())
    ours = {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name != "salt"
    }
    assert set(floors) == ours, f"docs/ARCHITECTURE.md's layer table: {floors}"
    assert floors[SIMULATOR] < floors[STACK] < floors["tests"]


def test_no_import_breaks_the_layers() -> None:
    violations = check(ROOT, read_floors(ARCHITECTURE.read_text()))
    assert not violations, "\n".join(map(str, violations))


@pytest.mark.parametrize(
    "path,source,rule",
    [
        ("evil_minions/a.py", "from harness import stack\n", "above evil_minions"),
        ("harness/a.py", "def f():\n    import tour.run\n", "above harness"),
        ("tour/a.py", "from benchmarks.storm import run\n", "beside tour"),
        ("series/a.py", "import evil_minions\n", "only harness"),
        ("harness/a.py", "from evil_minions.keys import x\n", "__init__.py"),
        ("tests/unit/tour/a.py", "from evil_minions import x\n", "only harness"),
        ("tour/sub/a.py", "from ...harness import x\n", None),
        ("tour/a.py", "from . import registry\n", None),
    ],
)
def test_a_bad_import_is_named(
    tmp_path: Path, path: str, source: str, rule: str | None
) -> None:
    floors = {"evil_minions": 0, "harness": 1, "tour": 2, "benchmarks": 2}
    floors |= {"series": 2, "tests": 3}
    file = tmp_path / path
    file.parent.mkdir(parents=True)
    file.write_text(source)
    violations = check(tmp_path, floors)
    if rule is None:
        assert violations == []
    else:
        assert len(violations) == 1
        assert violations[0].path == path
        assert rule in violations[0].rule
