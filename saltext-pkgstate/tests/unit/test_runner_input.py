"""How the runner reads its input before touching the database: entries
from arguments and ``packages=``, the salt-run options that are really
entries, and where the master's configuration says the database is."""

from __future__ import annotations

import pytest
import salt.config
from salt.exceptions import SaltInvocationError

from saltext.pkgstate import master
from saltext.pkgstate.model import PkgStateError
from saltext.pkgstate.runners import pkgstate as runner


def test_entries_come_from_arguments_lists_and_mappings():
    entries = runner._entries(
        ["nginx>=1.20"], {"curl": "latest", "telnet": "absent<2.0", "vim": None}
    )
    assert [str(e) for e in entries] == [
        "curl@latest",
        "nginx>=1.20",
        "telnet@absent<2.0",
        "vim",
    ]
    assert [str(e) for e in runner._entries([], ["a", "b==1"])] == ["a", "b=1"]
    assert [str(e) for e in runner._entries([], "a,b@removed")] == ["a", "b@removed"]


def test_a_package_named_twice_across_inputs_is_refused():
    with pytest.raises(PkgStateError, match="two entries for package 'nginx'"):
        runner._entries(["nginx"], ["nginx>=1"])


def test_packages_of_another_type_is_refused():
    with pytest.raises(SaltInvocationError, match="packages must be"):
        runner._entries([], 3)


def test_an_entry_read_as_an_option_says_how_to_write_it():
    with pytest.raises(SaltInvocationError, match=r"write nginx==1\.2"):
        runner._refuse_options({"nginx": "1.2", "__pub_user": "root"})
    with pytest.raises(PkgStateError, match="unknown operator '=>'"):
        runner._refuse_options({"nginx": ">1.2"})
    with pytest.raises(SaltInvocationError, match="no value"):
        runner._refuse_options({"nginx": ""})
    runner._refuse_options({"__pub_user": "root", "__pub_jid": "1"})


def test_errors_return_retcode_1(monkeypatch):
    context: dict = {}
    monkeypatch.setattr(runner, "__context__", context, raising=False)
    assert runner._error("bad") == {"error": "bad", "retcode": 1}
    assert context["retcode"] == 1


def test_revision_numbers_and_minion_lists():
    assert runner._number("3", "revision") == 3
    with pytest.raises(SaltInvocationError, match="revision must be a revision number"):
        runner._number("three", "revision")
    with pytest.raises(SaltInvocationError):
        runner._number(True, "revision")
    assert runner._minion_list("a, b,,c") == ["a", "b", "c"]
    assert runner._minion_list(["a"]) == ["a"]


def test_the_database_is_pkgstate_dsn_or_the_postgres_block():
    assert master.dsn_from_opts({"pkgstate": {"dsn": "host=db dbname=s"}}) == (
        "host=db dbname=s"
    )
    dsn = master.dsn_from_opts(
        {
            "postgres": {
                "host": "db",
                "port": 5433,
                "user": "salt",
                "pass": "",
                "db": "s",
            }
        }
    )
    assert dsn == "host=db port=5433 user=salt dbname=s"
    with pytest.raises(master.PkgStateConfigError, match="pkgstate:dsn"):
        master.dsn_from_opts({})
    with pytest.raises(master.PkgStateConfigError, match="must be a mapping"):
        master.dsn_from_opts({"pkgstate": "host=db"})
    with pytest.raises(master.PkgStateConfigError, match="pool_size"):
        master.pool_size_from_opts({"pkgstate": {"pool_size": -1}})


def test_an_eauth_caller_may_not_migrate_the_schema(monkeypatch, tmp_path):
    # no database is configured: the refusal comes before any connection
    opts = {
        **salt.config.DEFAULT_MASTER_OPTS,
        "__role": "master",
        "cachedir": str(tmp_path / "cache"),
        "pki_dir": str(tmp_path / "pki"),
        "external_auth": {"pam": {"web-operator": ["@runner"]}},
    }
    monkeypatch.setattr(runner, "__opts__", opts, raising=False)
    monkeypatch.setattr(runner, "__context__", {}, raising=False)
    monkeypatch.setattr(runner, "__user__", "web-operator", raising=False)
    refused = runner.migrate()
    assert refused["retcode"] == 1
    assert "only the master's own user may run it" in refused["error"]
