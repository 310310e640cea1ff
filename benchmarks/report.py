"""Writing benchmark reports: Markdown tables, PNG plots, the environment."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import statistics
import subprocess
import types
import typing
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

#: the checkout the benchmarks run from
CHECKOUT = RESULTS.parent.parent


def shown_path(path: str | Path) -> str:
    """``path`` as a committed report names it: relative to the checkout
    when it is inside it (the same in every clone), else as it is."""
    resolved = Path(path).resolve()
    if resolved.is_relative_to(CHECKOUT):
        return str(resolved.relative_to(CHECKOUT))
    return str(path)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    return statistics.median(values)


class Runs(list[float]):
    """A measurement's value in each run, with the median and the spread a
    report shows of them."""

    @property
    def median(self) -> float:
        """Median over the runs."""
        return median(self)

    @property
    def spread(self) -> str:
        """The runs' lowest and highest value."""
        return f"{min(self):.1f}-{max(self):.1f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table of ``rows`` under ``headers``."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def utc_minute() -> str:
    """Now, to the minute, as the reports write a time (in UTC)."""
    return f"{datetime.now(UTC):%Y-%m-%d %H:%M}"


def environment() -> str:
    """One paragraph on where the numbers come from."""
    import salt.version

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "?"
    return (
        f"Measured {utc_minute()} UTC on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"Salt {salt.version.__version__} (patched tree), saltfleet {commit or '?'}."
    )


def trees_header(title: str, name: str, command: str, commits: str) -> list[str]:
    """The first lines of report ``name`` of a benchmark that compares Salt
    trees: its title, where and when, the trees (``commits``, from
    :func:`benchmarks.salt_trees.describe_commits`) and how to regenerate it."""
    return [
        f"# {title}",
        "",
        environment(),
        f"Salt trees measured: {commits}.",
        "",
        f"Regenerate: `{command}` "
        f"(writes `benchmarks/results/{name}.md`, `.json` and `.png`).",
        "",
    ]


def analysis_name(name: str) -> str:
    """The file of report ``name``'s analysis written by hand: a regenerated
    report never overwrites it, and links to it while it exists."""
    return f"{name}-analysis.md"


def write(name: str, markdown: str) -> Path:
    """Write ``markdown`` as ``results/<name>.md``; return its path. When
    ``results/<name>-analysis.md`` exists, the report ends with a link to it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    analysis = RESULTS / analysis_name(name)
    if analysis.exists():
        markdown = (
            markdown.rstrip()
            + f"\n\nAnalysis, written by hand after a run and kept when the report "
            f"is regenerated (check its date against this report's): "
            f"[{analysis.name}]({analysis.name})\n"
        )
    path.write_text(markdown.rstrip() + "\n")
    return path


def data_json(data: dict[str, Any]) -> str:
    """``data`` as the JSON of :func:`write_data`: dataclasses become
    objects, sets sorted lists (:func:`from_plain` reads it back)."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {
                f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (set, frozenset)):
            return sorted(plain(v) for v in value)
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(data), sort_keys=True, default=str) + "\n"


def write_data(name: str, data: dict[str, Any]) -> Path:
    """The raw measurements behind a report, as ``results/<name>.json``
    (:func:`data_json`)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(data_json(data))
    return path


def from_plain(kind: Any, value: Any) -> Any:
    """What :func:`write_data` wrote as ``value``, rebuilt as ``kind`` (a
    type: a dataclass, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``,
    ``Counter[str]``, ``X | None`` or a plain type). A dataclass field the
    data lacks keeps its default, so data written before the field existed
    still reads.

    .. code-block:: python

        result = from_plain(VariantResult, json.loads(path.read_text()))
    """
    if value is None:
        return None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in args if arg is not type(None)]
        return from_plain(inner, value)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        hints = typing.get_type_hints(kind)
        return kind(
            **{
                spec.name: from_plain(hints[spec.name], value[spec.name])
                for spec in dataclasses.fields(kind)
                if spec.init and spec.name in value
            }
        )
    if origin is tuple:
        return tuple(from_plain(args[0], item) for item in value)
    if origin in (list, set, frozenset):
        return origin(from_plain(args[0], item) for item in value)
    if isinstance(kind, type) and issubclass(kind, list) and kind is not list:
        # a list subclass such as Runs: its items as its generic base says
        bases = [
            base
            for base in getattr(kind, "__orig_bases__", ())
            if typing.get_origin(base) is list
        ]
        return kind(from_plain(bases[0] if bases else list[Any], value))
    if origin is not None and issubclass(origin, dict):
        return origin({key: from_plain(args[-1], item) for key, item in value.items()})
    if kind is float:
        return float(value)
    return value


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend, its own logging at
    INFO: at DEBUG (where a test run's logging is) it logs a score for every
    font it knows, a few hundred lines that bury whatever a failing test
    logged before the plot."""
    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.INFO)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bar_plot(
    name: str,
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    ylabel: str,
) -> Path:
    """A grouped bar chart saved as ``results/<name>.png``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [x + i * width for x in range(len(labels))]
        ax.bar(xs, values, width=width, label=label)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(series) > 1:
        ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, name)


def save_figure(fig: Any, name: str) -> Path:
    """Lay out ``fig``, save it as ``results/<name>.png`` and close it."""
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.savefig(path)
    pyplot().close(fig)
    return path
