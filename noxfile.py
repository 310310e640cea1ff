"""Every saltfleet workflow is a nox session; the work lives in the packages.

nox -s demo             the main job: stack up, every scenario, report, stop
nox -s tests            patches' own tests, upstream's tests of touched
                        areas, and the project's tests (what .ci/run runs)
nox -s vendor           salt/src = pinned sdist + patches/series
nox -s export-patches   salt/src commits -> patches/
nox -s harness -- up    the stack's CLI (up / status / down / restart / sql / pillar / salt)
nox -s bench -- NAME    a benchmark (`nox -s bench -- --help` lists them); report in benchmarks/results/
nox -s load -- ...      locust through salt-api, limiter off vs on; --workers N, --master-host HOST
nox -s interfaces-report   the pkg interface conformance matrix
nox -s lint             ruff, mypy, and black on the files the series touches
nox -s upstream         the series as pull requests to Salt, checked as upstream's CI would
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nox
import nox.command

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"
ROOT = Path(__file__).resolve().parent
SALT_SRC = ROOT / "salt" / "src"
# the package-states Salt extension, found by the master through its entry point
SALTEXT = ROOT / "saltext-pkgstate"
# the query runner for stock 3008 masters, built from the query runner's patch
SALTEXT_QUERY = ROOT / "saltext-query"
# Running upstream's tests: their own conftest, not this project's pytest config.
SALT_PYTEST = ["-c", os.devnull, "--rootdir", str(SALT_SRC), "-p", "no:cacheprovider"]
# pytest keeps only failed tests' tmp_path, and nothing of a run that passed
# (upstream's run reads no ini file; ours has it in pyproject.toml). Not
# --basetemp in the checkout: tests that need a directory outside any git
# checkout (tmp_path) would find themselves inside this one.
KEEP_FAILED_TMP = ["-o", "tmp_path_retention_policy=failed"]


def _run(session: nox.Session, *args: str, **kwargs: Any) -> Any:
    """``session.run``, but a failing command's own exit code becomes nox's.

    nox turns every failed command into exit 1; the harness's codes mean
    something (75: the master's queue is full, 69: expired unpublished, 2: a
    usage error), so they reach the caller unchanged. ``install=True`` runs
    it as an install step, which ``nox --install-only`` runs too.
    """
    run = session.run_install if kwargs.pop("install", False) else session.run
    try:
        return run(*args, **kwargs)
    except nox.command.CommandFailed as exc:
        if exc.return_code is None:
            raise
        raise SystemExit(exc.return_code) from None


def _load(path: Path) -> types.ModuleType:
    """Import one module of the project by path; nox does not put ROOT on sys.path."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vendor(session: nox.Session) -> None:
    # install=True: `nox --install-only` builds the wheel from salt/src, so it
    # must vendor it first, or a fresh clone stops with "not vendored yet"
    _run(
        session,
        "python",
        "-m",
        "series",
        "vendor",
        *_vendor_args(session),
        install=True,
    )


def _vendor_args(session: nox.Session) -> list[str]:
    return ["--force"] if "--force" in session.posargs else []


