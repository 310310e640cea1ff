"""Bases: a checkout by path, the newest release, an unpinned sdist's sha256."""

from __future__ import annotations

import pytest

from series.upstream import base
from series.upstream.errors import UpstreamError


def test_a_checkout_is_its_head(upstream_tree):
    found = base.checkout_base("master", upstream_tree)
    assert found.branch == "master" and len(found.rev) == 40
    assert found.label == f"master: checkout {found.rev[:12]}"


def test_a_directory_that_is_no_checkout(tmp_path):
    with pytest.raises(UpstreamError, match="not a git checkout"):
        base.checkout_base("master", tmp_path)


def test_the_stand_in_names_itself(upstream_tree):
    release = base.Base(
        "3008.x", "3008.x: salt-3008.5 sdist", upstream_tree, "x", "ab", "n"
    )
    stand_in = base.stand_in("no master checkout", release)
    assert stand_in.stand_in and stand_in.branch == "master"
    assert stand_in.label == "no master checkout (stand-in: salt-3008.5 sdist)"


def test_index_versions_are_parsed():
    output = "salt (3008.5)\nAvailable versions: 3008.5, 3008.4, 3008.0rc1, 3007.9\n"
    assert base._parse_index_versions(output) == [
        "3008.5",
        "3008.4",
        "3008.0rc1",
        "3007.9",
    ]
    assert base._parse_index_versions("nothing") == []


def test_an_unpinned_sdist_is_held_to_its_first_sha256(tmp_path):
    sdist = tmp_path / "salt-3008.5.tar.gz"
    note = base._record_sha(tmp_path, sdist, "a" * 64)
    assert "not pinned" in note and "a" * 64 in note
    assert "recorded" in base._record_sha(tmp_path, sdist, "a" * 64)
    with pytest.raises(UpstreamError, match="recorded"):
        base._record_sha(tmp_path, sdist, "b" * 64)
