"""The package-state benchmark's options: one frozen value, its flags, its reproduce line.

Every default is a field default of :class:`PkgstatesOptions` and nowhere
else: :func:`add_arguments` registers one flag per field from them and
:meth:`PkgstatesOptions.reproduce_command` names only the fields that differ.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Final

from benchmarks.pkgstates.highstate import variant_names
from harness.argtypes import positive

#: how the report's "Reproduce" line starts
COMMAND: Final = "nox -s bench -- pkgstates"


def report_name(value: str) -> str:
    """A report name: a plain file name without directory or extension (argparse type)."""
    if not value or value.startswith(".") or "/" in value or "\\" in value:
        raise argparse.ArgumentTypeError(
            f"invalid report name {value!r}: a plain file name without a "
            "directory and without the extension, such as pkgstates-50"
        )
    return value


def _option(default: Any, parse: Callable[[str], Any] | None, text: str) -> Any:
    return field(default=default, metadata={"parse": parse, "help": text})


@dataclass(frozen=True)
class PkgstatesOptions:
    """How one run is sized and where its report goes."""

    minions: int = _option(1000, positive, "simulated minions (default: %(default)s)")
    packages: int = _option(
        200, positive, "package entries per state (default: %(default)s)"
    )
    installed: int = _option(
        250, positive, "installed packages per minion (default: %(default)s)"
    )
    groups: int = _option(
        10,
        positive,
        "groups, each with a state; the first holds every minion "
        "(default: %(default)s)",
    )
    rounds: int = _option(
        3, positive, "saves measured per save-to-visible variant (default: %(default)s)"
    )
    processes: int = _option(
        2, positive, "processes of the simulated fleet (default: %(default)s)"
    )
    timeout: int = _option(
        900, positive, "seconds a highstate round may take (default: %(default)s)"
    )
    highstate_rounds: int = _option(
        3,
        positive,
        "highstate rounds per variant, each after a new revision "
        "(default: %(default)s)",
    )
    variants: str = _option(
        "off,on,cache",
        variant_names,
        "master set-ups of the highstate rounds, one after the other: off "
        "(pillar_reuse_loaders off, today's default), on, cache (Salt's "
        "pillar_cache) (default: %(default)s)",
    )
    no_highstate: bool = _option(
        False, None, "skip the highstate rounds on a real master (no stack started)"
    )
    output_name: str = _option(
        "pkgstates",
        report_name,
        "report files in benchmarks/results/: NAME.md, NAME.json, NAME.png "
        "(default: %(default)s)",
    )

    def __post_init__(self) -> None:
        if self.groups < 2:
            # the measured group holds every minion; the others slice the fleet
            raise ValueError(f"--groups {self.groups}: at least 2 are needed")
        if self.processes > self.minions:
            raise ValueError(
                f"--processes {self.processes} is more than --minions {self.minions}"
            )

    def reproduce_command(self) -> str:
        """The ``nox`` command that runs this again, naming only what differs
        from the defaults.

        .. code-block:: python

            PkgstatesOptions(minions=50).reproduce_command()
            # 'nox -s bench -- pkgstates --minions 50'
        """
        defaults = PkgstatesOptions()
        words = [COMMAND]
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value == getattr(defaults, spec.name):
                continue
            flag = "--" + spec.name.replace("_", "-")
            words.append(flag if isinstance(value, bool) else f"{flag} {value}")
        return " ".join(words)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register one flag per :class:`PkgstatesOptions` field on ``parser``."""
    for spec in fields(PkgstatesOptions):
        flag = "--" + spec.name.replace("_", "-")
        if spec.metadata["parse"] is None:
            parser.add_argument(flag, action="store_true", help=spec.metadata["help"])
        else:
            parser.add_argument(
                flag,
                type=spec.metadata["parse"],
                default=spec.default,
                help=spec.metadata["help"],
            )


def from_args(args: argparse.Namespace) -> PkgstatesOptions:
    """The options ``args`` (from a parser :func:`add_arguments` set up) describe;
    a bad combination is an ``argparse.ArgumentTypeError``."""
    try:
        return PkgstatesOptions(
            **{spec.name: getattr(args, spec.name) for spec in fields(PkgstatesOptions)}
        )
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
