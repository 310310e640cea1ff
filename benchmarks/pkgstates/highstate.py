"""The highstate rounds: ``salt '*' state.apply pkgstate`` on simulated minions through a real master.

The master runs the ``pkgstate`` ext_pillar, master_tops and engine on the
benchmark's PostgreSQL (:mod:`harness.pkgstate_master`); every simulated minion
fetches its pillar with a real ``_pillar`` request and applies
``pillar['pkgstate']['packages']`` to its package set
(:mod:`evil_minions.pkgstate_apply`).

Each variant (:data:`VARIANTS`: how the master compiles pillars) gets its own
master and fleet, one after the other, and the same rounds: save a new
revision of the group that holds every minion, then run the round. A minion
has seen the revision when the states it applied are the ones the revision
resolves to for it; save-to-visible ends with the return of the last minion
of the round, and only when every minion has seen it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.pkgstates.scenario import Scenario, changed_revision, grains_of
from harness.fleet import FleetConfig, state_id

#: the SLS of the shipped package state
SLS = "pkgstate"


@dataclass(frozen=True)
class Variant:
    """How the master compiles pillars: a label and its master options."""

    label: str
    master_opts: Mapping[str, Any]


#: seconds between looks at the fleet's logs for returns its minions gave up
LOST_POLL_S: Final = 5.0
#: seconds between two progress lines while a round runs
PROGRESS_S: Final = 30.0
#: once every minion has returned or given up its return, seconds without a
#: return after which the round ends: a given-up return whose try is still in
#: the master's queue arrives late, and the master works its queue without
#: pause, so a quiet this long means the returns still missing are lost
QUIET_S: Final = 60.0
#: what a minion logs when its job gives up sending a return (Salt 3008.3's
#: words, which the simulator logs too)
GAVE_UP: Final = "failed to return the job information for job {jid}"

#: the master set-ups a run compares, by the name ``--variants`` takes
VARIANTS: Final = {
    "off": Variant(
        "today: pillar_reuse_loaders off (the default)",
        {"pillar_reuse_loaders": False},
    ),
    "on": Variant("pillar_reuse_loaders on", {"pillar_reuse_loaders": True}),
    "cache": Variant(
        "stock tuning: pillar_cache on (disk, ttl 3600 s), reuse off",
        {
            "pillar_reuse_loaders": False,
            "pillar_cache": True,
            "pillar_cache_ttl": 3600,
            "pillar_cache_backend": "disk",
        },
    ),
}


def variant_names(value: str) -> str:
    """A comma-separated list of :data:`VARIANTS` names (argparse type)."""
    names = [name.strip() for name in value.split(",")]
    unknown = [name for name in names if name not in VARIANTS]
    if not value.strip() or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"invalid variants {value!r}: a comma-separated list without "
            f"repetition of {', '.join(VARIANTS)}"
        )
    return ",".join(names)


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
    #: returns the minions gave up sending (each after its tries, as a
    #: 3008.3 minion's job gives up); one whose try reached the master's
    #: queue still arrives, late
    given_up: int = 0
    #: returns that never came: every minion had returned or given up and
    #: the master sent none for QUIET_S; the round cannot finish
    lost: int = 0
    #: the save of the revision before the round (0 when there was none)
    save_s: float = 0.0
    #: minions whose applied states are those of the new revision
    visible: int = 0
    first_stale: str | None = None
    #: the applied state IDs of each minion, while the round is counted
    applied: dict[str, set[str]] = field(default_factory=dict, repr=False)

    @property
    def save_to_visible_s(self) -> float:
        """From the save to the last return: when every minion has seen it."""
        return self.save_s + self.seconds


@dataclass
class VariantRounds:
    """The rounds of one variant."""

    name: str
    label: str
    rounds: list[HighstateRound] = field(default_factory=list)


def count_states(round_: HighstateRound, minion_id: str, ret: Any) -> None:
    """Add one minion's ``state.apply`` return to ``round_``'s counts."""
    if not isinstance(ret, Mapping):
        round_.minions_failed += 1
        round_.first_failure = round_.first_failure or f"{minion_id}: {ret!r}"[:300]
        return
    changed = failed = 0
    applied = round_.applied.setdefault(minion_id, set())
    for chunk in ret.values():
        if not isinstance(chunk, Mapping) or chunk.get("__sls__") != SLS:
            continue
        applied.add(str(chunk.get("__id__")))
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


def expected_states(resolved: Mapping[str, Any]) -> set[str]:
    """The state IDs a minion applies for its resolved ``pkgstate`` pillar
    (``pkg.held`` ones aside)."""
    return {
        state_id(str(entry.get("policy", "")), name)
        for name, entry in resolved.get("packages", {}).items()
    }


def count_visible(round_: HighstateRound, store: Any, ids: Sequence[str]) -> None:
    """Count the minions whose applied states are those the store resolves now."""
    resolved = store.resolve_all({m: grains_of(m) for m in ids})
    for minion_id in ids:
        applied = {
            sid
            for sid in round_.applied.get(minion_id, set())
            if not sid.startswith(state_id("held", ""))
        }
        if minion_id in round_.applied and applied == expected_states(
            resolved[minion_id]
        ):
            round_.visible += 1
        elif round_.first_stale is None:
            round_.first_stale = minion_id
    round_.applied.clear()


def given_up_returns(run_dir: Path, jid: str) -> int:
    """How many returns of job ``jid`` the fleet's minions gave up sending,
    from the logs of its worker processes."""
    needle = GAVE_UP.format(jid=jid)
    return sum(
        path.read_text(errors="replace").count(needle)
        for path in sorted(run_dir.glob("worker-*.log"))
    )


def _round(
    stack: Any,
    minions: int,
    timeout: int,
    progress: Callable[[str], None] = print,
) -> HighstateRound:
    """One round: until every minion returned; or until every minion returned
    or gave up its return and none came for :data:`QUIET_S` (the missing
    ones are lost); or until ``timeout``. Says how far it is every
    :data:`PROGRESS_S`."""
    import salt.utils.jid

    run_dir = Path(stack.fleet.config.run_dir)
    with stack.client() as client:
        jid = salt.utils.jid.gen_jid(client.opts)
        started = time.perf_counter()
        next_look = started + LOST_POLL_S
        next_say = started + PROGRESS_S
        last_return = started
        result = HighstateRound(0.0, 0)
        for reply in client.cmd_iter_no_block(
            "*", "state.apply", [SLS], timeout=timeout, jid=jid
        ):
            for minion_id, data in (reply or {}).items():
                last_return = time.perf_counter()
                result.arrivals.append(last_return - started)
                result.returns += 1
                count_states(result, minion_id, data.get("ret"))
            if result.returns >= minions:
                break
            now = time.perf_counter()
            if now >= next_look:
                next_look = now + LOST_POLL_S
                result.given_up = given_up_returns(run_dir, jid)
                if (
                    result.returns + result.given_up >= minions
                    and now - last_return >= QUIET_S
                ):
                    result.lost = minions - result.returns
                    break
            if now >= next_say:
                next_say = now + PROGRESS_S
                progress(
                    f"  {now - started:.0f} s: {result.returns} of {minions} "
                    f"returns, {result.given_up} given up by their minions"
                )
            if reply is None:
                time.sleep(0.01)  # what the blocking iterator sleeps
        result.seconds = time.perf_counter() - started
    result.arrivals.sort()
    return result


def run_highstate(
    *,
    dsn: str,
    store: Any,
    scenario: Scenario,
    variants: Sequence[str],
    rounds: int,
    package_count: int,
    processes: int,
    timeout: int,
    root: Path,
    progress: Callable[[str], None] = print,
) -> list[VariantRounds]:
    """Per variant, a master + the scenario's simulated minions on ``dsn``;
    ``rounds`` rounds, each after a new revision of the measured group."""
    from harness.stack import fleet_stack

    fleet = FleetConfig(
        processes=processes, package_count=package_count, startup_pillar=False
    )
    group_state = scenario.state(f"group-{scenario.measured_group}")
    minions = len(scenario.ids)
    results = []
    for name in variants:
        variant = VARIANTS[name]
        measured = VariantRounds(name, variant.label)
        with fleet_stack(
            minions,
            root=root / name,
            fleet=fleet,
            dsn=dsn,
            pkgstates=True,
            master_opts=variant.master_opts,
        ) as stack:
            for index in range(rounds):
                entries = changed_revision(group_state, f"highstate-{name}-{index}")
                started = time.perf_counter()
                store.save_revision(group_state.name, entries)
                save_s = time.perf_counter() - started
                progress(f"highstate {name} round {index + 1}: {minions} minions")
                round_ = _round(stack, minions, timeout, progress)
                round_.save_s = save_s
                count_visible(round_, store, scenario.ids)
                measured.rounds.append(round_)
                progress(
                    f"  {round_.seconds:.1f} s, {round_.returns} returns, "
                    f"{round_.given_up} given up by their minions, "
                    f"{round_.lost} lost, "
                    f"{round_.states_changed} states changed, new revision "
                    f"applied on {round_.visible}"
                )
        results.append(measured)
    return results