def _install(session: nox.Session, *extras: str) -> None:
    """Install the project, its Salt extensions (saltext-pkgstate,
    saltext-query) and the patched Salt wheel (rebuilt per salt/src commit).

    pip runs only when something it installs changed: the wheel (a new
    salt/src commit), the extras asked for, or a pyproject.toml. The project
    and saltext-pkgstate are installed editable, so a change to their code
    needs no reinstall; saltext-query generates modules from its patch when
    it is built, so it is installed as built, again when its sources or the
    wheel change; and
    ``nox -s harness -- status`` answers in about a second.
    """
    _vendor(session)
    # once visibly (the first build takes a minute and says how far it is),
    # then silently for the path, which the first call built
    # install=True: `nox --install-only` must build it too, or there is no path
    _run(
        session,
        "python",
        "-c",
        "from series import vendor; vendor.build_wheel()",
        install=True,
    )
    wheel = _run(
        session,
        "python",
        "-c",
        "from series import vendor; print(vendor.build_wheel())",
        silent=True,
        install=True,
    )
    wheel_path = str(wheel).strip().splitlines()[-1]
    wanted = "\n".join(
        [
            wheel_path,
            ",".join(sorted(extras)),
            _digest(ROOT / "pyproject.toml"),
            _digest(SALTEXT / "pyproject.toml"),
            *(_digest(path) for path in _sources(SALTEXT_QUERY)),
        ]
    )
    marker = Path(session.virtualenv.location) / "saltfleet-installed"
    if marker.exists() and marker.read_text() == wanted:
        return
    spec = f".[{','.join(extras)}]" if extras else "."
    # pip's own lines show what it downloads and builds: the first install
    # takes a minute or two. Building a wheel (timelib) is silent for half a
    # minute, so harness.progress says every 10 s of silence that pip is still
    # at work (standard library only: it runs from the checkout, before the
    # project is installed).
    what = "installing the project, its Salt extensions and the patched Salt"
    session.log(what)
    _run(
        session,
        "python",
        "-m",
        "harness.progress",
        what,
        "--",
        "python",
        "-m",
        "pip",
        "install",
        "--progress-bar",
        "off",
        wheel_path,
        "-e",
        spec,
        "-e",
        str(SALTEXT),
        str(SALTEXT_QUERY),
        install=True,
    )
    # Same version number as the index's salt: force the patched build in.
    session.install(
        "--no-deps",
        "--force-reinstall",
        "--progress-bar",
        "off",
        wheel_path,
        silent=False,
    )
    marker.write_text(wanted)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sources(package: Path) -> list[Path]:
    """What a package is built from: its metadata, setup.py and src/."""
    return [
        package / "pyproject.toml",
        package / "setup.py",
        *sorted((package / "src").rglob("*.py")),
    ]


@nox.session(python=False)
def vendor(session: nox.Session) -> None:
    """Download and verify the pinned sdist, unpack it, apply patches/series."""
    _run(session, "python", "-m", "series", "vendor", *session.posargs)


@nox.session(name="export-patches", python=False)
def export_patches(session: nox.Session) -> None:
    """Turn the commits in salt/src after the upstream tag into patches/."""
    _run(session, "python", "-m", "series", "export-patches")


