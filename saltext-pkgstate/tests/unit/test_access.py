"""Who the runner takes its caller for: the master's own user unlimited,
an eauth name limited to the grants external_auth gives it (any backend),
a name with no grant limited to nothing."""

from __future__ import annotations

import pytest
import salt.config

from saltext.pkgstate import access

EXTERNAL_AUTH = {
    "sharedsecret": {"web-operator": [{"web*": ["state.apply"]}, "@runner"]},
    "file": {"db-admin": [{"db*": ["pkg.list_pkgs"]}], "*": ["test.ping"]},
}


def _opts(tmp_path, external_auth):
    """A master's options with its directories under tmp_path."""
    return {
        **salt.config.DEFAULT_MASTER_OPTS,
        **{key: str(tmp_path / key) for key in ("cachedir", "pki_dir", "sock_dir")},
        "__role": "master",
        "user": "salt",
        "external_auth": external_auth,
    }


@pytest.fixture
def opts(tmp_path):
    return _opts(tmp_path, EXTERNAL_AUTH)


def test_the_local_operator_is_not_limited(opts):
    for name in ("root", "salt", None, access.UNKNOWN_USER):
        assert not access.caller(opts, name).restricted, name


def test_an_eauth_user_gets_its_grants_from_every_backend(opts):
    web = access.caller(opts, "web-operator")
    assert web.restricted
    assert web.grants == ({"web*": ["state.apply"]}, "@runner", "test.ping")
    db = access.caller(opts, "db-admin")
    assert db.grants == ({"db*": ["pkg.list_pkgs"]},)


def test_a_name_without_a_grant_may_do_nothing(tmp_path):
    nobody = access.caller(_opts(tmp_path, {}), "mallory")
    assert nobody.restricted and nobody.grants == ()


def test_root_named_in_external_auth_is_held_to_its_grants(tmp_path):
    opts = _opts(tmp_path, {"pam": {"root": [{"web*": ["state.apply"]}]}})
    assert access.caller(opts, "root").grants == ({"web*": ["state.apply"]},)
