"""``python -m series.upstream`` (``nox -s upstream``): build and check the PRs.

For each pull request of ``patches/prs.toml`` (or those ``--only``/``--base``
select): build its commits on its base, write ``<workdir>/<id>/PR.md``, run
the tests, the base's linters and upstream's changelog rule, and print one
table row. ``<workdir>/summary.md`` has the table and every detail. Exit 0
only when every selected PR applies and passes; ``--draft`` allows
placeholder issue numbers and a placeholder author, and names them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.utils import parseaddr
from pathlib import Path

from harness import argtypes
from harness.entrypoint import run_harness_cli
from series import vendor
from series.upstream import base as bases
from series.upstream import build, changelog, describe, lint, prmap, testrun
from series.upstream.errors import UpstreamError
from series.upstream.patchfile import is_placeholder_email, read_patches

DEFAULT_WORKDIR = Path(".saltfleet") / "upstream"
PLACEHOLDER_AUTHOR = build.Identity("saltfleet developers", "dev@saltfleet.invalid")
COLUMNS = ("PR", "base", "applies", "tests", "lint", "changelog")


@dataclass
class Row:
    """One PR's line in the table, and the details for summary.md."""

    pr: prmap.PullRequest
    base: str
    applies: str = "-"
    tests: str = "-"
    lint: str = "-"
    changelog: str = "-"
    ok: bool = False
    details: list[str] = field(default_factory=list)
    #: wall-clock seconds of each step that ran, in order: build (the base
    #: included, downloaded for the first PR on it), tests, lint
    seconds: dict[str, float] = field(default_factory=dict)

    def timing(self) -> str:
        """``75 s: build 9, tests 38, lint 28``: where the PR's time went."""
        steps = ", ".join(f"{step} {sec:.0f}" for step, sec in self.seconds.items())
        return f"{sum(self.seconds.values()):.0f} s: {steps}" if steps else ""

    def cells(self) -> tuple[str, ...]:
        """The table's cells, in :data:`COLUMNS` order."""
        return (
            self.pr.id,
            self.base,
            self.applies,
            self.tests,
            self.lint,
            self.changelog,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the workflow; the exit code (0: every selected PR passes)."""
    return run_harness_cli(_main, argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nox -s upstream --", description=__doc__)
    parser.add_argument(
        "--draft",
        action="store_true",
        help="allow placeholder issue numbers and author (named in the output)",
    )
    parser.add_argument("--only", help="comma-separated PR ids, e.g. A,B")
    parser.add_argument(
        "--base", choices=prmap.BASES, help="only the PRs to this branch"
    )
    parser.add_argument(
        "--checkout",
        action="append",
        default=[],
        metavar="BRANCH=PATH",
        help="a Salt checkout to use as the base of BRANCH (3008.x or master)",
    )
    parser.add_argument(
        "--author",
        help="'Name <email>' of the commits (default: git config user.name/user.email)",
    )
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument(
        "--patches",
        type=Path,
        default=vendor.Layout.of_project().patches_dir,
        help="the series directory (default: the project's patches/)",
    )
    parser.add_argument(
        "--map", type=Path, help="the PR map (default: prs.toml in --patches)"
    )
    parser.add_argument(
        "--sdist",
        metavar="VERSION",
        help="the 3008.x sdist to build on (default: the newest on the package index)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter with upstream's test dependencies (default: this one)",
    )
    parser.add_argument(
        "--workers",
        type=argtypes.positive,
        default=1,
        help="pytest-xdist workers (default 1: with more, upstream's session "
        "set-up can race creating tests/integration/files and fail a test)",
    )
    parser.add_argument(
        "--test-timeout",
        type=argtypes.seconds,
        default=1800,
        help="seconds per PR (default 1800)",
    )
    parser.add_argument("--no-tests", action="store_true", help="build and lint only")
    parser.add_argument("--no-lint", action="store_true", help="build and test only")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    project = vendor.Layout.of_project()
    layout = vendor.Layout(
        upstream_file=project.upstream_file,
        patches_dir=args.patches,
        src_dir=project.src_dir,
        cache_dir=project.cache_dir,
    )
    if args.map is None:
        args.map = args.patches / "prs.toml"
    patches = read_patches(
        layout.patches_dir, [p.name for p in vendor.read_series(layout)]
    )
    the_map = prmap.load(args.map, patches, draft=args.draft)
    for warning in the_map.warnings:
        _log(f"warning: {warning}")
    selected = _select(the_map, args.only, args.base)
    author, author_note = resolve_author(args.author, draft=args.draft)
    checkouts = _checkouts(args.checkout)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    resolver = _Bases(args, layout, workdir, checkouts)
    release = _release(layout)
    rows: list[Row] = []
    for pr in selected:
        _log(f"PR {pr.id}: {pr.full_title}")
        rows.append(_process(pr, the_map, resolver, author, workdir, args))
        _write_issue(rows[-1], workdir / pr.id, release)
        _log(f"PR {pr.id}: " + " | ".join(rows[-1].cells()[2:]))
        if rows[-1].seconds:
            rows[-1].details.append(f"took {rows[-1].timing()}")
            _log(f"PR {pr.id}: took {rows[-1].timing()}")
        # rewritten after every PR: a long run that is stopped keeps what it found
        _write_summary(workdir, rows, the_map, author_note, resolver, args)
    print(render_table(rows))
    for used in resolver.resolved():
        print(f"base {used.branch}: {used.note}")
    failed = [r.pr.id for r in rows if not r.ok]
    print(f"\nsummary: {workdir / 'summary.md'}")
    if failed:
        print(f"not ready: {', '.join(failed)}")
        return 1
    print(
        "every selected PR passes"
        + (" (draft: placeholders allowed)" if args.draft else "")
    )
    return 0


def _release(layout: vendor.Layout) -> str:
    """The unpatched release an issue's reproduction runs on."""
    try:
        return vendor.read_upstream(layout.upstream_file).version
    except vendor.VendorError as exc:
        raise UpstreamError(str(exc)) from None


def _write_issue(row: Row, dest: Path, release: str) -> None:
    """ISSUE.md beside PR.md, for a PR whose issue is still to be filed."""
    text = describe.render_issue(row.pr, release)
    issue_md = dest / "ISSUE.md"
    if text is None:
        # a stale one from an earlier run would be pasted for the wrong text
        issue_md.unlink(missing_ok=True)
        if row.pr.placeholder:
            row.details.append("issue: placeholder, and no issue text in the map")
        return
    dest.mkdir(parents=True, exist_ok=True)
    issue_md.write_text(text)
    row.details.append(f"issue to file: {issue_md}")


def _select(
    the_map: prmap.PrMap, only: str | None, base: str | None
) -> list[prmap.PullRequest]:
    prs = list(the_map.prs)
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in {p.id for p in prs}]
        if unknown:
            raise UpstreamError(
                f"--only: no PR {', '.join(unknown)} in the map "
                f"(ids: {', '.join(p.id for p in prs)})"
            )
        prs = [p for p in prs if p.id in wanted]
    if base:
        prs = [p for p in prs if p.base == base]
    if not prs:
        raise UpstreamError("no PR is selected by --only/--base")
    return prs


