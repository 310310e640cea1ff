"""vendor / export-patches on a tiny synthetic upstream: no network, no Salt."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from harness.salttree import SaltTreeError
from series import vendor
from series.vendor import Layout, VendorError

NAME, VERSION = "demo", "1.0"


def _sdist(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{NAME}-{VERSION}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    blob = _sdist({"app.py": "def greet():\n    return 'hello'\n", "README": "demo\n"})
    lay = Layout(
        upstream_file=tmp_path / "UPSTREAM",
        patches_dir=tmp_path / "patches",
        src_dir=tmp_path / "src",
        cache_dir=tmp_path / "cache",
    )
    lay.cache_dir.mkdir()
    (lay.cache_dir / f"{NAME}-{VERSION}.tar.gz").write_bytes(blob)
    lay.upstream_file.write_text(
        f"name = {NAME}\nversion = {VERSION}\nsha256 = {hashlib.sha256(blob).hexdigest()}\n"
    )
    return lay


def _commit(src: Path, path: str, text: str, message: str) -> None:
    (src / path).write_text(text)
    git = [
        "git",
        "-C",
        str(src),
        "-c",
        "user.name=Dev",
        "-c",
        "user.email=dev@example.invalid",
    ]
    subprocess.run([*git, "add", path], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)


def _patch_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_vendor_unpacks_pristine_tree_with_tag(layout: Layout) -> None:
    src = vendor.vendor(layout)
    assert (src / "app.py").read_text().startswith("def greet")
    tags = subprocess.run(
        ["git", "-C", str(src), "tag"], capture_output=True, text=True
    ).stdout
    assert tags.split() == [f"upstream/{VERSION}"]


def test_export_then_revendor_is_byte_stable(layout: Layout, tmp_path: Path) -> None:
    src = vendor.vendor(layout)
    _commit(
        src, "app.py", "def greet():\n    return 'hello, fleet'\n", "Greet the fleet"
    )
    _commit(src, "NEW", "added\n", "Add a file")
    vendor.export_patches(layout)
    first = _patch_bytes(layout.patches_dir)
    assert first["series"] == b"0001-Greet-the-fleet.patch\n0002-Add-a-file.patch\n"
    assert (
        b"From 0000000000000000000000000000000000000000"
        in first["0001-Greet-the-fleet.patch"]
    )

    # a fresh vendor from the exported series, exported again, gives the same bytes
    import shutil

    shutil.rmtree(src)
    vendor.vendor(layout)
    again = tmp_path / "again"
    vendor.export_patches(layout, out_dir=again)
    assert _patch_bytes(again) == first
    assert (
        subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain"],
            capture_output=True,
            text=True,
        ).stdout
        == ""
    )


def test_vendor_is_idempotent(
    layout: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    vendor.vendor(layout)
    head = subprocess.run(
        ["git", "-C", str(layout.src_dir), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout
    vendor.vendor(layout)
    assert "up to date" in capsys.readouterr().err
    assert (
        subprocess.run(
            ["git", "-C", str(layout.src_dir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout
        == head
    )


def test_sha256_mismatch_unpacks_nothing(layout: Layout) -> None:
    text = (
        layout.upstream_file.read_text().replace("sha256 = ", "sha256 = 0")[:-2] + "\n"
    )
    layout.upstream_file.write_text(text)
    with pytest.raises(VendorError, match="sha256 mismatch"):
        vendor.vendor(layout)
    assert not layout.src_dir.exists()
    assert not (layout.cache_dir / f"{NAME}-{VERSION}.tar.gz").exists()


def test_patch_that_does_not_apply_is_named(layout: Layout) -> None:
    src = vendor.vendor(layout)
    _commit(src, "app.py", "def greet():\n    return 'hi'\n", "Shorter greeting")
    vendor.export_patches(layout)
    # upstream changes under the patch: same version, new content and pin
    blob = _sdist({"app.py": "def welcome():\n    return 'hey'\n", "README": "demo\n"})
    (layout.cache_dir / f"{NAME}-{VERSION}.tar.gz").write_bytes(blob)
    layout.upstream_file.write_text(
        f"name = {NAME}\nversion = {VERSION}\nsha256 = {hashlib.sha256(blob).hexdigest()}\n"
    )
    with pytest.raises(
        VendorError, match=r"patch 0001-Shorter-greeting.patch does not apply"
    ):
        vendor.vendor(layout)


def test_unexported_work_is_not_discarded(layout: Layout) -> None:
    src = vendor.vendor(layout)
    _commit(src, "app.py", "def greet():\n    return 'mine'\n", "Local work")
    (layout.patches_dir).mkdir()
    (layout.patches_dir / "series").write_text("")
    with pytest.raises(VendorError, match="commits not yet exported"):
        vendor.vendor(layout)
    assert "mine" in (src / "app.py").read_text()


def test_series_naming_a_missing_patch(layout: Layout) -> None:
    layout.patches_dir.mkdir()
    (layout.patches_dir / "series").write_text("# comment\n0001-gone.patch\n")
    with pytest.raises(
        VendorError, match=r"names 0001-gone\.patch, which does not exist"
    ):
        vendor.vendor(layout)


@pytest.mark.parametrize(
    "text,message",
    [
        ("name = x\nversion = 1\n", "missing sha256"),
        ("name = x\nversion = 1\nsha256 = abc\n", "64 hex digits"),
        ("name x\n", "expected 'key = value'"),
    ],
)
def test_bad_upstream_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "UPSTREAM"
    path.write_text(text)
    with pytest.raises(SaltTreeError, match=message):
        vendor.read_upstream(path)


def test_a_long_step_says_every_interval_that_it_is_still_at_work(capsys) -> None:
    # the 52 s sdist download and the wheel build printed nothing
    script = (
        "import sys, time; print('out'); time.sleep(0.5); print('err', file=sys.stderr)"
    )
    done = vendor._run_telling("downloading x", [sys.executable, "-c", script], 0.1)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    said = capsys.readouterr().err.splitlines()
    assert len(said) >= 3, said
    assert all(line.startswith("vendor: downloading x: ") for line in said), said
    assert said[-1].endswith("s so far ...")
