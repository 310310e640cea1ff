"""The in-process measurements: save-to-visible (ours vs per-minion files) and compile time.

*Ours*: a save is one transaction (:meth:`PackageStateStore.save_revision`);
the ``pkgstate`` ext_pillar resolves on every pillar compile, so the next
compile of every affected minion sees the revision as soon as it commits.
Visibility is proven, and timed separately, by compiling every affected
minion's pillar through Salt (``salt.pillar.Pillar.compile_pillar`` with the
master's ``ext_pillar``: the code a ``_pillar`` request runs) and finding the
new revision in each result's ``sources``.

*Baseline*, per-minion SLS file generation as Uyuni's
``SaltStateGeneratorService`` does it: on every save, for each affected
minion, read that minion's package state from the database, render it and
rewrite ``packages-<minion>.sls``; the revision is visible when the last file
is written.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.pkgstates.scenario import Scenario, changed_revision, grains_of

#: the ext_pillar the master runs for package states
EXT_PILLAR: list[dict[str, Any]] = [{"pkgstate": {}}]


@dataclass
class SaveRound:
    """One measured save of the group revision, by one variant."""

    revision: int
    save_s: float
    #: ours: compiling every affected minion's pillar; baseline: writing files
    after_s: float
    #: affected minions whose compile (or file) shows the new revision
    visible: int


@dataclass
class InProcessResult:
    """What :func:`measure` found."""

    minions: int
    affected: int
    entries_per_state: int
    ours: list[SaveRound] = field(default_factory=list)
    baseline: list[SaveRound] = field(default_factory=list)
    #: compile of every minion's pillar (ours, loaders built for each and
    #: reused) / read+render of every file (baseline)
    compile_ours_s: list[float] = field(default_factory=list)
    compile_reuse_s: list[float] = field(default_factory=list)
    compile_files_s: list[float] = field(default_factory=list)
    identical: int = 0
    #: minions whose pillar from reused loaders was not the one from fresh ones
    reuse_different: list[str] = field(default_factory=list)
    different: list[str] = field(default_factory=list)
    managed_per_minion: list[int] = field(default_factory=list)


def load_scenario(store: Any, scenario: Scenario) -> None:
    """Create and assign every state of ``scenario`` (memberships already stored)."""
    from benchmarks.pkgstates.scenario import ORG

    for spec in scenario.states:
        if spec.scope == "minion":
            store.save_revision(spec.name, spec.entries)
            continue
        store.create_state(spec.name, spec.entries)
        if spec.scope == "org":
            store.assign(spec.name, org=ORG)
        elif spec.scope == "group":
            store.assign(spec.name, group=f"{ORG}/{spec.target}")
        else:
            store.assign(spec.name, grain=spec.target)


class PillarCompiler:
    """Compiles one minion's pillar as the master does for a ``_pillar`` request;
    with ``reuse``, as a master worker with ``pillar_reuse_loaders`` does."""

    def __init__(self, opts: Mapping[str, Any], *, reuse: bool = False) -> None:
        import salt.pillar

        self.opts = dict(opts, ext_pillar=EXT_PILLAR)
        self.loaders = salt.pillar.PillarLoaders() if reuse else None

    def __call__(self, minion_id: str) -> dict[str, Any]:
        """The compiled pillar of ``minion_id`` (with its synthetic grains)."""
        import salt.pillar

        pillar = salt.pillar.Pillar(
            self.opts, grains_of(minion_id), minion_id, "base", loaders=self.loaders
        ).compile_pillar()
        errors = pillar.get("_errors")
        if errors:
            raise RuntimeError(f"pillar of {minion_id} failed: {errors}")
        return dict(pillar)


def _has_revision(resolved: Mapping[str, Any], state: str, revision: int) -> bool:
    return any(
        s["state"] == state and s["revision"] == revision
        for s in resolved.get("sources", [])
    )


def sls_path(tree: Path, minion_id: str) -> Path:
    """The baseline's file of ``minion_id``, as Uyuni names it."""
    return tree / f"packages-{minion_id}.sls"


