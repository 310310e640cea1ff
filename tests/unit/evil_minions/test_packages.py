"""pkg.list_pkgs data: deterministic per minion, and changed by a beacon-driven update."""

from __future__ import annotations

import random

import pytest

from evil_minions.packages import PackageSet, compare_versions, is_orphan, satisfies


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


# -- repositories, Salt's changes, versions, the cookie --------------------------


def _installed_orphan(pkgs: PackageSet) -> str:
    return next(n for n in pkgs.names() if is_orphan(pkgs.style, n))


def test_repositories_offer_installed_and_extra_packages_but_no_orphans():
    pkgs = PackageSet("evil-0002", "suse", 250)
    catalog = set(pkgs.catalog())
    installed = set(pkgs.names())
    orphan = _installed_orphan(pkgs)
    assert orphan not in catalog and pkgs.candidate(orphan) is None
    assert len(catalog - installed) >= 90  # not installed, installable
    assert all(pkgs.candidate(n) for n in catalog)
    assert pkgs.candidate("no-such-package") is None


def test_update_installs_and_removes_and_list_pkgs_follows():
    pkgs = PackageSet("evil-0002", "rhel", 120)
    missing = next(n for n in pkgs.catalog() if n not in pkgs.names())
    gone = pkgs.names()[0]
    pkgs.update({missing: pkgs.candidate(missing)}, [gone])
    listed = pkgs.list_pkgs()
    assert listed[missing] == pkgs.candidate(missing)
    assert gone not in listed
    assert len(listed) == 120 and pkgs.generation == 1
    pkgs.update({gone: pkgs.repo_versions(gone)[0]}, [missing])
    assert gone in pkgs.list_pkgs() and missing not in pkgs.list_pkgs()


def test_update_refuses_versions_the_repositories_lack_and_changes_nothing():
    pkgs = PackageSet("evil-0002", "deb", 60)
    before = pkgs.list_pkgs()
    with pytest.raises(ValueError, match="not in the repositories"):
        pkgs.update({pkgs.names()[1]: "99.0-1"}, [pkgs.names()[0]])
    assert pkgs.list_pkgs() == before and pkgs.generation == 0


def test_external_change_can_remove_and_install():
    pkgs = PackageSet("evil-0005", "suse", 80)
    before = pkgs.list_pkgs()
    touched = pkgs.change(random.Random(3), count=1, remove=2, install=2)
    after = pkgs.list_pkgs()
    assert len(touched) == 5
    assert len(set(before) - set(after)) == 2 and len(set(after) - set(before)) == 2
    # an update outside Salt is newer than anything the repositories carry
    updated = [n for n in touched if n in before and n in after]
    [name] = updated
    assert compare_versions(after[name], pkgs.candidate(name) or "0") > 0


def test_cookie_changes_exactly_with_the_package_set():
    pkgs = PackageSet("evil-0001", "suse", 40)
    path, line = pkgs.cookie()
    assert path == "/var/cache/salt/minion/rpmdb.cookie"
    assert PackageSet("evil-0001", "deb", 40).cookie()[0].endswith("dpkg.cookie")
    assert pkgs.cookie() == (path, line)
    pkgs.change(random.Random(0), count=1)
    checksum, stamp = pkgs.cookie()[1].split(" ")
    assert checksum != line.split(" ")[0] and int(stamp) > 0


@pytest.mark.parametrize(
    ("installed", "op", "version", "expected"),
    [
        ("1.2.3-150500.4.1", ">=", "1.2", True),
        ("1.2.3-150500.4.1", "<", "1.2.3", False),
        ("1.2.3-150500.4.1", "=", "1.2.3", True),  # release ignored, as rpm
        ("1.2.3-150500.4.1", "==", "1.2.3-150500.4.2", False),
        ("1.10-1", ">", "1.9", True),
        ("2:0.1-1", ">", "9.9", True),  # epoch first
        ("1.0~rc1-1", "<=", "1.0", True),
    ],
)
def test_version_conditions(installed, op, version, expected):
    assert satisfies(installed, op, version) is expected


def test_unknown_operator_is_an_error():
    with pytest.raises(ValueError, match="unknown version operator '=>'"):
        satisfies("1.0", "=>", "1.0")
