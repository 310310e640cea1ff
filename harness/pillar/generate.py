"""A synthetic fleet with realistic pillar data, for tests and benchmarks.

Sizes follow what a fleet manager stores per minion (a few KiB: channels,
tokens, settings); groups set overlapping keys, so the merge order between
groups decides visible values and a wrong order shows.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from harness.pillar.model import FleetPillars, Group, MinionMembership, PillarRow

GROUP_NAMES = ("web", "db", "cache", "batch", "edge", "build", "mail", "dns")


@dataclass(frozen=True)
class FleetShape:
    """How a generated fleet is laid out: orgs, groups, memberships, seed."""

    orgs: int = 4
    groups_per_org: int = 5
    max_groups_per_minion: int = 3
    seed: int = 1


def _token(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdef0123456789") for _ in range(n))


def generate(minion_ids: list[str], shape: FleetShape = FleetShape()) -> FleetPillars:
    """A fleet over ``minion_ids``: every minion in one org and 1..N groups."""
    rng = random.Random(shape.seed)
    fleet = FleetPillars()
    fleet.orgs = [f"org{i + 1}" for i in range(shape.orgs)]
    for org in fleet.orgs:
        for name in GROUP_NAMES[: shape.groups_per_org]:
            fleet.groups.append(Group(org, name))
    fleet.rows.append(
        PillarRow(
            "global",
            None,
            "salt",
            {
                "mgr_server": "manager.example.com",
                "ntp_servers": ["0.pool.ntp.org", "1.pool.ntp.org"],
                "motd": "managed by saltfleet",
                "tuning": {"sysctl": {"vm.swappiness": 60, "net.core.somaxconn": 4096}},
            },
        )
    )
    fleet.rows.append(
        PillarRow(
            "global",
            None,
            "repositories",
            {
                "repositories": {
                    f"repo-{i}": {
                        "url": f"https://mirror.example.com/repo/{i}",
                        "gpgcheck": True,
                    }
                    for i in range(24)
                }
            },
        )
    )
    for index, org in enumerate(fleet.orgs):
        fleet.rows.append(
            PillarRow(
                "org",
                org,
                "org",
                {
                    "org": {
                        "name": org,
                        "id": index + 1,
                        "contact": f"ops@{org}.example.com",
                    },
                    "ntp_servers": [f"ntp.{org}.example.com"],
                },
            )
        )
    for gindex, group in enumerate(fleet.groups):
        fleet.rows.append(
            PillarRow(
                "group",
                group.key,
                "group",
                {
                    "groups": {group.name: {"id": gindex + 1, "org": group.org}},
                    "motd": f"{group.name} server of {group.org}",
                    "tuning": {"sysctl": {"vm.swappiness": 10 + gindex}},
                    "role": group.name,
                },
            )
        )
    by_org: dict[str, list[Group]] = {}
    for group in fleet.groups:
        by_org.setdefault(group.org, []).append(group)
    for minion_id in minion_ids:
        org = rng.choice(fleet.orgs)
        count = rng.randint(1, shape.max_groups_per_minion)
        groups = sorted(rng.sample(by_org[org], count), key=fleet.groups.index)
        fleet.minions[minion_id] = MinionMembership(org, [g.key for g in groups])
        digest = hashlib.sha256(minion_id.encode()).hexdigest()
        fleet.rows.append(
            PillarRow(
                "minion",
                minion_id,
                "minion",
                {
                    "minion": {"id": minion_id, "machine_id": digest[:32]},
                    "channels": {
                        f"channel-{c}": {
                            "token": _token(rng, 96),
                            "alias": f"{org}-channel-{c}",
                        }
                        for c in range(8)
                    },
                },
            )
        )
    return fleet
