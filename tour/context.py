"""What every scenario of the tour gets: the running stack, the options,
where plots go, and what earlier scenarios left for later ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.pillar.model import FleetPillars
from harness.stack import Stack
from tour.errors import ScenarioFailed
from tour.options import DemoOptions
from tour.storm_result import StormResult


@dataclass
class TourContext:
    """The stack under the tour and the tour's shared state."""

    stack: Stack
    options: DemoOptions
    report_dir: Path
    #: the pillar rows the pillar scenario stored (None before it ran)
    pillars: FleetPillars | None = None
    #: storms run so far, by label ("on", "off")
    storms: dict[str, StormResult] = field(default_factory=dict)
    #: what the package states section saved, for its later scenarios
    pkgstates: dict[str, Any] | None = None

    @property
    def fleet_ids(self) -> list[str]:
        """The simulated minions' ids."""
        if self.stack.fleet is None:
            raise ScenarioFailed("the stack has no simulated minions")
        return self.stack.fleet.ids

    @property
    def real_minion(self) -> str | None:
        """The real salt-minion's id, or None when the stack has none."""
        return self.stack.settings.minion_id if self.stack.minion else None

    def all_minions(self) -> list[str]:
        """The real minion (if any) and every simulated one."""
        real = [self.real_minion] if self.real_minion else []
        return real + self.fleet_ids

    def plot_path(self, name: str) -> Path:
        """Where a plot named ``name`` (``ratelimit-ping.png``) is written."""
        return self.report_dir / name
