"""The highstate round: ``salt '*' state.apply pkgstate`` on simulated minions through a real master.

The master runs the ``pkgstate`` ext_pillar, master_tops and engine on the
benchmark's PostgreSQL (:mod:`harness.pkgstate_master`); every simulated minion
fetches its pillar with a real ``_pillar`` request and applies
``pillar['pkgstate']['packages']`` to its package set
(:mod:`evil_minions.pkgstate_apply`). Two rounds: the first brings every minion to
its state (changes), the second finds nothing to do (no changes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.fleet import FleetConfig

#: the SLS of the shipped package state
SLS = "pkgstate"


@dataclass
class HighstateRound:
    """One ``state.apply pkgstate`` over the whole fleet."""

    seconds: float
    returns: int
    #: seconds after the publication at which each return arrived, sorted
    arrivals: list[float] = field(default_factory=list)
    states_changed: int = 0
    states_unchanged: int = 0
    states_failed: int = 0
    minions_changed: int = 0
    minions_failed: int = 0
    first_failure: str | None = None


def count_states(round_: HighstateRound, minion_id: str, ret: Any) -> None:
    """Add one minion's ``state.apply`` return to ``round_``'s counts."""
    if not isinstance(ret, Mapping):
        round_.minions_failed += 1
        round_.first_failure = round_.first_failure or f"{minion_id}: {ret!r}"[:300]
        return
    changed = failed = 0
    for chunk in ret.values():
        if not isinstance(chunk, Mapping) or chunk.get("__sls__") != SLS:
            continue
        if chunk.get("result") is False:
            failed += 1
            if round_.first_failure is None:
                round_.first_failure = f"{minion_id}: {chunk.get('comment')}"[:300]
        elif chunk.get("changes"):
            changed += 1
        else:
            round_.states_unchanged += 1
    round_.states_changed += changed
    round_.states_failed += failed
    round_.minions_changed += bool(changed)
    round_.minions_failed += bool(failed)


def _round(stack: Any, minions: int, timeout: int) -> HighstateRound:
    with stack.client() as client:
        started = time.perf_counter()
        result = HighstateRound(0.0, 0)
        for reply in client.cmd_iter(
            "*", "state.apply", [SLS], timeout=timeout, full_return=False
        ):
            for minion_id, data in reply.items():
                result.arrivals.append(time.perf_counter() - started)
                result.returns += 1
                count_states(result, minion_id, data.get("ret"))
            if result.returns >= minions:
                break
        result.seconds = time.perf_counter() - started
    result.arrivals.sort()
    return result


def run_highstate(
    *,
    dsn: str,
    minions: int,
    package_count: int,
    processes: int,
    timeout: int,
    root: Path,
    progress: Callable[[str], None] = print,
) -> list[HighstateRound]:
    """Start a master + ``minions`` simulated minions on ``dsn``; two rounds."""
    from harness.stack import fleet_stack

    fleet = FleetConfig(
        processes=processes, package_count=package_count, startup_pillar=False
    )
    rounds = []
    with fleet_stack(minions, root=root, fleet=fleet, dsn=dsn, pkgstates=True) as stack:
        for label in ("first (changes)", "second (nothing to do)"):
            progress(f"highstate round {label}: {minions} minions")
            rounds.append(_round(stack, minions, timeout))
            progress(
                f"  {rounds[-1].seconds:.1f} s, {rounds[-1].returns} returns, "
                f"{rounds[-1].states_changed} states changed"
            )
    return rounds
