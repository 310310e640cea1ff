"""The benchmark's package states: deterministic, at every scope, sensible for the minions.

One organization with one state; ``groups`` groups, the first (``all``) with
every minion and the others a slice each, one state per group; grain-match
states (by ``os_family``, ``osfinger`` and ``virtual``); and every minion's
own state. Each state holds ``packages`` entries drawn from what the
minions of that scope have or can install (:mod:`evil_minions.packages`):
states that reach several packaging styles use names every style shares,
per-style states use that style's names and real version conditions.

Well-known system packages (glibc, bash, ...) only get ``installed``,
``latest`` or a satisfiable version condition; removals are drawn from the
generated filler packages, as an admin would remove tools, not the C library.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from harness.fleet import (
    STYLES,
    candidate_level,
    common_names,
    filler_name,
    is_orphan,
    os_profile_for,
    package_version,
    synthetic_grains,
)

ORG: Final = "acme"
ALL_GROUP: Final = "all"
#: (state name, grain match, the packaging style it implies or None)
GRAIN_MATCHES: Final = (
    ("grain-suse", "G@os_family:Suse", "suse"),
    ("grain-redhat", "G@os_family:RedHat", "rhel"),
    ("grain-debian", "G@os_family:Debian", "deb"),
    ("grain-sles15", "G@osfinger:SLES-15", "suse"),
    ("grain-physical", "G@virtual:physical", None),
)
#: share of each policy in a generated state (filler packages; common ones
#: get only installed / latest / installed with a condition)
_POLICY_WEIGHTS: Final = (
    ("installed", 55), ("installed-op", 12), ("latest", 12), ("removed", 8),
    ("purged", 5), ("absent", 8),
)  # fmt: skip
#: share of a group revision's entries the measured save changes
CHANGE_SHARE: Final = 0.1


@dataclass(frozen=True)
class StateSpec:
    """One named state, its entries (text syntax) and where it is assigned."""

    name: str
    entries: tuple[str, ...]
    scope: str  # org, group, grain, minion (the minion's own state)
    target: str


@dataclass
class Scenario:
    """Everything the benchmark stores before it measures."""

    ids: list[str]
    groups: dict[str, list[str]]  # group name -> member ids, in group id order
    states: list[StateSpec] = field(default_factory=list)

    @property
    def measured_group(self) -> str:
        """The group whose revision is measured: it holds every minion."""
        return ALL_GROUP

    def state(self, name: str) -> StateSpec:
        """The state named ``name``."""
        return next(s for s in self.states if s.name == name)


def _fillers(size: int, installed: int) -> list[str]:
    """Filler names the repositories offer, plus the orphans every minion has
    installed (an orphan nobody has installed could not be installed)."""
    surely_installed = installed - len(common_names(STYLES[0]))
    return [
        filler_name(i)
        for i in range(size)
        if i < surely_installed
        or not any(is_orphan(style, filler_name(i)) for style in STYLES)
    ]


def _shared_names(size: int, installed: int) -> list[str]:
    """Names every packaging style has: unrenamed common ones and the filler."""
    shared = set(common_names(STYLES[0]))
    for style in STYLES[1:]:
        shared &= set(common_names(style))
    return sorted(shared) + _fillers(size, installed)


def _style_names(style: str, size: int, installed: int) -> list[str]:
    return common_names(style) + _fillers(size, installed)


def _entry(rng: random.Random, name: str, style: str | None, common: bool) -> str:
    """One entry for ``name``; version conditions use ``style``'s real versions."""
    kinds, weights = zip(*_POLICY_WEIGHTS, strict=True)
    kind = rng.choices(kinds, weights)[0]
    if common and kind not in ("installed", "installed-op", "latest"):
        kind = "installed"
    if style is None or candidate_level(style, name) is None:
        # no style-specific version to compare with: conditions every
        # version meets (installed) or none does (absent)
        return {
            "installed-op": f"{name}<99",
            "latest": f"{name}@latest",
            "removed": f"{name}@removed",
            "purged": f"{name}@purged",
            "absent": f"{name}@absent>99",
        }.get(kind, name)
    base = package_version(style, name, 0)
    upstream = base.split("-")[0]
    return {
        "installed-op": rng.choice([f"{name}>={upstream}", f"{name}={base}"]),
        "latest": f"{name}@latest",
        "removed": f"{name}@removed",
        "purged": f"{name}@purged",
        "absent": f"{name}@absent<{upstream}",
    }.get(kind, name)


def state_entries(
    seed: str, names: Sequence[str], count: int, style: str | None
) -> tuple[str, ...]:
    """``count`` entries over a deterministic sample of ``names``."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(list(names), min(count, len(names))))
    commons = set(common_names(style or STYLES[0]))
    return tuple(_entry(rng, n, style, n in commons) for n in chosen)


def changed_revision(spec: StateSpec, seed: str = "change") -> tuple[str, ...]:
    """The measured save: ``spec``'s entries with :data:`CHANGE_SHARE` of them
    switched to ``latest`` (a typical "upgrade these" edit)."""
    rng = random.Random(f"{spec.name}/{seed}")
    count = max(1, int(len(spec.entries) * CHANGE_SHARE))
    picked = set(rng.sample(range(len(spec.entries)), count))
    out = []
    for i, text in enumerate(spec.entries):
        if i in picked:
            name = text.split("@")[0].split("<")[0].split(">")[0].split("=")[0]
            out.append(text if text.endswith("@latest") else f"{name}@latest")
        else:
            out.append(text)
    return tuple(out)


def build(
    ids: Sequence[str], *, packages: int, package_count: int, groups: int
) -> Scenario:
    """The scenario for ``ids`` with ``packages`` entries per state."""
    pool = (
        package_count + 100
    )  # what the repositories offer (see evil_minions.packages)
    members = {ALL_GROUP: list(ids)}
    for k in range(1, groups):
        members[f"team-{k:02d}"] = [
            m for i, m in enumerate(ids) if i % (groups - 1) == k - 1
        ]
    scenario = Scenario(list(ids), members)
    shared = _shared_names(pool, package_count)
    scenario.states.append(
        StateSpec(
            f"org-{ORG}", state_entries("org", shared, packages, None), "org", ORG
        )
    )
    for group in members:
        scenario.states.append(
            StateSpec(
                f"group-{group}",
                state_entries(f"group/{group}", shared, packages, None),
                "group",
                group,
            )
        )
    for name, match, style in GRAIN_MATCHES:
        names = _style_names(style, pool, package_count) if style else shared
        scenario.states.append(
            StateSpec(name, state_entries(name, names, packages, style), "grain", match)
        )
    for minion in ids:
        style = os_profile_for(minion).package_style
        scenario.states.append(
            StateSpec(
                f"minion:{minion}",
                state_entries(
                    minion, _style_names(style, pool, package_count), packages, style
                ),
                "minion",
                minion,
            )
        )
    return scenario


def grains_of(minion_id: str) -> dict[str, object]:
    """The grains the simulated minion ``minion_id`` reports."""
    return synthetic_grains(minion_id)
