"""
Synthetic state runs in Salt's highstate return format.

A state run returns ``{state_key: chunk}`` where ``state_key`` is
``"<module>_|-<id>_|-<name>_|-<function>"`` and every chunk carries ``name``,
``result``, ``changes``, ``comment``, ``__sls__``, ``__run_num__``, ``__id__``,
``start_time`` and ``duration`` (milliseconds). That is what the master's job
cache, the ``highstate`` outputter and Uyuni's state result parsing consume.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence
from typing import Any, Final

#: Default SLS files of a simulated highstate.
HIGHSTATE_SLS: Final = ("base", "packages", "services")

_TEMPLATES: Final = (
    ("pkg", "installed", "The following packages were already installed: {name}"),
    ("file", "managed", "File {name} is in the correct state"),
    ("service", "running", "The service {name} is already running"),
    ("cmd", "run", 'Command "{name}" run'),
)
_FILES: Final = (
    "/etc/motd",
    "/etc/chrony.conf",
    "/etc/sysctl.d/99-sim.conf",
    "/etc/hosts",
)
_SERVICES: Final = ("sshd", "chronyd", "salt-minion", "cron")


def split_mods(mods: str | Sequence[str] | None) -> list[str]:
    """The SLS names of ``mods`` (``"a,b"`` or a list); ``[]`` means a highstate."""
    if not mods:
        return []
    if isinstance(mods, str):
        return [m.strip() for m in mods.split(",") if m.strip()]
    return [str(m) for m in mods]


def _split(mods: str | Sequence[str] | None) -> list[str]:
    return split_mods(mods) or list(HIGHSTATE_SLS)


def state_key(module: str, state_id: str, name: str, function: str) -> str:
    """The key Salt uses for one state chunk in a run's return."""
    return f"{module}_|-{state_id}_|-{name}_|-{function}"


def synthetic_state_run(
    *,
    mods: str | Sequence[str] | None,
    count: int,
    duration: float,
    package_names: Sequence[str],
    rng: random.Random,
    test: bool = False,
    started: datetime.datetime | None = None,
) -> dict[str, dict[str, Any]]:
    """
    A successful state run of ``count`` states spread over ``mods``, lasting ``duration`` seconds.

    With ``test=True`` results are ``None`` and comments say what would happen,
    as Salt reports a dry run.

    .. code-block:: python

        run = synthetic_state_run(mods="web", count=2, duration=1.0,
                                  package_names=["vim"], rng=random.Random(0))
        sorted(run)  # ['file_|-web_file_1_|-/etc/chrony.conf_|-managed', 'pkg_|-...']
    """
    sls_names = _split(mods)
    clock = started or datetime.datetime.now()
    # Split the run's wall time over the states unevenly, like real runs where
    # a package install dominates and file checks take a millisecond.
    weights = [rng.uniform(0.2, 3.0) for _ in range(count)]
    scale = duration * 1000.0 / sum(weights)
    packages = list(package_names) or ["vim"]
    run: dict[str, dict[str, Any]] = {}
    for index in range(count):
        module, function, comment = _TEMPLATES[index % len(_TEMPLATES)]
        sls = sls_names[index % len(sls_names)]
        if module == "pkg":
            name = packages[index % len(packages)]
        elif module == "file":
            name = _FILES[index % len(_FILES)]
        elif module == "service":
            name = _SERVICES[index % len(_SERVICES)]
        else:
            name = f"/usr/bin/true # step {index}"
        state_id = f"{sls}_{module}_{index}"
        millis = round(weights[index] * scale, 3)
        run[state_key(module, state_id, name, function)] = {
            "__id__": state_id,
            "__run_num__": index,
            "__sls__": sls,
            "changes": {},
            "comment": (
                f"{module}.{function} would be checked for {name}" if test
                else comment.format(name=name)
            ),
            "duration": millis,
            "name": name,
            "result": None if test else True,
            "start_time": clock.strftime("%H:%M:%S.%f"),
        }  # fmt: skip
        clock += datetime.timedelta(milliseconds=millis)
    return run
