"""Who the runner takes its caller for: the master's own user unlimited,
an eauth name limited to the grants external_auth gives it in a backend
that allows the runner, a name with no such grant limited to nothing, a name
with different grants in two such backends refused."""

from __future__ import annotations

import pytest
import salt.config

from saltext.pkgstate import access

FUNCTION = "pkgstate.assign"

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
        assert not access.caller(opts, name, FUNCTION).restricted, name


def test_an_eauth_user_gets_the_grants_of_the_backend_that_allows_the_runner(opts):
    web = access.caller(opts, "web-operator", FUNCTION)
    assert web.restricted
    # the file backend's catch-all (test.ping, no runner) could not have
    # let the call through, so it does not count
    assert web.grants == ({"web*": ["state.apply"]}, "@runner")
    # db-admin's only backend does not allow the runner: nothing
    db = access.caller(opts, "db-admin", FUNCTION)
    assert db.restricted and db.grants == ()


def test_a_runner_grant_for_other_functions_does_not_count(tmp_path):
    opts = _opts(
        tmp_path,
        {"pam": {"ops": [{"*": ["state.apply"]}, {"@runner": ["pkgstate.show"]}]}},
    )
    assert access.caller(opts, "ops", "pkgstate.show").grants
    assert access.caller(opts, "ops", "pkgstate.assign").grants == ()


def test_different_grants_in_two_backends_that_allow_the_runner_are_refused(
    tmp_path,
):
    opts = _opts(
        tmp_path,
        {
            "pam": {"carol": [{"web*": ["state.apply"]}, "@runner"]},
            "ldap": {"carol": [{"*": ["state.apply"]}, "@runner"]},
        },
    )
    # a union would give carol, if pam authenticated her, every minion
    with pytest.raises(access.AccessDenied, match=r"different grants.*pam, ldap"):
        access.caller(opts, "carol", FUNCTION)
    same = {"carol": [{"web*": ["state.apply"]}, "@runner"]}
    both = access.caller(
        _opts(tmp_path, {"pam": same, "ldap": same}), "carol", FUNCTION
    )
    assert both.grants == ({"web*": ["state.apply"]}, "@runner")


def test_a_name_without_a_grant_may_do_nothing(tmp_path):
    nobody = access.caller(_opts(tmp_path, {}), "mallory", FUNCTION)
    assert nobody.restricted and nobody.grants == ()


def test_root_named_in_external_auth_is_held_to_its_grants(tmp_path):
    opts = _opts(tmp_path, {"pam": {"root": [{"web*": ["state.apply"]}, "@runner"]}})
    assert access.caller(opts, "root", FUNCTION).grants == (
        {"web*": ["state.apply"]},
        "@runner",
    )
    # named without a grant that allows the runner: held to nothing
    opts = _opts(tmp_path, {"pam": {"root": [{"web*": ["state.apply"]}]}})
    assert access.caller(opts, "root", FUNCTION).grants == ()
