"""Synthetic grains are a pure function of the minion id: the harness computes
expected grain-target results itself, and processes must agree with each other."""

from __future__ import annotations

import collections
import subprocess
import sys

from evil_minions.config import minion_ids
from evil_minions.grains import OS_PROFILES, ipv4_for, os_profile_for, synthetic_grains


def test_same_id_same_grains():
    assert synthetic_grains("evil-0042") == synthetic_grains("evil-0042")


def test_grains_agree_across_processes():
    # str hashes are salted per process; grains must not depend on them.
    code = "from evil_minions.grains import synthetic_grains as g; print(g('evil-0042')['machine_id'], g('evil-0042')['os'])"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    grains = synthetic_grains("evil-0042")
    assert other.stdout.split() == [grains["machine_id"], grains["os"]]


def test_different_ids_differ():
    a, b = synthetic_grains("evil-0001"), synthetic_grains("evil-0002")
    assert a["machine_id"] != b["machine_id"]
    assert a["ipv4"] != b["ipv4"]
    assert a["id"] == "evil-0001"


def test_core_grains_present_with_salt_shapes():
    grains = synthetic_grains("evil-0007", master="10.1.2.3")
    for key in (
        "os",
        "os_family",
        "osrelease",
        "osfinger",
        "oscodename",
        "kernel",
        "fqdn",
        "machine_id",
        "uuid",
        "num_cpus",
        "mem_total",
        "saltversion",
    ):
        assert key in grains, key
    assert grains["master"] == "10.1.2.3"
    assert isinstance(grains["ipv4"], list) and "127.0.0.1" in grains["ipv4"]
    assert isinstance(grains["osrelease_info"], list)
    assert len(grains["machine_id"]) == 32
    assert grains["fqdn"].startswith("evil-0007.")


def test_os_mix_follows_the_weights():
    ids = minion_ids("evil", 2000)
    families = collections.Counter(synthetic_grains(i)["os_family"] for i in ids)
    expected = collections.Counter()
    for profile in OS_PROFILES:
        expected[profile.os_family] += profile.weight
    for family, weight in expected.items():
        share = families[family] / len(ids) * 100
        assert abs(share - weight) < 5, (family, share, weight)


def test_numbered_ids_get_unique_addresses():
    ids = minion_ids("evil", 5000)
    addresses = {ipv4_for(i) for i in ids}
    assert len(addresses) == len(ids)
    assert all(not a.endswith((".0", ".255")) for a in addresses)


def test_os_profile_matches_grains():
    for minion_id in minion_ids("x", 50):
        assert (
            synthetic_grains(minion_id)["osfinger"]
            == os_profile_for(minion_id).osfinger
        )
