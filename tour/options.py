"""Every knob of the tour and its default, in one value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    # imported when used: the CLI reads the defaults before Salt may be installed
    from harness.fleet import TimingModel
    from harness.ratelimit import RateLimiting

#: where the report goes unless --report-dir says otherwise (relative to cwd)
DEFAULT_REPORT_DIR: Final = Path(".saltfleet") / "demo"


@dataclass(frozen=True)
class DemoOptions:
    """What the tour runs at which size.

    ``minion_slots`` is how many jobs a simulated minion runs at once (more
    wait on the minion, as on a real one at ``process_count_max``); the
    limiter is sized from it (:func:`storm_limits`), so the storm shows a
    minion's own backlog with the limiter off and a bounded one with it on.
    """

    minions: int = 200
    storm_jobs: int = 12
    pillar_sample: int = 20
    report_dir: Path = DEFAULT_REPORT_DIR
    minion_slots: int = 2
    #: seconds each storm job (``test.sleep``) takes on a minion; None:
    #: :meth:`job_seconds` sizes it to the fleet
    storm_sleep: float | None = None
    #: minions pinged at once, every ping_interval seconds, during a storm
    ping_minions: int = 5
    ping_interval: float = 1.0
    #: simulated minions asked for their pillar while PostgreSQL is down
    fail_closed_sample: int = 5

    def command_line(self) -> str:
        """The command that runs the tour with these options (for the report)."""
        return (
            f"nox -s demo -- --minions {self.minions} --storm-jobs {self.storm_jobs} "
            f"--pillar-sample {self.pillar_sample}"
        )

    def timing(self) -> TimingModel:
        """The simulated minions' timing for the tour."""
        from harness.fleet import TimingModel

        return TimingModel(max_concurrent_jobs=self.minion_slots)

    def job_seconds(self) -> float:
        """How long one storm job takes on a minion.

        The minions, not the master, must be the bottleneck, or jobs trickle
        out no faster than minions finish them and nothing piles up without
        the limiter: a fleet returns ``minions * minion_slots / seconds``
        jobs per second, which must stay below what one master on this
        machine takes in (about 150 returns a second), hence a second per
        100 minions.
        """
        if self.storm_sleep is not None:
            return self.storm_sleep
        return max(1.0, self.minions / 100)

    def storm_timeout(self) -> float:
        """Seconds a storm may take before its missing returns count as lost:
        a wide margin over jobs x sleep / slots, plus the fleet's returns."""
        per_minion = self.storm_jobs * self.job_seconds() / self.minion_slots
        return 60.0 + 3 * per_minion + self.minions * self.storm_jobs / 100


def storm_limits(options: DemoOptions) -> RateLimiting:
    """The limiter of the storm: master capacity for ``minion_slots`` jobs on
    every simulated minion, so the queue paces the storm; a minion holding
    twice that is skipped (``published_excluding``) rather than overrun."""
    from harness.ratelimit import RateLimiting

    return RateLimiting(
        max_master_jobs=options.minions * options.minion_slots,
        max_minion_jobs=2 * options.minion_slots,
    )
