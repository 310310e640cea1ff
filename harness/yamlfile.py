"""Reading YAML and JSON files a user wrote: errors that say where."""

from __future__ import annotations

import json

import yaml


def describe_error(exc: Exception) -> str:
    """What went wrong reading a file, with the line and column where known."""
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        context = f" ({exc.context})" if exc.context else ""
        return f"{where}: {exc.problem}{context}"
    return str(exc).splitlines()[0]
