"""On a stock master the caller's grants come from external_auth, fail closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import salt.client.mixins
import salt.config
from salt.exceptions import SaltInvocationError

from saltext.query import stock

WEB = [{"web*": ["test.ping"]}, {"@runner": ["query.query"]}]
EVERYWHERE = [{"*": ["test.ping", "pillar.items"]}, "@runner"]


def _opts(tmp_path: Path, external_auth: dict[str, Any]) -> dict[str, Any]:
    opts = dict(salt.config.DEFAULT_MASTER_OPTS)
    opts.update(
        cachedir=str(tmp_path / "cache"),
        pki_dir=str(tmp_path / "pki"),
        user="salt",
        __role="master",
        external_auth=external_auth,
    )
    return opts


@pytest.mark.parametrize(
    "external_auth,user,expected",
    [
        ({"pam": {"web-operator": WEB}}, "web-operator", WEB),
        # the same grants in two backends: either way the same
        ({"pam": {"ann": WEB}, "ldap": {"ann": WEB}}, "ann", WEB),
        # only a backend that allows the runner can have let the call through
        (
            {"sharedsecret": {"ann": WEB}, "file": {"*": ["test.ping"]}},
            "ann",
            WEB,
        ),
        # the catch-all is for eauth accounts, as Salt's fill_auth_list has it
        ({"pam": {"*": WEB}}, "someone", WEB),
        ({"pam": {"*": WEB}}, "root", None),
        ({"pam": {"web-operator": WEB}}, "salt", None),
        ({}, "root", None),
        ({}, "sudo_ann", None),
        ({}, "Reactor", None),
        ({}, "UNKNOWN", None),
        # an account named like the master's user is an account
        ({"pam": {"root": WEB}}, "root", WEB),
    ],
)
def test_grants_by_name(
    tmp_path: Path, external_auth: dict[str, Any], user: str, expected: Any
) -> None:
    assert stock.acl_of(_opts(tmp_path, external_auth), user) == expected


@pytest.mark.parametrize(
    "external_auth,user,message",
    [
        (
            {"pam": {"ann": WEB}, "ldap": {"ann": EVERYWHERE}},
            "ann",
            "different grants in the external_auth backends ldap, pam",
        ),
        ({"pam": {"ops%": EVERYWHERE}}, "ann", "grants through a group"),
        ({"pam": {"ann": [{"*": ["test.ping"]}]}}, "ann", "allow query.query"),
        ({"rest": {}}, "ann", "no grants in external_auth"),
        ({}, "publisher", "run salt-run as 'salt'"),
        ({}, None, "cannot tell who called it"),
        ({}, "", "cannot tell who called it"),
    ],
)
def test_a_caller_it_cannot_place_is_refused(
    tmp_path: Path, external_auth: dict[str, Any], user: str | None, message: str
) -> None:
    with pytest.raises(SaltInvocationError, match=message):
        stock.acl_of(_opts(tmp_path, external_auth), user)


def test_a_master_that_passes_the_acl_is_believed(tmp_path: Path) -> None:
    # the Salt these tests run on has the query runner built in
    assert stock.master_passes_acl()
    opts = _opts(tmp_path, {"pam": {"ann": WEB}})
    assert stock.caller(opts, "ann", None).auth_list is None
    assert stock.caller(opts, "bob", EVERYWHERE).auth_list == EVERYWHERE


def test_a_stock_master_gets_the_acl_from_external_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stock_keywords = salt.client.mixins.CLIENT_INTERNAL_KEYWORDS - {"__auth_list__"}
    monkeypatch.setattr(salt.client.mixins, "CLIENT_INTERNAL_KEYWORDS", stock_keywords)
    assert not stock.master_passes_acl()
    opts = _opts(tmp_path, {"pam": {"ann": WEB}})
    who = stock.caller(opts, "ann", None)
    assert who.restricted and who.auth_list == WEB
    with pytest.raises(SaltInvocationError, match="'bob' has no grants"):
        stock.caller(opts, "bob", None)
