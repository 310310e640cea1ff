from __future__ import annotations

from pathlib import Path

import pytest

from series.upstream.errors import UpstreamError
from series.upstream.patchfile import is_placeholder_email, read_patch


def test_subject_is_unfolded_and_loses_its_patch_prefix(series):
    assert [p.subject for p in series] == [
        "Fail closed when a postgres ext_pillar query fails",
        "Reuse postgres ext_pillar connections and pass libpq options",
        "Add another thing with a long subject that git folds over two header lines",
    ]


def test_author_and_new_fragments_are_read(series):
    assert series[0].author == "saltfleet developers <dev@saltfleet.invalid>"
    assert series[0].author_is_placeholder
    assert not series[2].author_is_placeholder
    assert series[0].fragments == ("changelog/+pillar-fail-closed.fixed.md",)


@pytest.mark.parametrize(
    ("address", "placeholder"),
    [
        ("dev@saltfleet.invalid", True),
        ("maintainers@users.noreply.a-seed-ff3069f9.example", True),
        ("someone@example.com", True),
        ("a@b.test", True),
        ("jane@suse.com", False),
        ("dev@invalid.org", False),
    ],
)
def test_placeholder_domains(address, placeholder):
    assert is_placeholder_email(address) is placeholder


def test_a_file_that_is_no_patch_is_refused(tmp_path: Path):
    bad = tmp_path / "0001-x.patch"
    bad.write_text("just text\n")
    with pytest.raises(UpstreamError, match="not a git format-patch file"):
        read_patch(bad)
