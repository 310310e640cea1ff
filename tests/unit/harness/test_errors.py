"""The exception trees drawn in harness/errors.py and evil_minions/errors.py
list exactly the classes the code has, each under its module."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

import pytest

import evil_minions
import harness
from evil_minions.errors import EvilMinionsError
from harness.errors import HarnessError


def _subclasses(base: type) -> set[type]:
    found: set[type] = set()
    for cls in base.__subclasses__():
        found |= {cls, *_subclasses(cls)}
    return found


def _import_all(package: ModuleType) -> None:
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        # __main__ runs the CLI; salt_ext is for Salt's loader, not an import
        if not info.name.endswith(".__main__") and ".salt_ext" not in info.name:
            importlib.import_module(info.name)


@pytest.mark.parametrize(
    ("package", "base"), [(harness, HarnessError), (evil_minions, EvilMinionsError)]
)
def test_the_drawn_tree_lists_every_error_class(
    package: ModuleType, base: type
) -> None:
    _import_all(package)
    drawn = set(
        re.findall(
            r"── ([\w.]+)",
            importlib.import_module(f"{package.__name__}.errors").__doc__ or "",
        )
    )
    prefix = f"{package.__name__}."
    in_code = {
        f"{cls.__module__.removeprefix(prefix)}.{cls.__name__}"
        for cls in _subclasses(base)
        if cls.__module__.startswith(prefix)
    }
    assert drawn == in_code
