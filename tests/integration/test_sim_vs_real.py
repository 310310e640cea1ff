"""One real salt-minion and one simulated minion, same master, same failing
inputs: both must answer with the same retcode and return shape.

Guards against the simulator reporting success where a real 3008 minion
fails (a highstate on a pillar with ``_errors`` used to return 0 states with
retcode 0; a failed ``pkg.installed`` used to have retcode 0). The real
minion never changes this machine's packages: the package it is asked to
install exists in no repository, so the package manager refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evil_minions import synthetic_grains
from harness.fleet import FleetConfig
from harness.pkgstate_master import sls_root
from harness.stack import Stack, StackSettings, master_layout

pytestmark = pytest.mark.integration

MISSING = "saltfleet-no-such-package"
PILLAR_FILES = {
    "top.sls": "base:\n  '*':\n    - pkgstate\n",
    "pkgstate.sls": (
        f"pkgstate:\n  packages:\n    {MISSING}:\n      policy: installed\n"
    ),
    # a pillar environment whose only SLS fails to render, for both minions
    "broken/top.sls": "broken:\n  '*':\n    - bad\n",
    "broken/bad.sls": "{{ raise('saltfleet: this pillar fails on purpose') }}\n",
    # and one where the package states are empty
    "empty/top.sls": "empty:\n  '*':\n    - nopkgs\n",
    "empty/nopkgs.sls": "pkgstate:\n  packages: {}\n",
}
#: long enough for the real minion's package manager to refuse the package
TIMEOUT = 300


def _debian_index() -> int:
    """The fleet index of a simulated minion with Debian grains, like this
    machine's real minion (package failures read as on Debian)."""
    return next(
        i
        for i in range(1, 100)
        if synthetic_grains(f"evil-{i:04d}")["os_family"] == "Debian"
    )


@pytest.fixture(scope="module")
def stack(open_tmp_module) -> Iterator[Stack]:
    root = open_tmp_module / "stack"
    layout = master_layout(root)
    settings = StackSettings(
        root=root,
        real_minion=True,
        fleet=FleetConfig(count=1, processes=1, start_index=_debian_index()),
        pillar_files=PILLAR_FILES,
        master_opts={
            "file_roots": {"base": [str(layout.file_root), sls_root()]},
            "pillar_roots": {
                "base": [str(layout.pillar_root)],
                "broken": [str(layout.pillar_root / "broken")],
                "empty": [str(layout.pillar_root / "empty")],
            },
        },
    )
    with Stack(settings) as running:
        yield running


def _both(stack: Stack, fun: str, arg: list[Any]) -> tuple[dict, dict]:
    """The full returns of the real and the simulated minion to one job."""
    assert stack.minion is not None and stack.fleet is not None
    real, sim = stack.minion.minion_id, stack.fleet.ids[0]
    with stack.client() as client:
        ret = client.cmd(
            [real, sim], fun, arg, tgt_type="list", full_return=True, timeout=TIMEOUT
        )
    assert set(ret) == {real, sim}, f"{fun}: not both minions returned: {ret}"
    return ret[real], ret[sim]


def _same_envelope(real: dict, sim: dict) -> None:
    """Same fields beside ``ret``, and the same retcode, success and outputter."""
    assert set(sim) == set(real)
    for key in ("retcode", "success", "out"):
        assert sim.get(key) == real.get(key), key


def test_highstate_on_a_pillar_with_errors_is_refused_alike(stack: Stack) -> None:
    real, sim = _both(stack, "state.apply", ["pillarenv=broken"])
    _same_envelope(real, sim)
    assert real["retcode"] == 5
    assert real["ret"][0] == "Pillar failed to render with the following messages:"
    assert sim["ret"] == real["ret"]


def test_state_sls_on_a_pillar_with_errors_is_refused_alike(stack: Stack) -> None:
    real, sim = _both(stack, "state.sls", ["pkgstate", "pillarenv=broken"])
    _same_envelope(real, sim)
    assert real["retcode"] == 5 and sim["ret"] == real["ret"]


def test_a_failed_package_state_fails_alike(stack: Stack) -> None:
    # Without a pillarenv Salt merges the top files of every environment,
    # the broken one's included.
    real, sim = _both(stack, "state.sls", ["pkgstate", "pillarenv=base"])
    _same_envelope(real, sim)
    assert real["retcode"] == 2
    key = f"pkg_|-pkgstate-installed-{MISSING}_|-{MISSING}_|-installed"
    assert list(sim["ret"]) == list(real["ret"]) == [key]
    real_chunk, sim_chunk = real["ret"][key], sim["ret"][key]
    assert set(sim_chunk) == set(real_chunk)
    assert real_chunk["result"] is False and sim_chunk["result"] is False
    assert sim_chunk["changes"] == real_chunk["changes"] == {}
    assert sim_chunk["comment"] == real_chunk["comment"]


def test_a_state_run_with_no_states_reads_alike(stack: Stack) -> None:
    # Salt's check_result calls an empty run a failure
    real, sim = _both(stack, "state.sls", ["pkgstate", "pillarenv=empty"])
    _same_envelope(real, sim)
    assert sim["ret"] == real["ret"]


@pytest.mark.parametrize(
    ("fun", "arg"),
    [
        ("nosuch.function", []),
        ("test.ping", ["bogus=1"]),
        ("state.apply", ["pillar=not-a-dict"]),
        ("cmd.run", ["false"]),
        ("cmd.run", ["exit 3"]),
        ("saltutil.find_job", ["20990101000000000000"]),
        ("pillar.items", ["pillarenv=broken"]),
        ("pillar.items", ["pillarenv=broken", "unmask=True"]),
        ("pillar.item", ["nosuch"]),
        ("pkg.version", [MISSING]),
    ],
    ids=[
        "unknown-function",
        "bad-keyword",
        "bad-pillar-override",
        "false",
        "exit-3",
        "no-job",
        "pillar-errors-masked",
        "pillar-errors",
        "no-pillar-key",
        "no-package",
    ],
)
def test_errors_read_alike(stack: Stack, fun: str, arg: list[Any]) -> None:
    real, sim = _both(stack, fun, arg)
    _same_envelope(real, sim)
    assert sim["ret"] == real["ret"]


def test_a_function_raising_reads_alike(stack: Stack) -> None:
    real, sim = _both(stack, "test.sleep", ["soon"])
    _same_envelope(real, sim)
    assert real["retcode"] == 1
    # the rest is each one's traceback
    prefix = "The minion function caused an exception: Traceback"
    assert real["ret"].startswith(prefix) and sim["ret"].startswith(prefix)
    assert sim["ret"].splitlines()[-1] == real["ret"].splitlines()[-1]


def test_a_missing_argument_reads_alike(stack: Stack) -> None:
    real, sim = _both(stack, "test.echo", [])
    _same_envelope(real, sim)
    assert real["retcode"] == 1
    # the rest is each function's docstring
    assert sim["ret"].splitlines()[0] == real["ret"].splitlines()[0]