@contextlib.contextmanager
def _own_basetemp(session: nox.Session) -> Iterator[Path]:
    """A pytest basetemp of the run's own: gone after a pass, kept and named after a failure.

    Without one, pytest keeps every run's session-wide directories (and the
    last three runs) in /tmp/pytest-of-USER, whatever the retention policy.
    Ctrl-C removes it too: a run the user stopped leaves nothing behind.
    """
    path = Path(tempfile.mkdtemp(prefix="saltfleet-pytest-"))
    try:
        yield path
    except KeyboardInterrupt:
        shutil.rmtree(path, ignore_errors=True)
        raise
    except BaseException:
        if any(path.iterdir()):
            session.log(f"the failed tests' temporary directories are kept in {path}")
        else:
            path.rmdir()
        raise
    shutil.rmtree(path, ignore_errors=True)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The patches' tests and upstream's tests of touched areas, then ours."""
    # bench: the reports' plots; load: locust and CherryPy (salt-api) for test_load/test_saltapi
    _install(session, "test", "bench", "load")
    upstream_paths = session.run(
        "python",
        "-c",
        "from series import vendor; print(' '.join(vendor.touched_test_paths()))",
        silent=True,
    )
    paths = str(upstream_paths).split()
    workers = ["-n", "2"]
    # pytest exits 5 when it collected nothing: a series that touches no
    # tested area is not a failure, and pytest says so in its summary.
    no_tests_ok = [0, 5]
    # pytest's own progress (a line per test file, its share done), not -q:
    # the two runs take about 8 minutes each.
    if paths:
        with session.chdir(SALT_SRC):
            # One process: upstream's unit conftest fails any test whose
            # asyncio callback takes over 50 ms, and two xdist workers on two
            # cores made its rest_tornado tests trip that at random. A busy
            # CI machine still can, so a test that failed only that check
            # runs again alone, up to twice; the tests that exceed it on the
            # pristine release here are listed, and run with a raised
            # threshold. It gives pytest a TMPDIR and basetemp of its own and
            # removes them: upstream's tests leave trees there
            # (series/timing_reruns.py). harness.pgtest gives the postgres
            # ext_pillar's functional tests a server of their own, which they
            # would otherwise skip for want of one.
            _run(
                session,
                "python",
                "-m",
                "harness.pgtest",
                "--",
                "python",
                "-m",
                "series.timing_reruns",
                "--slow-callbacks",
                str(ROOT / "patches" / "upstream-slow-callbacks"),
                "--timing-sensitive",
                str(ROOT / "patches" / "upstream-timing-sensitive"),
                *SALT_PYTEST,
                *KEEP_FAILED_TMP,
                "--",
                *paths,
                success_codes=no_tests_ok,
            )
    with _own_basetemp(session) as basetemp:
        _run(
            session,
            "python",
            "-m",
            "pytest",
            *workers,
            "--dist",
            "loadfile",
            # files in collection order (tests/conftest.py puts the long
            # ones first), not xdist's default of most tests first, which
            # left the one-test files of minutes to run alone at the end
            "--no-loadscope-reorder",
            "--basetemp",
            str(basetemp),
            # a line per test as it ends: under xdist the default prints a
            # dot, and an integration test can take minutes
            "-v",
            # and while one runs long, a line every 10 s naming it
            "-p",
            "series.pytest_plugins.saltfleet_progress",
            # where the 15 minutes go: the slowest tests, at the end
            "--durations=15",
            *session.posargs,
            "tests",
            "saltext-pkgstate/tests",
            "saltext-query/tests",
            success_codes=no_tests_ok,
        )
    # The PostgreSQL install copied into /tmp for the tests' unprivileged
    # servers: a stack's stop keeps a copy touched in the last minute (another
    # server may be about to start from it), so the last stacks' copy would
    # stay. None of ours runs now; a copy a running server uses is kept.
    _run(
        session,
        "python",
        "-c",
        "from harness.postgres import remove_stale_copies as r; r(fresh_grace=0)",
    )


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The product tour: stack with a fleet, every scenario, a report with plots, stop."""
    _install(session, "bench")  # matplotlib, for the report's plots
    _run(session, "python", "-m", "tour", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """A benchmark and its report: nox -s bench -- NAME (benchmarks/names.py)."""
    problem = _load(ROOT / "benchmarks" / "names.py").unknown_benchmark(session.posargs)
    if problem:
        session.error(problem)  # before the install, which takes a minute
    _install(session, "bench")
    _run(session, "python", "-m", "benchmarks", *(session.posargs or ["--help"]))


@nox.session(python=PYTHON)
def load(session: nox.Session) -> None:
    """Locust through salt-api, limiter off vs on: nox -s load -- --help."""
    _install(session, "bench", "load")
    _run(session, "python", "-m", "benchmarks.load", *session.posargs)


@nox.session(name="interfaces-report", python=PYTHON)
def interfaces_report(session: nox.Session) -> None:
    """How every provider of a virtual module conforms to its interface (default: pkg).

    The report is Salt's developer tool ``tools/interfaces_report.py`` (not in
    the wheel), run against the patched Salt installed in the session.
    """
    _install(session)
    tool = SALT_SRC / "tools" / "interfaces_report.py"
    _run(session, "python", str(tool), *(session.posargs or ["pkg"]))


@nox.session(python=PYTHON)
def harness(session: nox.Session) -> None:
    """The harness CLI in the project's environment: nox -s harness -- up|status|down."""
    _install(session)
    _run(session, "python", "-m", "harness", *(session.posargs or ["--help"]))


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff and mypy on the project; black (upstream's version) on patched files."""
    _install(session, "lint")
    code = [
        "harness",
        "evil_minions",
        "benchmarks",
        "tour",
        "series",
        "tests",
        "noxfile.py",
        "saltext-pkgstate",
        "saltext-query",
    ]
    session.run("ruff", "check", *code)
    session.run("ruff", "format", "--check", *code)
    session.run("mypy")
    for extension in (SALTEXT, SALTEXT_QUERY):
        with session.chdir(extension):  # its own strictness settings
            session.run("mypy")
    touched = session.run(
        "python",
        "-c",
        "from series import vendor; print(' '.join(vendor.touched_files()))",
        silent=True,
    )
    files = [f for f in str(touched).split() if f.endswith(".py")]
    if files:
        with session.chdir(SALT_SRC):
            session.run("black", "--check", *files)


@nox.session(python=PYTHON)
def upstream(session: nox.Session) -> None:
    """The PRs of patches/prs.toml, built on their bases and checked: nox -s upstream -- --help."""
    # the test extra: upstream's test dependencies, for the PRs' tests on their base
    _install(session, "test")
    _run(session, "python", "-m", "series.upstream", *session.posargs)
