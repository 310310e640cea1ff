"""Unpacking an sdist as plain data, also on a Python without tarfile's data filter
(Debian 12's system Python 3.11.2: the README's first command vendored nothing there)."""

from __future__ import annotations

import io
import stat
import tarfile
from pathlib import Path

import pytest

from harness.salttree import SaltTreeError, extract_tar


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    buf.seek(0)
    return tarfile.open(fileobj=buf)


def _file(
    name: str, data: bytes = b"x", mode: int = 0o644
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    info.uid = info.gid = 4242
    return info, data


def _link(
    name: str, target: str, kind: bytes = tarfile.SYMTYPE
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, b""


@pytest.mark.parametrize(
    "builtin",
    [
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                not hasattr(tarfile, "data_filter"),
                reason="this Python's tarfile has no data filter (before 3.11.4)",
            ),
        ),
        False,
    ],
    ids=["data-filter", "checked"],
)
def test_a_plain_tree_unpacks_as_data(tmp_path: Path, builtin: bool) -> None:
    tar = _archive(
        _file("salt-1/setup.py", b"print()"),
        _file("salt-1/bin/tool", b"#!", mode=0o4777),
        _link("salt-1/bin/alias", "tool"),
    )
    extract_tar(tar, tmp_path, builtin_filter=builtin)
    assert (tmp_path / "salt-1" / "setup.py").read_bytes() == b"print()"
    tool = (tmp_path / "salt-1" / "bin" / "tool").stat()
    assert not tool.st_mode & (stat.S_ISUID | stat.S_IWOTH)
    assert (tmp_path / "salt-1" / "bin" / "alias").resolve().name == "tool"


@pytest.mark.parametrize(
    "member",
    [
        _file("../escaped"),
        _file("/abs/escaped"),
        _link("salt-1/out", "../../escaped"),
        _link("salt-1/abs", "/etc/passwd"),
        _link("salt-1/hard", "../escaped", tarfile.LNKTYPE),
        (tarfile.TarInfo("salt-1/fifo"), b""),
    ],
    ids=[
        "dotdot",
        "absolute",
        "symlink-out",
        "symlink-absolute",
        "hardlink-out",
        "fifo",
    ],
)
def test_without_the_data_filter_a_hostile_member_unpacks_nothing(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes]
) -> None:
    if member[0].name.endswith("fifo"):
        member[0].type = tarfile.FIFOTYPE
    dest = tmp_path / "dest"
    dest.mkdir()
    tar = _archive(_file("salt-1/setup.py"), member)
    with pytest.raises(SaltTreeError, match="not unpacking it"):
        extract_tar(tar, dest, builtin_filter=False)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "escaped").exists()
