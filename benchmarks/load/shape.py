"""The load's shape over time: ramp, steady, spike, recovery.

Defaults, and why:

- ``users=20``: about the operators and dashboards one large installation has
  open on its console at once;
- ``ramp_s=30``: users arrive over half a minute, so start-up costs (logins,
  first connections) are not one burst;
- ``steady_s=60``: long enough for several think-time cycles of every user;
- ``spike_users=60``, ``spike_s=20``: three times the users at once, arriving
  within ``SPIKE_ARRIVAL_S``, like a morning or an incident when everyone opens
  the console;
- ``recover_s=30``: back to ``users``, to see whether the master recovers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: seconds in which the spike's extra users all arrive
SPIKE_ARRIVAL_S: Final = 2.0


@dataclass(frozen=True)
class Phase:
    """One phase of the load: how long, how many users, how fast they arrive."""

    name: str
    duration_s: float
    users: int
    spawn_rate: float


@dataclass(frozen=True)
class LoadProfile:
    """Users and durations of the phases; a phase of 0 s is left out."""

    users: int = 20
    spike_users: int = 60
    ramp_s: float = 30.0
    steady_s: float = 60.0
    spike_s: float = 20.0
    recover_s: float = 30.0

    def phases(self) -> list[Phase]:
        """The phases in order; a phase of 0 s is left out."""
        ramp_rate = self.users / self.ramp_s if self.ramp_s > 0 else float(self.users)
        jump = max(1.0, abs(self.spike_users - self.users) / SPIKE_ARRIVAL_S)
        every = [
            Phase("ramp", self.ramp_s, self.users, max(ramp_rate, 0.1)),
            Phase("steady", self.steady_s, self.users, max(ramp_rate, 0.1)),
            Phase("spike", self.spike_s, self.spike_users, jump),
            Phase("recover", self.recover_s, self.users, jump),
        ]
        return [phase for phase in every if phase.duration_s > 0]

    @property
    def duration_s(self) -> float:
        """Seconds of all phases together."""
        return sum(phase.duration_s for phase in self.phases())

    def at(self, elapsed_s: float) -> Phase | None:
        """The phase ``elapsed_s`` seconds into the run; None once it is over."""
        end = 0.0
        for phase in self.phases():
            end += phase.duration_s
            if elapsed_s < end:
                return phase
        return None

    def describe(self) -> str:
        """One line for the report."""
        return ", ".join(
            f"{p.name} {p.duration_s:g} s to {p.users} users" for p in self.phases()
        )
