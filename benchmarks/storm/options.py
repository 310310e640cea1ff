"""The storm's options: one frozen value, its command line, its reproduce line.

Every default is a field default of :class:`StormOptions` and nowhere else:
:func:`benchmarks.options.add_arguments` registers one flag per field
from them, and :meth:`StormOptions.reproduce_command` names the fields
that differ from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from benchmarks.options import (
    BenchOptions,
    option,
    report_name,
)
from benchmarks.salt_trees import (
    MASTER_MWORKERS,
    ON_THEN_OFF,
    MasterComparison,
    limit_option,
    tuned_options,
    variants_option,
)
from harness.argtypes import positive, positive_seconds, rate

#: ``--variants both``: what a storm runs by default, in this order
BOTH: Final = ON_THEN_OFF


#: what 3008.3's ``process_count_max: -1`` lets a minion run at once with a
#: soft ``RLIMIT_NOFILE`` of 1024: (1024 - 100 reserved) // 5 descriptors
#: per job process (``Minion._get_effective_process_count_max``)
DEFAULT_MINION_PROCESS_LIMIT: Final = (1024 - 100) // 5

#: the functions whose returns the ``prio`` variant's minions send before
#: their queued returns (the series' minion option
#: ``return_priority_functions``): the storm's presence ping and the probe
#: of a running job
PRIORITY_FUNCTIONS: Final = ("test.ping", "saltutil.find_job")


@dataclass(frozen=True)
class MinionVariant:
    """A storm variant beyond the masters every comparison has: one of those
    masters with minions that send the returns of :data:`PRIORITY_FUNCTIONS`
    before their queued returns."""

    name: str
    #: the variant of :data:`~benchmarks.salt_trees.MASTER_VARIANTS` whose
    #: master it runs
    master: str
    #: what it is, for ``--help``
    what: str


#: the storm's variants with minions of the series' own
MINION_VARIANTS: Final = (
    MinionVariant(
        "prio",
        "off",
        "limiter off's master; the minions send the returns of "
        f"{' and '.join(PRIORITY_FUNCTIONS)} before their queued returns "
        "(return_priority_functions)",
    ),
    MinionVariant(
        "pools-prio",
        "pools",
        "pools' master (function-routed pools, no limiter) and prio's minions",
    ),
)

_MINION_MASTERS: Final = {v.name: v.master for v in MINION_VARIANTS}


@dataclass(frozen=True)
class StormOptions(MasterComparison):
    """How one storm is run and where its report goes."""

    NAME: ClassVar[str] = "storm"
    variants: tuple[str, ...] = variants_option(
        ON_THEN_OFF, tuple((v.name, v.what) for v in MINION_VARIANTS)
    )
    jobs: int = option(200, positive, "jobs in the storm")
    submitters: int = option(4, positive, "client threads submitting the storm")
    runs: int = option(
        3,
        positive,
        "runs of every variant, in a rotated order; the headline numbers are "
        "medians over the runs with their range, a goal is met when the median "
        "run meets it",
    )
    max_wait: float = option(
        1800,
        positive_seconds,
        "seconds one variant may take before it is cut short",
    )
    decide_calls: int = option(
        20000,
        positive,
        "calls per case of the decide() micro-benchmark",
    )
    consumer_rate: float = option(
        150.0,
        rate,
        "events per second the event consumer (an engine on each master that "
        "stores every event in PostgreSQL, as SUSE Manager does) stores at "
        "most; 0: no consumer",
    )
    minion_jobs: int = limit_option(
        "max_minion_jobs",
        "jobs a simulated minion runs at once, the rest waiting for a slot as "
        "on a 3008.3 minion at process_count_max (default %(default)s, the "
        "limiter's max_minion_jobs; 3008.3's own default, -1, allows "
        f"{DEFAULT_MINION_PROCESS_LIMIT} with a soft RLIMIT_NOFILE of 1024)",
    )
    output_name: str = option(
        "storm",
        report_name,
        "name of the report files in benchmarks/results/: NAME.md, "
        "NAME-timeline.png, NAME-consumer.png, NAME.json",
        metavar="NAME",
    )
    resume: bool = option(
        False,
        None,
        "go on with the interrupted storm of the same --output-name: keep its "
        "finished runs (.saltfleet/storm/NAME/runs.json, written after every "
        "run) and run only the rest; refused when the options other than "
        "--runs, or the series, stack or benchmark code, differ",
        reproduced=False,
    )

    @staticmethod
    def master_of(variant: str) -> str:
        """The master ``variant`` runs: its own name but for
        :data:`MINION_VARIANTS`."""
        return _MINION_MASTERS.get(variant, variant)

    def master_options(self, variant: str) -> dict[str, Any] | None:
        """The master options of ``variant`` beyond every storm master's:
        None for ``off``; ``pools`` has ``on``'s worker pools and no
        ``rate_limiting``; ``tuned`` 3008.3's own; each of
        :data:`MINION_VARIANTS` its master's (:meth:`master_of`)."""
        variant = self.master_of(variant)
        if variant == "off":
            return None
        if variant == "tuned":
            return tuned_options(MASTER_MWORKERS)
        options = self.limiter_master_options()
        if variant == "pools":
            return {"worker_pools": options["worker_pools"]}
        return options

    @staticmethod
    def priority_functions(variant: str) -> tuple[str, ...]:
        """The ``return_priority_functions`` of ``variant``'s minions: none
        but those of :data:`MINION_VARIANTS`."""
        return PRIORITY_FUNCTIONS if variant in _MINION_MASTERS else ()

    def limiter_master_options(self, mworkers: int = MASTER_MWORKERS) -> dict[str, Any]:
        """The master options of the limiter-on master (:meth:`rate_limiting`'s)
        with ``mworkers`` MWorkers in all, its exempt pool's included: the
        same as every other variant's master, which would otherwise compare
        its default pool against one MWorker more."""
        default_pool = mworkers - self.exempt_pool
        if default_pool < 1:
            raise ValueError(
                f"an exempt pool of {self.exempt_pool} leaves no MWorker of "
                f"{mworkers} to the default pool"
            )
        return self.rate_limiting().master_options(default_pool)

    @staticmethod
    def word(value: Any) -> str:
        """A field's value as its flag takes it: the default variants are ``both``."""
        if value == BOTH:
            return "both"
        return BenchOptions.word(value)


#: how the report's "Reproduce" line starts
COMMAND: Final = StormOptions.command()