def generate_files(store: Any, tree: Path, ids: Sequence[str], header: str) -> int:
    """Rewrite ``packages-<id>.sls`` of every minion in ``ids``, one by one as
    Uyuni's generator does; returns the bytes written."""
    from saltext.pkgstate.render import render_sls, to_sls_text

    written = 0
    for minion_id in ids:
        resolved = store.resolve_for_minion(minion_id, grains_of(minion_id))
        text = to_sls_text(render_sls(resolved["packages"]), header=header)
        path = sls_path(tree, minion_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        written += len(text)
    return written


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def measure(
    store: Any,
    scenario: Scenario,
    opts: Mapping[str, Any],
    tree: Path,
    rounds: int,
    progress: Callable[[str], None] = print,
) -> InProcessResult:
    """Save-to-visible (both variants, ``rounds`` saves each) and compile time."""
    import salt.utils.yaml
    from saltext.pkgstate.render import canonical, render_sls

    group_state = scenario.state(f"group-{scenario.measured_group}")
    affected = scenario.groups[scenario.measured_group]
    compile_pillar = PillarCompiler(opts)
    # what proves visibility: a master worker that reuses its loaders
    compile_reused = PillarCompiler(opts, reuse=True)
    result = InProcessResult(len(scenario.ids), len(affected), len(group_state.entries))
    tree.mkdir(parents=True, exist_ok=True)
    # warm-up: loaders, connections, the store's revision cache; files exist
    compile_pillar(affected[0])
    compile_reused(affected[0])
    generate_files(store, tree, scenario.ids, "warm-up")
    for index in range(rounds):
        for variant in ("ours", "baseline"):
            entries = changed_revision(group_state, f"{variant}-{index}")
            save_s, revision = _timed(
                functools.partial(store.save_revision, group_state.name, entries)
            )
            if variant == "ours":
                after_s, pillars = _timed(
                    lambda: {m: compile_reused(m)["pkgstate"] for m in affected}
                )
                visible = sum(
                    _has_revision(p, group_state.name, revision.revision)
                    for p in pillars.values()
                )
                result.ours.append(
                    SaveRound(revision.revision, save_s, after_s, visible)
                )
            else:
                header = f"{group_state.name} revision {revision.revision}"
                after_s, _ = _timed(
                    functools.partial(generate_files, store, tree, affected, header)
                )
                visible = sum(header in sls_path(tree, m).read_text() for m in affected)
                result.baseline.append(
                    SaveRound(revision.revision, save_s, after_s, visible)
                )
            progress(
                f"  round {index + 1} {variant}: save {save_s * 1000:.1f} ms, "
                f"then {after_s:.2f} s, visible on {visible}/{len(affected)}"
            )
    # compile time for every minion, and identical applied states
    for _ in range(rounds):
        seconds, ours = _timed(
            lambda: {m: compile_pillar(m)["pkgstate"] for m in scenario.ids}
        )
        result.compile_ours_s.append(seconds)
        seconds, reused = _timed(
            lambda: {m: compile_reused(m)["pkgstate"] for m in scenario.ids}
        )
        result.compile_reuse_s.append(seconds)
        result.reuse_different = sorted(m for m in ours if reused.get(m) != ours[m])
        seconds, files = _timed(
            lambda: {
                m: salt.utils.yaml.safe_load(sls_path(tree, m).read_text())
                for m in scenario.ids
            }
        )
        result.compile_files_s.append(seconds)
    for minion_id in scenario.ids:
        mine = canonical(render_sls(ours[minion_id]["packages"]))
        if mine == canonical(files[minion_id] or {}):
            result.identical += 1
        else:
            result.different.append(minion_id)
        result.managed_per_minion.append(len(ours[minion_id]["packages"]))
    return result
