"""
Synthetic grains: what a simulated minion reports about its "machine".

Grains are a pure function of the minion id (and the master host), so the same
id always gets the same operating system, addresses and hardware across runs
and processes: targets such as ``-G os_family:Suse`` select a stable set, and
the harness can compute the expected set itself with :func:`synthetic_grains`.

The operating system is drawn from a weighted mix modelled on the fleets Uyuni
manages: SUSE Linux Enterprise and openSUSE first, then RHEL-family and
Debian-family systems. The grain names and value shapes follow Salt's core
grains on those systems.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import random
import re
import uuid
from typing import Any, Final

SALT_VERSION: Final = "3008.3"
DEFAULT_DOMAIN: Final = "sim.example.com"


@dataclasses.dataclass(frozen=True)
class OsProfile:
    """One operating system release as Salt's core grains describe it."""

    weight: int
    os: str
    os_family: str
    osfullname: str
    osrelease: str
    oscodename: str
    osfinger: str
    kernelrelease: str
    lsb_distrib_id: str
    #: package naming/version style, see evil_minions.packages
    package_style: str


#: The fleet's operating system mix; weights are percentages.
OS_PROFILES: Final[tuple[OsProfile, ...]] = (
    OsProfile(20, "SUSE", "Suse", "SLES", "15.5", "SUSE Linux Enterprise Server 15 SP5",
              "SLES-15", "5.14.21-150500.55.65-default", "SLES", "suse"),
    OsProfile(20, "SUSE", "Suse", "SLES", "15.6", "SUSE Linux Enterprise Server 15 SP6",
              "SLES-15", "6.4.0-150600.23.25-default", "SLES", "suse"),
    OsProfile(5, "SUSE", "Suse", "SLES", "12.5", "SUSE Linux Enterprise Server 12 SP5",
              "SLES-12", "4.12.14-122.219-default", "SLES", "suse"),
    OsProfile(5, "SUSE", "Suse", "Leap", "15.5", "openSUSE Leap 15.5",
              "Leap-15", "5.14.21-150500.55.65-default", "openSUSE Leap", "suse"),
    OsProfile(10, "SUSE", "Suse", "Leap", "15.6", "openSUSE Leap 15.6",
              "Leap-15", "6.4.0-150600.23.25-default", "openSUSE Leap", "suse"),
    OsProfile(3, "SUSE", "Suse", "Tumbleweed", "20241001", "openSUSE Tumbleweed",
              "Tumbleweed-20241001", "6.11.0-1-default", "openSUSE Tumbleweed", "suse"),
    OsProfile(12, "RedHat", "RedHat", "Red Hat Enterprise Linux", "9.4", "Plow",
              "Red Hat Enterprise Linux-9", "5.14.0-427.13.1.el9_4.x86_64", "RedHat", "rhel"),
    OsProfile(8, "RedHat", "RedHat", "Red Hat Enterprise Linux", "8.10", "Ootpa",
              "Red Hat Enterprise Linux-8", "4.18.0-553.el8_10.x86_64", "RedHat", "rhel"),
    OsProfile(5, "Rocky", "RedHat", "Rocky Linux", "9.4", "Blue Onyx",
              "Rocky Linux-9", "5.14.0-427.13.1.el9_4.x86_64", "Rocky", "rhel"),
    OsProfile(6, "Ubuntu", "Debian", "Ubuntu", "22.04", "jammy",
              "Ubuntu-22.04", "5.15.0-122-generic", "Ubuntu", "deb"),
    OsProfile(4, "Ubuntu", "Debian", "Ubuntu", "24.04", "noble",
              "Ubuntu-24.04", "6.8.0-45-generic", "Ubuntu", "deb"),
    OsProfile(2, "Debian", "Debian", "Debian", "12", "bookworm",
              "Debian-12", "6.1.0-26-amd64", "Debian", "deb"),
)  # fmt: skip

_CPU_MODELS: Final = (
    "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz",
    "AMD EPYC 7763 64-Core Processor",
    "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz",
    "QEMU Virtual CPU version 2.5+",
)
_VIRTUAL: Final = ("kvm", "kvm", "kvm", "VMware", "physical")
_TRAILING_NUMBER: Final = re.compile(r"(\d+)$")


