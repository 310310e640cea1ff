"""The load benchmark's options: one frozen value, its flags, its reproduce line.

Every default is a field default of :class:`LoadOptions` and nowhere else
(Salt's rate-limiting defaults are read from Salt): :func:`benchmarks.options.add_arguments`
registers one flag per field from them, :meth:`LoadOptions.settings` turns
the value into the run's :class:`~benchmarks.load.run.LoadSettings`, and
:meth:`LoadOptions.reproduce_command` names only the fields that differ.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final

from benchmarks.load.shape import LoadProfile
from benchmarks.options import (
    BenchOptions,
    FromSalt,
    option,
    report_name,
)
from benchmarks.salt_trees import (
    MasterComparison,
    limit_option,
    variants_option,
)
from harness.argtypes import function_names, non_negative, port, positive, seconds
from harness.ratelimit import RateLimiting, salt_defaults

#: ``--variants both``, the default (a ``tuned`` load runs salt-api of
#: pristine 3008.3 too)
BOTH: Final = ("off", "on")
_PROFILE: Final = LoadProfile()


def _names(word: str) -> tuple[str, ...]:
    return tuple(function_names(word))


@dataclass(frozen=True)
class LoadOptions(MasterComparison):
    """How one load run is shaped, where it reports, and how locust is spread."""

    NAME: ClassVar[str] = "load"
    variants: tuple[str, ...] = variants_option(BOTH)
    users: int = option(_PROFILE.users, positive, "console users, steady")
    spike_users: int = option(_PROFILE.spike_users, positive, "users during the spike")
    ramp: float = option(_PROFILE.ramp_s, seconds, "seconds of the ramp to --users")
    steady: float = option(_PROFILE.steady_s, seconds, "seconds at --users")
    spike: float = option(_PROFILE.spike_s, seconds, "seconds at --spike-users")
    recover: float = option(_PROFILE.recover_s, seconds, "seconds back at --users")
    runs: int = option(
        3,
        positive,
        "runs of every variant, in a rotated order; the goals are judged on "
        "the medians over the runs",
    )
    max_queue: int = limit_option(
        "max_queue",
        "rate_limiting:max_queue when on (default: %(default)s, Salt's); a "
        "small one shows how the console meets an overloaded master",
    )
    exempt: tuple[str, ...] | None = option(
        None,
        _names,
        "rate_limiting:exempt of the limiter-on master: functions that bypass "
        "its queue (and go to the exempt pool), e.g. "
        "test.ping,pillar.get,pillar.items; saltutil.find_job and "
        "saltutil.running are always exempt (default: Salt's list)",
        metavar="FUN[,FUN...]",
    )
    exempt_max_targets: int = option(
        FromSalt(lambda: salt_defaults()["exempt_max_targets"]),
        non_negative,
        "jobs whose target resolves to at most this many minions bypass the "
        "limiter-on master's queue (rate_limiting:exempt_max_targets; "
        "default: Salt's, %(default)s, none)",
        metavar="N",
    )
    exempt_pool_targets: int = option(
        1,
        non_negative,
        "publications naming at most this many minions by id (a list, or a "
        "glob without wildcards: the console's one-minion reads) go to the "
        "exempt pool of the limiter-on and pools masters, if they have one "
        "(worker_pools:<pool>:max_targets); 0: none",
        metavar="N",
    )
    submissions: int = option(
        200,
        non_negative,
        "async jobs for the salt-api vs LocalClient cost; 0 skips it",
    )
    presence_targets: int = option(10, positive, "minions per presence check")
    group_size: int = option(50, positive, "minions per group job")
    workers: int = option(
        0,
        non_negative,
        "locust worker processes on this machine (0: locust runs alone); with "
        "--master-host: the workers to start (1 if 0)",
    )
    remote_workers: int = option(
        0,
        non_negative,
        "workers on other machines the locust master waits for (up to 10 "
        "min); start them there with --master-host",
    )
    bind_host: str = option(
        "127.0.0.1",
        str,
        "where the locust master listens for workers (0.0.0.0 for workers on "
        "other machines)",
    )
    api_host: str = option(
        "127.0.0.1",
        str,
        "the address of this machine salt-api listens on and workers use "
        "(another one for workers on other machines: then TLS only, with a "
        "certificate made in WORKDIR/tls that the workers need at the same path)",
    )
    master_host: str | None = option(
        None,
        str,
        "only start workers, for the locust master on this host (default: none)",
    )
    master_port: int | None = option(
        None,
        port,
        "the locust master's port (default: 5557 with --master-host or "
        "--remote-workers, else a free one)",
    )
    name: str = option(
        "load", report_name, "report name: benchmarks/results/NAME.md", metavar="NAME"
    )
    workdir: str | None = option(
        None,
        str,
        "locust output and daemon logs (default: .saltfleet/load/NAME, "
        "replaced each run)",
    )

    @classmethod
    def command(cls) -> str:
        """The load has a nox session of its own."""
        return "nox -s load --"

    @staticmethod
    def word(value: Any) -> str:
        """A field's value as its flag takes it: both variants are ``both``."""
        if value == BOTH:
            return "both"
        return BenchOptions.word(value)

    def rate_limiting(self) -> RateLimiting:
        """The ``rate_limiting`` (and exempt pool) of the limiter-on master:
        the storm's, with the load's queue, exempt list and small jobs."""
        return replace(
            super().rate_limiting(),
            max_queue=self.max_queue,
            exempt=self.exempt,
            exempt_max_targets=self.exempt_max_targets,
            # only an exempt pool takes them
            exempt_pool_max_targets=self.exempt_pool_targets if self.exempt_pool else 0,
        )

    def profile(self) -> LoadProfile:
        """The load's shape over time."""
        return LoadProfile(
            self.users,
            self.spike_users,
            self.ramp,
            self.steady,
            self.spike,
            self.recover,
        )
