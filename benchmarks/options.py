"""One options pattern for the benchmarks' command lines.

A benchmark's options are one frozen dataclass; every field is declared with
:func:`option`, which holds its default, its argparse type and its help
once. From that class :func:`add_arguments` registers one flag per field,
:func:`from_args` builds the value (a bad combination, refused by the class,
becomes a usage error) and :func:`reproduce_command` writes the report's
"Reproduce" line, naming only the fields that differ from their defaults.
A class that derives from :class:`BenchOptions` and names its benchmark has
that line as its :meth:`~BenchOptions.reproduce_command`.

.. code-block:: python

    @dataclass(frozen=True)
    class QuickOptions(BenchOptions):
        NAME: ClassVar[str] = "quick"
        minions: int = option(100, positive, "simulated minions")

    QuickOptions(minions=50).reproduce_command()
    # 'nox -s bench -- quick --minions 50'
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import MISSING, Field, field, fields
from typing import Any, ClassVar, Final, Protocol, TypeVar

from harness.argtypes import positive

#: how every benchmark's "Reproduce" line starts; the benchmark's name follows
BENCH_COMMAND: Final = "nox -s bench --"


class _Options(Protocol):
    """A dataclass of :func:`option` fields (what ``dataclasses.fields`` takes)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


T = TypeVar("T", bound=_Options)


def option(
    default: Any,
    parse: Callable[[str], Any] | None,
    text: str,
    *,
    reproduced: bool = True,
    **extra: Any,
) -> Any:
    """A field of an options class with what its flag needs: ``parse`` is the
    argparse type (None: a flag without a value, for a bool that is False by
    default), ``text`` the help, ``extra`` more ``add_argument`` keywords.
    The help of a flag with a value ends in ``(default: <default>)`` unless
    ``text`` says its default itself. A ``default`` that is a
    :class:`FromSalt` is read when an options value or a parser is made, so
    a default Salt owns is never restated. ``reproduced=False``: a flag about
    how the benchmark runs, not what it measures, left out of the report's
    Reproduce line."""
    meta = {"parse": parse, "help": text, "extra": extra, "reproduced": reproduced}
    if isinstance(default, FromSalt):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


#: the fleet a benchmark simulates unless it is told otherwise
FLEET_SIZE: Final = 1000
#: medians with their spread need at least this many runs
MIN_RUNS: Final = 3


def minions_option(default: int = FLEET_SIZE, text: str = "simulated minions") -> Any:
    """The ``minions`` field of a benchmark that starts a fleet."""
    return option(default, positive, text)


def processes_option(default: int = 2) -> Any:
    """The ``processes`` field: the simulated fleet's processes."""
    return option(default, positive, "processes of the simulated fleet")


def runs_option(default: int = MIN_RUNS, of: str = "variant") -> Any:
    """The ``runs`` field of a benchmark whose headline numbers are medians;
    its class's ``__post_init__`` calls :func:`check_runs` on it."""
    return option(default, positive, f"runs of every {of}, at least {MIN_RUNS}")


class FromSalt:
    """A default read from Salt when it is needed: ``FromSalt(lambda:
    RateLimiting().max_master_jobs)``."""

    def __init__(self, read: Callable[[], Any]) -> None:
        self.read = read

    def __call__(self) -> Any:
        """The default as Salt has it now."""
        return self.read()


def default_of(spec: Field[Any]) -> Any:
    """The default of an :func:`option` field, read now."""
    if spec.default_factory is not MISSING:
        return spec.default_factory()
    return spec.default


def report_name(value: str) -> str:
    """A report name: a plain file name without directory or extension (argparse type)."""
    if not value or value.startswith(".") or "/" in value or "\\" in value:
        raise argparse.ArgumentTypeError(
            f"invalid report name {value!r}: a plain file name without a "
            "directory and without the extension, such as storm-long-400"
        )
    return value


def names_in_order(
    allowed: tuple[str, ...], aliases: dict[str, tuple[str, ...]]
) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: a comma-separated list of ``allowed`` names without
    repetition, in the order given, or one of ``aliases``."""

    def parse(word: str) -> tuple[str, ...]:
        if word in aliases:
            return aliases[word]
        names = tuple(name.strip() for name in word.split(","))
        if any(n not in allowed for n in names) or len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"invalid variants {word!r}: "
                + "".join(f"{alias}, or " for alias in aliases)
                + f"a comma-separated list without repetition of {', '.join(allowed)}"
            )
        return names

    return parse


def flag(name: str) -> str:
    """The command-line flag of field ``name``: ``--max-wait`` for ``max_wait``."""
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser, options: type[_Options]) -> None:
    """Register one flag per field of ``options`` on ``parser``."""
    for spec in fields(options):
        meta = spec.metadata
        if meta["parse"] is None:
            parser.add_argument(flag(spec.name), action="store_true", help=meta["help"])
        else:
            text = meta["help"]
            if "(default" not in text:
                text += " (default: %(default)s)"
            parser.add_argument(
                flag(spec.name),
                type=meta["parse"],
                default=default_of(spec),
                help=text,
                **meta["extra"],
            )


def from_args(options: type[T], args: argparse.Namespace) -> T:
    """The ``options`` that ``args`` (from a parser :func:`add_arguments` set
    up) describe; a combination the class refuses (ValueError) is an
    ``argparse.ArgumentTypeError`` with its message."""
    try:
        return options(
            **{spec.name: getattr(args, spec.name) for spec in fields(options)}
        )
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def reproduce_command(
    command: str, value: _Options, word: Callable[[Any], str] = str
) -> str:
    """``command`` and the flags of the fields of ``value`` that differ from
    their defaults (those made with ``reproduced=False`` left out); ``word``
    writes a field's value as its flag takes it."""
    words = [command]
    for spec in fields(value):
        current = getattr(value, spec.name)
        if current == default_of(spec) or not spec.metadata["reproduced"]:
            continue
        if isinstance(current, bool):
            words.append(flag(spec.name))
        else:
            words.append(f"{flag(spec.name)} {word(current)}")
    return " ".join(words)


class BenchOptions:
    """The base of a benchmark's options dataclass: ``NAME`` is the word that
    follows ``nox -s bench --`` for it."""

    NAME: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def command(cls) -> str:
        """The command that runs the benchmark with its defaults."""
        return f"{BENCH_COMMAND} {cls.NAME}"

    def reproduce_command(self) -> str:
        """The ``nox`` command that runs this again, naming only the fields
        that differ from their defaults."""
        return reproduce_command(self.command(), self, self.word)

    @staticmethod
    def word(value: Any) -> str:
        """A field's value as its flag takes it: a tuple comma-separated, a
        float without trailing zeros."""
        if isinstance(value, tuple):
            return ",".join(str(item) for item in value)
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)


def check_runs(runs: int) -> None:
    """Refuse fewer runs than a median with its spread needs (a field made
    by :func:`runs_option`)."""
    if runs < MIN_RUNS:
        raise ValueError(
            f"--runs {runs}: at least {MIN_RUNS} (medians with their spread)"
        )