def resolve_author(given: str | None, *, draft: bool) -> tuple[build.Identity, str]:
    """The commits' author: ``--author``, else git config; and a note about it."""
    if given is not None:
        name, email = parseaddr(given)
        if not name or "@" not in email:
            raise UpstreamError(f"--author {given!r}: expected 'Name <email>'")
        source = "--author"
    else:
        name, email = _git_config("user.name"), _git_config("user.email")
        source = "git config"
    if not name or not email:
        if not draft:
            raise UpstreamError(
                "no author identity: pass --author 'Name <email>' or set git config "
                "user.name and user.email"
            )
        return PLACEHOLDER_AUTHOR, f"placeholder author {PLACEHOLDER_AUTHOR} (draft)"
    identity = build.Identity(name, email)
    if is_placeholder_email(email):
        if not draft:
            raise UpstreamError(
                f"author {identity} ({source}) is in a domain reserved for examples; "
                "give a real identity with --author, or run with --draft"
            )
        return identity, f"placeholder author {identity} from {source} (draft)"
    return identity, f"{identity} from {source}"


def _git_config(key: str) -> str:
    proc = subprocess.run(["git", "config", key], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _checkouts(specs: list[str]) -> dict[str, Path]:
    found = {}
    for spec in specs:
        branch, sep, path = spec.partition("=")
        if not sep or branch not in prmap.BASES or not path:
            raise UpstreamError(
                f"--checkout {spec!r}: expected BRANCH=PATH with BRANCH one of "
                + ", ".join(prmap.BASES)
            )
        if not Path(path).is_dir():
            raise UpstreamError(f"--checkout {spec!r}: {path} is not a directory")
        found[branch] = Path(path)
    return found


class _Bases:
    """The bases, resolved once each and only when a selected PR needs them."""

    def __init__(
        self,
        args: argparse.Namespace,
        layout: vendor.Layout,
        workdir: Path,
        checkouts: dict[str, Path],
    ) -> None:
        self._args = args
        self._layout = layout
        self._workdir = workdir
        self._checkouts = checkouts
        self._resolved: dict[str, bases.Base] = {}

    def for_branch(self, branch: str) -> bases.Base:
        if branch not in self._resolved:
            self._resolved[branch] = self._resolve(branch)
        return self._resolved[branch]

    def resolved(self) -> list[bases.Base]:
        return list(self._resolved.values())

    def _resolve(self, branch: str) -> bases.Base:
        if branch in self._checkouts:
            return bases.checkout_base(branch, self._checkouts[branch])
        if branch == "master":
            return bases.stand_in(
                "no master checkout (--checkout master=PATH): built on the 3008.x "
                "base with its depends, to learn whether it is self-contained",
                self.for_branch("3008.x"),
            )
        try:
            upstream = vendor.read_upstream(self._layout.upstream_file)
        except vendor.VendorError as exc:
            raise UpstreamError(str(exc)) from None
        if self._args.sdist:
            version, found = self._args.sdist, "chosen with --sdist"
        else:
            _log("asking the package index for the newest 3008.x sdist")
            version, found = bases.newest_release(upstream.name, upstream.version)
        _log(f"3008.x base: salt-{version} sdist")
        return bases.sdist_base(
            version, found, self._workdir, upstream, self._layout.cache_dir
        )


def _process(
    pr: prmap.PullRequest,
    the_map: prmap.PrMap,
    resolver: _Bases,
    author: build.Identity,
    workdir: Path,
    args: argparse.Namespace,
) -> Row:
    started = time.monotonic()
    base = resolver.for_branch(pr.base)
    deps = the_map.dependency_chain(pr)
    label = base.label
    if base.stand_in and deps:
        label += " + " + ", ".join(d.id for d in deps)
    row = Row(pr, label)
    row.details.append(f"base: {base.note}")
    if base.sha256:
        row.details.append(f"base sdist sha256: {base.sha256}")
    if deps:
        row.details.append(
            "dependencies applied first: "
            + ", ".join(f"{d.id} ({d.full_title})" for d in deps)
        )
    dest = workdir / pr.id
    for scratch in ("lint-after", "lint-before"):
        shutil.rmtree(dest / scratch, ignore_errors=True)
    built = build.build(
        pr,
        deps,
        base,
        dest / "repo",
        author,
        series_repo=vendor.Layout.of_project().src_dir,
    )
    row.seconds["build"] = time.monotonic() - started
    row.details += built.notes
    row.details += [f"fragment {old} -> {new}" for old, new in built.fragments]
    if not built.applied:
        row.applies = f"no: {built.short_failure}"
        row.details.append(f"does not apply: {built.failure}")
        return row
    row.applies = "yes"
    files = build.changed_files(built.repo)
    row.changelog, changelog_ok = _changelog(pr, files, draft=args.draft)
    depends_titles = [the_map.by_id(d).full_title for d in pr.depends]
    text = describe.render(
        pr,
        describe.Requirements.from_diff(files),
        depends_titles=depends_titles,
        signed=build.signed(built.repo),
    )
    (dest / "PR.md").write_text(text)
    row.details.append(f"description: {dest / 'PR.md'}")
    tests_ok = _tests(row, built.repo, files, dest, args)
    lint_ok = _lint(row, built.repo, files, dest, workdir, args)
    row.ok = changelog_ok and tests_ok and lint_ok
    return row


def _changelog(
    pr: prmap.PullRequest, files: list[str], *, draft: bool
) -> tuple[str, bool]:
    entries = changelog.entries(files)
    if not entries:
        return "fail: no changelog/ entry", False
    findings = changelog.check_paths(files)
    real = [f for f in findings if not changelog.is_placeholder_fragment(f.path)]
    if real:
        return f"fail: {real[0].path} ({real[0].reason})", False
    names = ", ".join(Path(e).name for e in entries)
    if findings:
        return f"placeholder ({names})", draft
    return f"ok ({names})", True


def _tests(
    row: Row, repo: Path, files: list[str], dest: Path, args: argparse.Namespace
) -> bool:
    if args.no_tests:
        row.tests = "not run (--no-tests)"
        return True
    started = time.monotonic()
    paths = testrun.select(files, repo)
    row.details.append("tests run: " + (" ".join(paths) or "(none)"))
    _log(f"PR {row.pr.id}: {len(paths)} test path(s)")
    outcome = testrun.run(
        args.python,
        repo,
        paths,
        dest / "tests.log",
        timeout=args.test_timeout,
        workers=args.workers,
    )
    row.seconds["tests"] = time.monotonic() - started
    row.tests = ("pass: " if outcome.ok else "FAIL: ") + outcome.summary
    row.details.append(f"tests: {outcome.summary} (log: {dest / 'tests.log'})")
    return outcome.ok


def _lint(
    row: Row,
    repo: Path,
    files: list[str],
    dest: Path,
    workdir: Path,
    args: argparse.Namespace,
) -> bool:
    if args.no_lint:
        row.lint = "not run (--no-lint)"
        return True
    minor = _python_minor(args.python)
    plan = lint.plan(repo, minor)
    row.details += [f"lint not run: {item}" for item in plan.not_run]
    if not plan.tools:
        row.lint = "nothing pinned"
        return True
    started = time.monotonic()
    after = _worktree(repo, dest / "lint-after", "HEAD")
    before = _worktree(repo, dest / "lint-before", build.START_TAG)
    log = dest / "lint.log"
    log.write_text("")
    results = []
    for tool in plan.tools:
        _log(f"PR {row.pr.id}: {tool.label}")
        try:
            bindir = lint.ensure_venv(tool, workdir / "tools")
            result = lint.run_tool(tool, bindir, after, before, files, log)
        except UpstreamError as exc:
            result = lint.ToolResult(tool, ok=False, error=str(exc))
        results.append(result)
        row.details.append(f"lint: {result.summary()} [pinned by {tool.source}]")
        row.details += [f"  {finding}" for finding in result.new[:20]]
        row.details += [f"  (not judged) {finding}" for finding in result.advisory[:20]]
    for tree in (after, before):
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)],
            capture_output=True,
        )
    row.seconds["lint"] = time.monotonic() - started
    failed = [r.tool.name for r in results if not r.ok]
    names = "+".join(r.tool.name for r in results)
    row.lint = f"FAIL: {', '.join(failed)}" if failed else f"pass ({names})"
    return not failed


