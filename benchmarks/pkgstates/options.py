"""The package-state benchmark's options: one frozen value, its flags, its reproduce line.

Every default is a field default of :class:`PkgstatesOptions` and nowhere
else: :func:`benchmarks.options.add_arguments` registers one flag per
field from them and :meth:`PkgstatesOptions.reproduce_command` names only
the fields that differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from benchmarks.options import (
    BenchOptions,
    minions_option,
    option,
    processes_option,
    report_name,
)
from benchmarks.pkgstates.highstate import variant_names
from harness.argtypes import positive


@dataclass(frozen=True)
class PkgstatesOptions(BenchOptions):
    """How one run is sized and where its report goes."""

    NAME: ClassVar[str] = "pkgstates"
    minions: int = minions_option()
    packages: int = option(200, positive, "package entries per state")
    installed: int = option(250, positive, "installed packages per minion")
    groups: int = option(
        10,
        positive,
        "groups, each with a state; the first holds every minion",
    )
    rounds: int = option(3, positive, "saves measured per save-to-visible variant")
    processes: int = processes_option()
    timeout: int = option(900, positive, "seconds a highstate round may take")
    highstate_rounds: int = option(
        3,
        positive,
        "highstate rounds per variant, each after a new revision",
    )
    variants: str = option(
        "off,on,cache",
        variant_names,
        "master set-ups of the highstate rounds, one after the other: off "
        "(pillar_reuse_loaders off, today's default), on, cache (Salt's "
        "pillar_cache)",
    )
    no_highstate: bool = option(
        False, None, "skip the highstate rounds on a real master (no stack started)"
    )
    output_name: str = option(
        "pkgstates",
        report_name,
        "report files in benchmarks/results/: NAME.md, NAME.json, NAME.png",
    )

    def __post_init__(self) -> None:
        if self.groups < 2:
            # the measured group holds every minion; the others slice the fleet
            raise ValueError(f"--groups {self.groups}: at least 2 are needed")
        if self.processes > self.minions:
            raise ValueError(
                f"--processes {self.processes} is more than --minions {self.minions}"
            )


#: how the report's "Reproduce" line starts
COMMAND: Final = PkgstatesOptions.command()
