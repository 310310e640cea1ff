"""Vendor upstream Salt and keep the patch series in step with it.

``vendor`` turns the pinned sdist (``salt/UPSTREAM``) into ``salt/src/``: a git
repository whose first commit is the pristine release, tagged
``upstream/<version>``, with every patch of ``patches/series`` applied on top as
one commit each (``git am --3way``). ``export_patches`` goes the other way:
the commits after the tag become ``patches/NNNN-topic.patch`` plus
``patches/series``, byte for byte the same on every export of the same commits.

Only the standard library, ``git`` and ``pip`` are used, so this runs before
any Salt is installed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from harness import progress
from harness.salttree import (
    Layout,
    SaltTreeError,
    Upstream,
    extract_tar,
    read_upstream,
)

__all__ = ["Layout", "Upstream", "VendorError", "read_upstream"]

STATE_FILE = "saltfleet-vendor.json"

# One fixed identity and date for the pristine commit, so that the tag names the
# same tree on every machine; applied patches keep their own author and date.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "saltfleet vendor",
    "GIT_AUTHOR_EMAIL": "vendor@saltfleet.invalid",
    "GIT_COMMITTER_NAME": "saltfleet vendor",
    "GIT_COMMITTER_EMAIL": "vendor@saltfleet.invalid",
}
_PRISTINE_DATE = "2000-01-01T00:00:00+00:00"
_LOCAL_ARTIFACTS = (
    "__pycache__/\n*.py[co]\n.pytest_cache/\n/build/\n/artifacts/\n.coverage*\n"
)

# Options that make format-patch output independent of the user's git config.
_FORMAT_PATCH_CONFIG = (
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "diff.renames=true",
    "-c",
    "core.abbrev=12",
    "-c",
    "format.signature=",
    "-c",
    "format.numbered=false",
)


class VendorError(SaltTreeError):
    """Vendoring or exporting could not be completed; nothing was half-done."""


def read_series(layout: Layout) -> list[Path]:
    """The patch files named by ``patches/series``, in order; all must exist."""
    if not layout.series_file.exists():
        return []
    patches = []
    for lineno, raw in enumerate(layout.series_file.read_text().splitlines(), 1):
        name = raw.split("#", 1)[0].strip()
        if not name:
            continue
        patch = layout.patches_dir / name
        if not patch.is_file():
            raise VendorError(
                f"{layout.series_file}:{lineno}: names {name}, which does not exist"
            )
        patches.append(patch)
    return patches


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: seconds between the lines that say a long step is still at work
PROGRESS_EVERY = progress.INTERVAL


def _run_telling(
    what: str, argv: list[str], every: float = PROGRESS_EVERY
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with its output captured, saying every ``every`` seconds
    that ``what`` is still at work and for how long (a download or a build
    takes a minute with nothing else to show)."""
    started = time.monotonic()
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=every)
                break
            except subprocess.TimeoutExpired:
                # communicate() keeps what was read; asking again loses nothing
                _log(f"{what}: {time.monotonic() - started:.0f}s so far ...")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def download_sdist(name: str, version: str, cache_dir: Path) -> Path:
    """Download ``name==version`` as an sdist into ``cache_dir`` with pip; its path.

    Nothing is verified here: :func:`fetch_sdist` checks the pin, and callers
    without a pin record the sha256 they got. A file already in ``cache_dir``
    is returned as it is.
    """
    sdist = cache_dir / f"{name}-{version}.tar.gz"
    if sdist.exists():
        return sdist
    cache_dir.mkdir(parents=True, exist_ok=True)
    _log(f"downloading {name}=={version} (sdist)")
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        proc = _run_telling(
            f"downloading {name}=={version}",
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-d",
                tmp,
                f"{name}=={version}",
            ],
        )
        got = Path(tmp) / sdist.name
        if proc.returncode != 0 or not got.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise VendorError(
                f"could not download {sdist.name} from the package index:\n{tail}"
            )
        got.replace(sdist)
    return sdist


