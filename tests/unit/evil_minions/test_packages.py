"""pkg.list_pkgs data: deterministic per minion, and changed by a beacon-driven update."""

from __future__ import annotations

import random

import pytest

from evil_minions.packages import PackageSet


def test_deterministic_and_sized():
    a = PackageSet("evil-0001", "suse", 120).list_pkgs()
    b = PackageSet("evil-0001", "suse", 120).list_pkgs()
    assert a == b
    assert len(a) == 120


def test_styles_name_and_version_packages_differently():
    suse = PackageSet("m", "suse", 80).list_pkgs()
    deb = PackageSet("m", "deb", 80).list_pkgs()
    assert "rpm" in suse and "dpkg" in deb
    assert "ubuntu" in next(iter(deb.values()))


def test_change_updates_versions_of_the_named_packages():
    pkgs = PackageSet("evil-0003", "rhel", 60)
    before = pkgs.list_pkgs()
    changed = pkgs.change(random.Random(1), count=4)
    after = pkgs.list_pkgs()
    assert len(changed) == 4
    assert pkgs.generation == 1
    assert {name for name in before if before[name] != after[name]} == set(changed)


def test_versions_as_list():
    listed = PackageSet("m", "suse", 10).list_pkgs(versions_as_list=True)
    assert all(isinstance(v, list) and len(v) == 1 for v in listed.values())


def test_unknown_style_is_rejected():
    with pytest.raises(ValueError, match="unknown package style"):
        PackageSet("m", "arch", 10)