def _worktree(repo: Path, path: Path, rev: str) -> Path:
    proc = subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(path), rev],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UpstreamError(f"git worktree add {path} failed: {proc.stderr.strip()}")
    return path


def _python_minor(python: str) -> int:
    proc = subprocess.run(
        [python, "-c", "import sys; print(sys.version_info[1])"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not proc.stdout.strip().isdigit():
        raise UpstreamError(f"--python {python}: cannot run it")
    return int(proc.stdout.strip())


def render_table(rows: list[Row]) -> str:
    """The rows as a Markdown table, columns padded to line up in a terminal."""
    cells = [COLUMNS, *(r.cells() for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]

    def line(values: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True))
            + " |"
        )

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(COLUMNS), rule, *(line(r.cells()) for r in rows)])


def _write_summary(
    workdir: Path,
    rows: list[Row],
    the_map: prmap.PrMap,
    author_note: str,
    resolver: _Bases,
    args: argparse.Namespace,
) -> None:
    table = render_table(rows)
    lines = [
        "# Upstream pull requests",
        "",
        f"Map: {args.map}; {'draft' if args.draft else 'final'} run; author: {author_note}.",
        "",
        table,
        "",
    ]
    for base in resolver.resolved():
        lines.append(f"- base {base.branch}: {base.note}")
    lines += [f"- warning: {w}" for w in the_map.warnings]
    for row in rows:
        lines += ["", f"## {row.pr.id}: {row.pr.full_title}", ""]
        lines.append(
            f"- issue: {row.pr.issue}; type: {row.pr.type}; base: {row.pr.base}"
        )
        lines.append("- patches: " + "; ".join(p.subject for p in row.pr.patches))
        lines += [f"- {d}" for d in row.details]
    (workdir / "summary.md").write_text("\n".join(lines) + "\n")


def _log(message: str) -> None:
    print(f"upstream: {message}", file=sys.stderr, flush=True)