def _rng_for(minion_id: str) -> random.Random:
    # sha256, not hash(): Python's str hash is salted per process, and grains
    # must agree between processes and runs.
    digest = hashlib.sha256(minion_id.encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def os_profile_for(minion_id: str) -> OsProfile:
    """The operating system a minion id gets, drawn from :data:`OS_PROFILES`."""
    rng = _rng_for(minion_id)
    return rng.choices(OS_PROFILES, weights=[p.weight for p in OS_PROFILES])[0]


def ipv4_for(minion_id: str) -> str:
    """
    The minion's primary address in 10.0.0.0/8.

    Ids ending in a number get consecutive, collision-free addresses; others
    get a hashed one.
    """
    match = _TRAILING_NUMBER.search(minion_id)
    if match:
        number = int(match.group(1))
        # 250 hosts per /24 keeps away from .0 and .255.
        return str(
            ipaddress.IPv4Address((10 << 24) + (number // 250 << 8) + number % 250 + 1)
        )
    digest = hashlib.sha256(minion_id.encode("utf-8")).digest()
    return f"10.{digest[0]}.{digest[1]}.{1 + digest[2] % 250}"


def synthetic_grains(
    minion_id: str, *, master: str = "127.0.0.1", domain: str = DEFAULT_DOMAIN
) -> dict[str, Any]:
    """
    The full grains dict of a simulated minion, deterministic in ``minion_id``.

    .. code-block:: python

        grains = synthetic_grains("evil-0001")
        grains["os_family"], grains["ipv4"]  # ('Suse', ['10.0.0.2', '127.0.0.1'])
    """
    profile = os_profile_for(minion_id)
    rng = _rng_for(minion_id + "/hardware")
    digest = hashlib.sha256(minion_id.encode("utf-8")).hexdigest()
    ipv4 = ipv4_for(minion_id)
    mac = "52:54:00:" + ":".join(digest[i : i + 2] for i in range(0, 6, 2))
    ipv6 = f"fe80::5054:ff:fe{digest[0:2]}:{digest[2:6]}"
    host = minion_id.split(".")[0]
    fqdn = f"{host}.{domain}"
    osrelease_info = [int(p) for p in profile.osrelease.split(".") if p.isdigit()]
    num_cpus = rng.choice((1, 2, 2, 4, 4, 8, 16))
    mem_total = rng.choice((1024, 2048, 4096, 4096, 8192, 16384, 32768))
    virtual = rng.choice(_VIRTUAL)
    major = osrelease_info[0] if osrelease_info else profile.osrelease
    return {
        "id": minion_id,
        "host": host,
        "nodename": host,
        "localhost": host,
        "fqdn": fqdn,
        "domain": domain,
        "fqdns": [fqdn],
        "fqdn_ip4": [ipv4],
        "fqdn_ip6": [],
        "ipv4": [ipv4, "127.0.0.1"],
        "ipv6": ["::1", ipv6],
        "ip_interfaces": {"eth0": [ipv4, ipv6], "lo": ["127.0.0.1", "::1"]},
        "ip4_interfaces": {"eth0": [ipv4], "lo": ["127.0.0.1"]},
        "ip6_interfaces": {"eth0": [ipv6], "lo": ["::1"]},
        "hwaddr_interfaces": {"eth0": mac, "lo": "00:00:00:00:00:00"},
        "dns": {"nameservers": ["10.0.0.1"], "domain": domain, "search": [domain]},
        "kernel": "Linux",
        "kernelrelease": profile.kernelrelease,
        "kernelversion": "#1 SMP PREEMPT_DYNAMIC",
        "os": profile.os,
        "os_family": profile.os_family,
        "osfullname": profile.osfullname,
        "osrelease": profile.osrelease,
        "osrelease_info": osrelease_info,
        "osmajorrelease": major,
        "osfinger": profile.osfinger,
        "oscodename": profile.oscodename,
        "osarch": "x86_64" if profile.package_style != "deb" else "amd64",
        "cpuarch": "x86_64",
        "lsb_distrib_id": profile.lsb_distrib_id,
        "lsb_distrib_release": profile.osrelease,
        "lsb_distrib_codename": profile.oscodename,
        "cpu_model": rng.choice(_CPU_MODELS),
        "cpu_flags": ["fpu", "vme", "sse", "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "aes"],
        "num_cpus": num_cpus,
        "num_gpus": 0,
        "gpus": [],
        "mem_total": mem_total,
        "swap_total": mem_total // 2,
        "virtual": virtual,
        "manufacturer": "QEMU" if virtual == "kvm" else "Dell Inc.",
        "productname": "Standard PC (Q35 + ICH9, 2009)" if virtual == "kvm" else "PowerEdge R650",
        "biosversion": "1.16.3-2",
        "biosreleasedate": "04/01/2014",
        "serialnumber": digest[6:18].upper(),
        "uuid": str(uuid.UUID(digest[:32])),
        "machine_id": digest[32:64],
        "server_id": int(digest[:8], 16) & 0x7FFFFFFF,
        "init": "systemd",
        "systemd": {"version": "254", "features": "+PAM +AUDIT +SELINUX"},
        "efi": False,
        "disks": ["vda"],
        "ssds": [],
        "shell": "/bin/bash",
        "path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "locale_info": {"defaultlanguage": "en_US", "defaultencoding": "UTF-8",
                        "detectedencoding": "utf-8", "timezone": "UTC"},
        "saltversion": SALT_VERSION,
        "saltversioninfo": [int(p) for p in SALT_VERSION.split(".")],
        "pythonversion": [3, 11, 7, "final", 0],
        "master": master,
        "username": "root",
        "groupname": "root",
        "uid": 0,
        "gid": 0,
        "evil_minion": True,
    }  # fmt: skip