def fetch_sdist(upstream: Upstream, cache_dir: Path) -> Path:
    """Return the verified sdist, downloading it into ``cache_dir`` if needed.

    A file whose sha256 differs from the pin is deleted and reported; it is
    never unpacked.
    """
    sdist = download_sdist(upstream.name, upstream.version, cache_dir)
    actual = sha256_of(sdist)
    if actual != upstream.sha256:
        sdist.unlink()
        raise VendorError(
            f"sha256 mismatch for {upstream.sdist_name}: expected {upstream.sha256}, "
            f"got {actual}. The file was removed and nothing was unpacked; if the "
            "pin in salt/UPSTREAM is wrong, correct it there."
        )
    return sdist


def _git(
    repo: Path, *args: str, check: bool = True, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env=env,
        input=input_text,
    )
    if check and proc.returncode != 0:
        raise VendorError(
            f"git {' '.join(args)} failed in {repo}:\n{proc.stderr.strip()}"
        )
    return proc


def _series_digest(patches: list[Path]) -> str:
    digest = hashlib.sha256()
    for patch in patches:
        digest.update(patch.name.encode() + b"\0")
        digest.update(patch.read_bytes())
    return digest.hexdigest()


def _read_state(src: Path) -> dict[str, str]:
    try:
        data = json.loads((src / ".git" / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(src: Path, state: dict[str, str]) -> None:
    (src / ".git" / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


def _unexported_work(src: Path, state: dict[str, str]) -> str | None:
    """Describe work in ``src`` that re-vendoring would throw away, if any."""
    status = _git(src, "status", "--porcelain", "--untracked-files=normal").stdout
    if status.strip():
        return "uncommitted changes:\n" + status.rstrip()
    head = _git(src, "rev-parse", "HEAD").stdout.strip()
    if state.get("head") and head != state["head"]:
        log = _git(src, "log", "--oneline", f"{state['head']}..HEAD", check=False)
        return "commits not yet exported to patches/:\n" + (log.stdout.rstrip() or head)
    return None


def unpack_pristine(sdist: Path, upstream: Upstream, src: Path) -> None:
    """Unpack the sdist to ``src`` and commit it as the tagged pristine tree.

    ``src`` is replaced; the tree is one commit, tagged ``upstream/<version>``.
    """
    src.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=src.parent) as tmp:
        with tarfile.open(sdist) as tar:
            extract_tar(tar, Path(tmp))
        top = Path(tmp) / f"{upstream.name}-{upstream.version}"
        if not top.is_dir():
            raise VendorError(
                f"{sdist.name} does not contain {top.name}/ at its top level"
            )
        _git(top, "init", "-q", "-b", "main")
        _git(top, "config", "core.autocrlf", "false")
        _git(top, "add", "-A", "--force")
        env_date = {
            "GIT_AUTHOR_DATE": _PRISTINE_DATE,
            "GIT_COMMITTER_DATE": _PRISTINE_DATE,
        }
        proc = subprocess.run(
            [
                "git",
                "-C",
                str(top),
                "commit",
                "-q",
                "--no-verify",
                "-m",
                f"{upstream.name} {upstream.version} (pristine sdist)",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, **_GIT_ENV, **env_date},
        )
        if proc.returncode != 0:
            raise VendorError(f"git commit of the pristine tree failed:\n{proc.stderr}")
        _git(top, "tag", upstream.tag)
        # Running Salt's tests or building in the tree must not look like
        # unexported work to the next vendor run.
        (top / ".git" / "info" / "exclude").write_text(_LOCAL_ARTIFACTS)
        if src.exists():
            shutil.rmtree(src)
        top.replace(src)


def _apply_series(src: Path, patches: list[Path]) -> None:
    for patch in patches:
        proc = _git(src, "am", "--3way", "--keep-cr", str(patch), check=False)
        if proc.returncode != 0:
            _git(src, "am", "--abort", check=False)
            reason = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise VendorError(
                f"patch {patch.name} does not apply to {src}:\n"
                + "\n".join(reason[-12:])
                + "\nsalt/src was left at the last patch that applied."
            )


def vendor(layout: Layout | None = None, *, force: bool = False) -> Path:
    """Make ``salt/src`` the pristine upstream tree plus the patch series.

    Idempotent: when the pin, the series and the tree are as the last run left
    them, nothing is done. Work in ``salt/src`` that is not exported to
    ``patches/`` is never thrown away unless ``force`` is given.
    """
    layout = layout or Layout.of_project()
    upstream = read_upstream(layout.upstream_file)
    patches = read_series(layout)
    wanted = {
        "upstream": f"{upstream.name}-{upstream.version}",
        "sha256": upstream.sha256,
        "series": _series_digest(patches),
    }
    src = layout.src_dir
    state = _read_state(src) if (src / ".git").is_dir() else {}
    if state:
        unexported = _unexported_work(src, state)
        if (
            unexported is None
            and "head" in state
            and all(state.get(k) == v for k, v in wanted.items())
        ):
            _log(f"{src} is up to date ({len(patches)} patches applied)")
            return src
        if unexported is not None and not force:
            raise VendorError(
                f"{src} has work that is not in patches/, {unexported}\n"
                "Run `nox -s export-patches` to keep it, or `nox -s vendor -- "
                "--force` to discard it."
            )
    elif src.exists() and any(src.iterdir()) and not force:
        raise VendorError(
            f"{src} exists but was not made by vendor; move it away or pass --force"
        )

    sdist = fetch_sdist(upstream, layout.cache_dir)
    if state.get("sha256") == upstream.sha256:
        _git(src, "am", "--abort", check=False)
        _git(src, "reset", "-q", "--hard", upstream.tag)
        _git(src, "clean", "-q", "-fdx")
    else:
        _log(f"unpacking {sdist.name} to {src}")
        unpack_pristine(sdist, upstream, src)
    # Without "head" the next run knows this apply did not finish.
    _write_state(src, wanted)
    _apply_series(src, patches)
    _write_state(src, {**wanted, "head": _git(src, "rev-parse", "HEAD").stdout.strip()})
    _log(f"{src}: {upstream.tag} + {len(patches)} patches")
    return src


def export_patches(
    layout: Layout | None = None, out_dir: Path | None = None
) -> list[Path]:
    """Write the commits after the upstream tag as numbered patches + series.

    ``out_dir`` defaults to ``patches/``. Patch files of an earlier export that
    no longer correspond to a commit are removed. The output carries no
    commit hashes, git version or export date, so exporting the same commits
    twice gives identical bytes.
    """
    layout = layout or Layout.of_project()
    upstream = read_upstream(layout.upstream_file)
    src = layout.src_dir
    if not (src / ".git").is_dir():
        raise VendorError(f"{src} is not vendored yet; run `nox -s vendor` first")
    dirty = _git(src, "status", "--porcelain").stdout
    if dirty.strip():
        raise VendorError(
            f"{src} has uncommitted changes; commit them first:\n{dirty.rstrip()}"
        )
    out = out_dir or layout.patches_dir
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = _git(
            src,
            *_FORMAT_PATCH_CONFIG,
            "format-patch",
            "--zero-commit",
            "--no-signature",
            "--full-index",
            "-N",
            "--stat=72",
            "--filename-max-length=100",
            "-o",
            tmp,
            f"{upstream.tag}..HEAD",
        )
        produced = [Path(line) for line in proc.stdout.split()]
        for old in out.glob("[0-9][0-9][0-9][0-9]-*.patch"):
            old.unlink()
        written = []
        for patch in produced:
            target = out / patch.name
            shutil.copyfile(patch, target)
            written.append(target)
    series = "".join(f"{p.name}\n" for p in written)
    (out / "series").write_text(series)
    if out == layout.patches_dir:
        head = _git(src, "rev-parse", "HEAD").stdout.strip()
        state = _read_state(src)
        state.update(series=_series_digest(written), head=head)
        _write_state(src, state)
    _log(f"exported {len(written)} patches to {out}")
    return written


def build_wheel(layout: Layout | None = None) -> Path:
    """Build (once per commit) a wheel of the patched tree; return its path.

    The wheel is built from ``git archive HEAD`` so building never writes into
    ``salt/src`` and uncommitted edits are never shipped by accident.
    """
    layout = layout or Layout.of_project()
    src = layout.src_dir
    if not (src / ".git").is_dir():
        raise VendorError(f"{src} is not vendored yet; run `nox -s vendor` first")
    head = _git(src, "rev-parse", "HEAD").stdout.strip()
    out = layout.cache_dir / "wheels" / head[:12]
    built = sorted(out.glob("*.whl"))
    if built:
        return built[0]
    with tempfile.TemporaryDirectory(dir=layout.cache_dir) as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(src), "archive", "--format=tar", "HEAD"],
            capture_output=True,
            check=True,
        )
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            extract_tar(tar, tree)
        _log(f"building the patched Salt wheel ({head[:12]})")
        proc = _run_telling(
            "building the patched Salt wheel",
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "-q",
                "--disable-pip-version-check",
                "-w",
                str(Path(tmp) / "out"),
                str(tree),
            ],
        )
        wheels = sorted((Path(tmp) / "out").glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            raise VendorError(
                f"building the Salt wheel failed:\n{proc.stderr.strip()[-2000:]}"
            )
        out.mkdir(parents=True, exist_ok=True)
        target = out / wheels[0].name
        wheels[0].replace(target)
    return target


def touched_files(layout: Layout | None = None) -> list[str]:
    """Files of ``salt/src`` that the series adds or changes (not deletes)."""
    layout = layout or Layout.of_project()
    upstream = read_upstream(layout.upstream_file)
    diff = _git(
        layout.src_dir,
        "diff",
        "--name-only",
        "--diff-filter=AMR",
        f"{upstream.tag}..HEAD",
    )
    return diff.stdout.split()


def touched_test_paths(layout: Layout | None = None) -> list[str]:
    """Upstream test paths (relative to ``salt/src``) covering what the series touches.

    By upstream's naming convention ``salt/<dirs>/<name>.py`` is tested by
    ``tests/pytests/unit/<dirs>/test_<name>.py`` and ``tests/unit/<dirs>/test_<name>.py``,
    and a package's ``__init__.py`` by ``tests/pytests/unit/<dirs>/`` and
    ``tests/unit/test_<package>.py``. Test files the series adds or changes are
    included, and so is every path listed in ``patches/upstream-tests`` (wider
    areas the convention misses). Only paths that exist are returned.
    """
    layout = layout or Layout.of_project()
    src = layout.src_dir
    paths: set[str] = set()
    for name in touched_files(layout):
        path = Path(name)
        if is_test_file(name):
            paths.add(name)
        elif path.parts[0] == "salt" and path.suffix == ".py":
            dirs = "/".join(path.parts[1:-1])
            if path.stem == "__init__" and dirs:
                paths.add(f"tests/pytests/unit/{dirs}")
                paths.add(f"tests/unit/test_{path.parts[-2]}.py")
            else:
                for base in ("tests/pytests/unit", "tests/unit"):
                    paths.add(f"{base}/{dirs}/test_{path.stem}.py".replace("//", "/"))
    listed = layout.patches_dir / "upstream-tests"
    if listed.exists():
        for raw in listed.read_text().splitlines():
            entry = raw.split("#", 1)[0].strip()
            if entry:
                paths.add(entry.rstrip("/"))
    return outermost({p for p in paths if (src / p).exists()})


def is_test_file(name: str) -> bool:
    """True for a test module of upstream's layout: ``tests/**/test_*.py``."""
    path = Path(name)
    return (
        path.parts[0] == "tests"
        and path.name.startswith("test_")
        and path.suffix == ".py"
    )


def outermost(paths: set[str]) -> list[str]:
    """``paths`` sorted, without those inside another one (they would run twice)."""
    return sorted(
        p for p in paths if not any(p != d and p.startswith(d + "/") for d in paths)
    )


def _log(message: str) -> None:
    print(f"vendor: {message}", file=sys.stderr, flush=True)
