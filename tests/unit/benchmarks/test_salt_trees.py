"""The Salt trees benchmarks compare, and the order variants run in."""

from __future__ import annotations

from benchmarks.salt_trees import rotated

VARIANTS = ("pristine", "series off", "series on")


def test_every_variant_goes_first_once_in_as_many_runs() -> None:
    firsts = {rotated(VARIANTS, run)[0] for run in range(3)}
    assert firsts == set(VARIANTS)
    assert sorted(rotated(VARIANTS, 4)) == sorted(VARIANTS)
