"""Target matching goes through Salt's own matcher modules (salt/matchers) on a
simulated minion's view; a publication not meant for a minion must not match."""

from __future__ import annotations

import pytest

from evil_minions.config import minion_ids
from evil_minions.grains import synthetic_grains
from evil_minions.matching import TargetMatcher, match_view

from .fakes import publication


@pytest.fixture(scope="module")
def matcher():
    import salt.config

    return TargetMatcher(salt.config.minion_config(None))


def _first_with(family: str) -> str:
    for minion_id in minion_ids("evil", 199):
        if synthetic_grains(minion_id)["os_family"] == family:
            return minion_id
    raise AssertionError(f"no {family} minion in the first 200 ids")


@pytest.fixture(scope="module")
def suse_view():
    minion_id = _first_with("Suse")
    return match_view(
        minion_id,
        synthetic_grains(minion_id),
        {"role": "web", "tier": {"name": "front"}},
    )


@pytest.fixture(scope="module")
def redhat_view():
    minion_id = _first_with("RedHat")
    return match_view(minion_id, synthetic_grains(minion_id))


def test_glob(matcher, suse_view):
    assert matcher.matches(publication("test.ping", tgt="evil-*"), suse_view)
    assert matcher.matches(publication("test.ping", tgt="*"), suse_view)
    assert not matcher.matches(publication("test.ping", tgt="other-*"), suse_view)


def test_missing_tgt_type_means_glob(matcher, suse_view):
    load = publication("test.ping", tgt=suse_view["id"])
    del load["tgt_type"]
    assert matcher.matches(load, suse_view)


def test_list_as_sent_by_the_master_and_as_string(matcher, suse_view, redhat_view):
    tgt = [suse_view["id"], "evil-9999"]
    assert matcher.matches(
        publication("test.ping", tgt=tgt, tgt_type="list"), suse_view
    )
    assert not matcher.matches(
        publication("test.ping", tgt=tgt, tgt_type="list"), redhat_view
    )
    assert matcher.matches(
        publication("test.ping", tgt=f"a,{suse_view['id']},b", tgt_type="list"),
        suse_view,
    )


def test_pcre(matcher, suse_view):
    assert matcher.matches(
        publication("test.ping", tgt=r"evil-\d{4}$", tgt_type="pcre"), suse_view
    )
    assert not matcher.matches(
        publication("test.ping", tgt=r"evil-\d{5}$", tgt_type="pcre"), suse_view
    )


def test_grain_selects_by_synthetic_grains(matcher, suse_view, redhat_view):
    load = publication("test.ping", tgt="os_family:Suse", tgt_type="grain")
    assert matcher.matches(load, suse_view)
    assert not matcher.matches(load, redhat_view)


def test_grain_glob_and_custom_delimiter(matcher, suse_view):
    assert matcher.matches(
        publication("test.ping", tgt="ip4_interfaces:eth0:10.*", tgt_type="grain"),
        suse_view,
    )
    load = publication("test.ping", tgt="os_family|Suse", tgt_type="grain")
    load["delimiter"] = "|"
    assert matcher.matches(load, suse_view)


def test_grain_pcre(matcher, suse_view, redhat_view):
    load = publication(
        "test.ping", tgt="osfinger:(SLES|Leap|Tumbleweed).*", tgt_type="grain_pcre"
    )
    assert matcher.matches(load, suse_view)
    assert not matcher.matches(load, redhat_view)


def test_pillar_uses_the_minions_fetched_pillar(matcher, suse_view, redhat_view):
    load = publication("test.ping", tgt="tier:name:front", tgt_type="pillar")
    assert matcher.matches(load, suse_view)
    assert not matcher.matches(load, redhat_view)


def test_ipcidr(matcher, suse_view):
    ip = suse_view["grains"]["ipv4"][0]
    assert matcher.matches(
        publication("test.ping", tgt=ip, tgt_type="ipcidr"), suse_view
    )
    assert matcher.matches(
        publication("test.ping", tgt="10.0.0.0/8", tgt_type="ipcidr"), suse_view
    )
    assert not matcher.matches(
        publication("test.ping", tgt="192.168.0.0/16", tgt_type="ipcidr"), suse_view
    )


@pytest.mark.parametrize(
    ("expression", "suse", "redhat"),
    [
        ("G@os_family:Suse and evil-*", True, False),
        ("G@os_family:Suse or G@os_family:RedHat", True, True),
        ("evil-* and not G@os_family:Suse", False, True),
        ("I@role:web and E@evil-\\d+", True, False),
        ("S@10.0.0.0/8 and P@os_family:(Suse|RedHat)", True, True),
        ("( G@os_family:Debian or L@nobody ) and evil-*", False, False),
    ],
)
def test_compound(matcher, suse_view, redhat_view, expression, suse, redhat):
    load = publication("test.ping", tgt=expression, tgt_type="compound")
    assert matcher.matches(load, suse_view) is suse
    assert matcher.matches(load, redhat_view) is redhat


def test_nodegroups_only_match_once_the_master_expanded_them(matcher, suse_view):
    # The master turns -N into a compound target; a raw nodegroup publication
    # carries no definitions and matches nothing, as on a real minion.
    assert not matcher.matches(
        publication("test.ping", tgt="group1", tgt_type="nodegroup"), suse_view
    )
    expanded = publication("test.ping", tgt="( G@os_family:Suse )", tgt_type="compound")
    assert matcher.matches(expanded, suse_view)


def test_invalid_publications_never_match(matcher, suse_view):
    assert not matcher.matches(
        publication("test.ping", tgt="*", tgt_type="no_such_type"), suse_view
    )
    incomplete = publication("test.ping")
    del incomplete["arg"]
    assert not matcher.matches(incomplete, suse_view)
    assert not matcher.matches(
        publication("test.ping", tgt="os_family", tgt_type="grain"), suse_view
    )
