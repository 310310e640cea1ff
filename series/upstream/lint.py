"""The formatters and linters a PR's base pins, run on the files the PR touches.

Pins are read from the base, never assumed:

- ``.pre-commit-config.yaml`` (a checkout): the hooks that are Python packages
  on the index - black, isort, pyupgrade, bandit - at the hook's ``rev``, with
  the hook's ``args``, ``files`` and ``exclude``. pre-commit itself would clone
  each hook's repository from GitHub, which this machine cannot reach, so the
  tools run directly; every other hook is listed as not run, and
  ``lint-salt``/``lint-tests`` are skipped as upstream's CI skips them.
- ``requirements/static/ci/py3.<minor>/lint.lock``: pylint (with saltpylint
  and astroid) and, without a pre-commit configuration, isort. The sdist has
  only this, so black, pyupgrade and bandit are "not pinned by the base".

Each (tool, version) gets its own venv under ``<workdir>/tools/``; it holds
the tool, not Salt's dependencies, so pylint's import-error is switched off. A tool fails
a PR only with findings the PR introduces: the same tool runs on the touched
files as they were before the PR, and findings already there are counted,
not held against it. Without the base's ``.pylintrc`` (the sdist has none)
pylint runs with its default checks minus conventions and refactoring
suggestions, whose defaults contradict Salt's style, the loader's dunders
(``__salt__``, ``__opts__``, ...) are not reported as undefined, and only its
errors fail a PR: its new warnings are listed, not judged.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from series.upstream.errors import UpstreamError

_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)")
_LOCK_DIR = re.compile(r"^py3\.(\d+)$")
# hook repository (its tail) -> tool that is a package on the index of that name
_PYPI_HOOKS = {
    "black": ("psf/black", "psf/black-pre-commit-mirror"),
    "isort": ("timothycrosley/isort", "pycqa/isort"),
    "pyupgrade": ("asottile/pyupgrade",),
    "bandit": ("pycqa/bandit",),
}
# hooks upstream's CI skips in the pre-commit job (pylint runs in its own job)
_CI_SKIPPED = ("lint-salt", "lint-tests")
# fix-mode tools judge a file; pylint and bandit report messages
FILE_TOOLS = ("black", "isort", "pyupgrade")
NOT_PINNED = "not pinned by the base"
# Salt's loader injects __salt__, __opts__, __grains__, ... into modules; Salt's
# .pylintrc declares them, and without it each would be an "undefined variable".
_LOADER_DUNDER = re.compile(
    r"E0602 \(undefined-variable\) Undefined variable '__\w+__'"
    r"|E1101 \(no-member\) Module '[\w.]+' has no '__\w+__' member"
)
TOOL_TIMEOUT = 900
#: the tree before and the tree after a PR are linted at once, into one log
_LOG_LOCK = threading.Lock()


@dataclass(frozen=True)
class Tool:
    """One tool at the version the base pins, and how the base runs it."""

    name: str
    version: str
    requirements: tuple[str, ...]
    source: str
    args: tuple[str, ...] = ()
    files: str | None = None
    exclude: str | None = None
    hook: str = ""

    @property
    def label(self) -> str:
        """``isort 5.13.2`` or ``bandit 1.7.7 (bandit-salt)``."""
        hook = f" ({self.hook})" if self.hook and self.hook != self.name else ""
        return f"{self.name} {self.version}{hook}"

    def selects(self, path: str) -> bool:
        """True when this tool checks ``path`` (Python files, the hook's filters)."""
        if not path.endswith(".py"):
            return False
        if self.files and not re.search(self.files, path):
            return False
        return not (self.exclude and re.search(self.exclude, path))


@dataclass(frozen=True)
class LintPlan:
    """What the base pins (tools) and what it does not or cannot run (not_run)."""

    tools: tuple[Tool, ...]
    not_run: tuple[str, ...]


def read_lock(text: str) -> dict[str, str]:
    """``name==version`` pins of a pip-compile lock file, names lower-cased."""
    pins = {}
    for raw in text.splitlines():
        match = _PIN.match(raw.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def lock_file(base: Path, python_minor: int) -> Path | None:
    """The base's ``lint.lock`` for Python 3.<python_minor>, else its newest one."""
    ci = base / "requirements" / "static" / "ci"
    candidates = {}
    for path in ci.glob("py3.*/lint.lock"):
        match = _LOCK_DIR.match(path.parent.name)
        if match:
            candidates[int(match.group(1))] = path
    if not candidates:
        return None
    return candidates.get(python_minor, candidates[max(candidates)])


def read_precommit(text: str, source: str) -> tuple[list[Tool], list[str]]:
    """Tools runnable from the index, and the hooks that are not, of a config."""
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UpstreamError(f"{source}: not valid YAML: {exc}") from None
    repos = config.get("repos") if isinstance(config, dict) else None
    if not isinstance(repos, list):
        raise UpstreamError(f"{source}: no 'repos' list")
    tools: list[Tool] = []
    not_run: list[str] = []
    for repo in repos:
        if not isinstance(repo, dict):
            continue
        url = str(repo.get("repo", ""))
        rev = str(repo.get("rev", ""))
        hooks = repo.get("hooks") or []
        tail = "/".join(url.rstrip("/").split("/")[-2:]).lower()
        tool = next((t for t, tails in _PYPI_HOOKS.items() if tail in tails), None)
        for hook in hooks:
            if not isinstance(hook, dict):
                continue
            hook_id = str(hook.get("id", ""))
            if hook_id in _CI_SKIPPED:
                not_run.append(f"{hook_id}: skipped in upstream's CI pre-commit job")
            elif tool is None or not rev:
                not_run.append(
                    f"{hook_id} ({tail}@{rev}): its hook repository is not on the "
                    "package index and GitHub is not reachable here"
                )
            else:
                tools.append(_hook_tool(tool, rev, hook, source))
    return tools, not_run


def _hook_tool(tool: str, rev: str, hook: dict[str, Any], source: str) -> Tool:
    version = rev[1:] if rev.startswith("v") else rev
    extra = tuple(str(d) for d in hook.get("additional_dependencies") or [])
    return Tool(
        name=tool,
        version=version,
        requirements=(f"{tool}=={version}", *extra),
        source=f"{source} ({rev})",
        args=tuple(str(a) for a in hook.get("args") or []),
        files=hook.get("files"),
        exclude=hook.get("exclude"),
        hook=str(hook.get("alias") or hook.get("id", tool)),
    )


def plan(base: Path, python_minor: int) -> LintPlan:
    """What to run for a PR on ``base`` (a checked-out tree)."""
    tools: list[Tool] = []
    not_run: list[str] = []
    config = base / ".pre-commit-config.yaml"
    if config.exists():
        tools, not_run = read_precommit(config.read_text(), config.name)
    else:
        not_run += [
            f"{name}: {NOT_PINNED} (no .pre-commit-config.yaml)"
            for name in ("black", "pyupgrade", "bandit")
        ]
    lock = lock_file(base, python_minor)
    if lock is None:
        not_run.append(
            f"pylint: {NOT_PINNED} (no requirements/static/ci/py3.*/lint.lock)"
        )
        return LintPlan(tuple(tools), tuple(not_run))
    pins = read_lock(lock.read_text())
    where = str(lock.relative_to(base))
    if "pylint" in pins:
        reqs = [f"pylint=={pins['pylint']}"]
        reqs += [f"{n}=={pins[n]}" for n in ("saltpylint", "astroid") if n in pins]
        tools.append(Tool("pylint", pins["pylint"], tuple(reqs), where))
    else:
        not_run.append(f"pylint: {NOT_PINNED} ({where} has no pylint)")
    if "isort" in pins and not any(t.name == "isort" for t in tools):
        tools.append(Tool("isort", pins["isort"], (f"isort=={pins['isort']}",), where))
    return LintPlan(tuple(tools), tuple(not_run))


@dataclass
class ToolResult:
    """One tool's verdict on a PR."""

    tool: Tool
    ok: bool
    new: list[str] = field(default_factory=list)
    preexisting: int = 0
    error: str = ""
    files: int = 0
    # new findings shown but not held against the PR (see _judged)
    advisory: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line: the tool, and what it found."""
        if self.error:
            return f"{self.tool.label}: error: {self.error}"
        if not self.files:
            return f"{self.tool.label}: no files to check"
        verdict = "pass" if self.ok else f"{len(self.new)} new finding(s)"
        before = f", {self.preexisting} already in the base" if self.preexisting else ""
        advisory = (
            f"; {len(self.advisory)} new warning(s) not judged: the base has no "
            ".pylintrc to say which Salt enables"
            if self.advisory
            else ""
        )
        return f"{self.tool.label}: {verdict} ({self.files} file(s){before}){advisory}"


def ensure_venv(tool: Tool, tools_dir: Path) -> Path:
    """The venv of ``tool`` (created and installed once); its bin directory."""
    key = f"{tool.name}-{tool.version}"
    if len(tool.requirements) > 1:
        digest = hashlib.sha256("\n".join(tool.requirements).encode()).hexdigest()
        key += "-" + digest[:10]
    venv = tools_dir / key
    marker = venv / "saltfleet-installed.txt"
    wanted = "\n".join(tool.requirements) + "\n"
    if marker.exists() and marker.read_text() == wanted:
        return venv / "bin"
    if venv.exists():
        shutil.rmtree(venv)
    _run([sys.executable, "-m", "venv", str(venv)], what=f"venv for {tool.label}")
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *tool.requirements,
        ],
        what=f"pip install {' '.join(tool.requirements)}",
    )
    marker.write_text(wanted)
    return venv / "bin"


def _run(cmd: list[str], *, what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT)
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [""]
        raise UpstreamError(f"{what} failed: {tail[0]}")


def run_tool(
    tool: Tool, bindir: Path, after: Path, before: Path, files: list[str], log: Path
) -> ToolResult:
    """Run ``tool`` on ``files`` in the PR tree and in the tree before the PR.

    ``after`` and ``before`` are scratch trees holding the files (and the
    base's configuration files); fix-mode tools change them. The two runs
    are independent and go at once (pylint on Salt's larger modules takes
    tens of seconds a tree, on one core); when one fails, its error is
    raised once the other has ended (each is bounded by TOOL_TIMEOUT).
    """
    selected = [f for f in files if tool.selects(f)]
    result = ToolResult(tool, ok=True, files=len(selected))
    if not selected:
        return result
    existing = [f for f in selected if (before / f).exists()]
    with ThreadPoolExecutor(max_workers=1) as other:
        on_after = other.submit(_findings, tool, bindir, after, selected, log)
        found_before = (
            _findings(tool, bindir, before, existing, log) if existing else []
        )
        found_after = on_after.result()
    remaining = Counter(found_before)
    for finding in found_after:
        if remaining[finding]:
            remaining[finding] -= 1
            result.preexisting += 1
        elif _judged(tool, after, finding):
            result.new.append(finding)
        else:
            result.advisory.append(finding)
    result.ok = not result.new
    return result


def _judged(tool: Tool, tree: Path, finding: str) -> bool:
    """Whether a new finding fails the PR.

    Always, except pylint's warnings when the base has no ``.pylintrc``: which
    of them Salt enables is its configuration's to say, and the sdist does not
    ship it. Errors (E, F) are errors under any configuration.
    """
    if tool.name != "pylint" or (tree / ".pylintrc").exists():
        return True
    return re.search(r": [EF]\d{4} ", finding) is not None


def _findings(
    tool: Tool, bindir: Path, tree: Path, files: list[str], log: Path
) -> list[str]:
    if tool.name in FILE_TOOLS:
        return _file_findings(tool, bindir, tree, files, log)
    if tool.name == "pylint":
        rc = tree / ".pylintrc"
        config = [f"--rcfile={rc}"] if rc.exists() else ["--disable=C,R"]
        cmd = [
            str(bindir / "pylint"),
            *config,
            # the venv holds the linters, not Salt's dependencies
            "--disable=I,import-error",
            "--score=n",
            "--persistent=n",
            "--msg-template={path}: {msg_id} ({symbol}) {msg}",
            *tool.args,
            *files,
        ]
        pattern = re.compile(r"^\S+\.py: [A-Z]\d{4} ")
        if not rc.exists():
            output = _logged(cmd, tree, log)
            return [
                line
                for line in output.splitlines()
                if pattern.match(line) and not _LOADER_DUNDER.search(line)
            ]
    else:  # bandit
        cmd = [
            str(bindir / "bandit"),
            "-q",
            "-f",
            "custom",
            "--msg-template",
            "{relpath}: {test_id} {msg}",
            *tool.args,
            *files,
        ]
        pattern = re.compile(r"^\S+\.py: B\d{3} ")
    output = _logged(cmd, tree, log)
    return [line for line in output.splitlines() if pattern.match(line)]


def _file_findings(
    tool: Tool, bindir: Path, tree: Path, files: list[str], log: Path
) -> list[str]:
    """Fix-mode: a file the tool rewrites is a finding."""
    before = {f: (tree / f).read_bytes() for f in files}
    quiet = {"black": ["-q"], "isort": ["-q"], "pyupgrade": []}[tool.name]
    _logged([str(bindir / tool.name), *quiet, *tool.args, *files], tree, log)
    return [
        f"{f}: would be rewritten by {tool.name}"
        for f in files
        if (tree / f).read_bytes() != before[f]
    ]


def _logged(cmd: list[str], cwd: Path, log: Path) -> str:
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)},
        )
    except subprocess.TimeoutExpired:
        raise UpstreamError(
            f"{Path(cmd[0]).name} ran longer than {TOOL_TIMEOUT} s"
        ) from None
    with _LOG_LOCK, log.open("a") as fh:
        fh.write(f"$ (cd {cwd} && {' '.join(cmd)})\n{proc.stdout}{proc.stderr}\n")
    return proc.stdout
