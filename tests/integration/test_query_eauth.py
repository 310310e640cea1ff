"""The ``query`` runner as a restricted eauth user (issue 24, item 5).

A real master with three simulated minions and two eauth users by Salt's
``sharedsecret`` backend, both allowed the runners: ``alice`` may run
``test.ping`` and ``grains.items`` on the first minion only, ``bob``
``status.*``, ``saltutil.running`` and ``pillar.items`` on every minion.
Each runs ``salt-run --eauth`` as a user would, and ``alice`` also
salt-api's runner client, and every refusal is checked where the user sees
it: the rows that are not there, the error and the exit code.  Bad filters
(a catastrophic regular expression, a list form nested 1200 deep) are
refused with a message, never a traceback.

The minions' pillar carries a secret, served from the master's pillar root
(so the pillar each simulated minion fetches as it starts agrees with the
one the fixture caches for every minion, whichever is written last).

The users live in a ``master.d`` include of their own beside the harness's
salt-api include (Salt merges the includes' ``external_auth``), and log in
with the ``sharedsecret`` the harness generates for salt-api.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from harness.saltapi import ApiCredentials, ApiSettings, api_request, login
from harness.stack import Stack, fleet_stack, master_layout

pytestmark = pytest.mark.integration

MINIONS = 3
NORMAL = 0
PILLAR_SECRET = "hunter2"
PILLAR_FILES = {
    "top.sls": "base:\n  '*':\n    - db\n",
    "db.sls": f"db:\n  password: {PILLAR_SECRET}\n",
}


def _acl(first: str) -> dict[str, list[Any]]:
    return {
        "alice": [{first: ["test.ping", "grains.items"]}, "@runner"],
        "bob": [
            {"*": ["status.*", "saltutil.running", "pillar.items"]},
            "@runner",
        ],
    }


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    from harness.fleet import FleetConfig

    ids = FleetConfig(count=MINIONS).minion_ids()
    root = open_tmp_module / "stack"
    users = master_layout(root).conf_dir / "master.d" / "query-users.conf"
    users.parent.mkdir(parents=True)
    users.write_text(json.dumps({"external_auth": {"sharedsecret": _acl(ids[0])}}))
    stack = fleet_stack(
        MINIONS,
        root=root,
        master_opts={"timeout": 5},
        api=ApiSettings(),
        pillar_files=PILLAR_FILES,
    )
    with stack as running:
        _cache_pillar(running)
        yield running


def _cache_pillar(stack: Stack) -> None:
    import salt.cache
    import salt.config

    assert stack.master is not None
    opts = salt.config.master_config(str(stack.master.settings.conf_file))
    cache = salt.cache.factory(opts)
    for minion in stack.fleet.ids:
        cache.store("pillar", minion, {"db": {"password": PILLAR_SECRET}})


def _secret(stack: Stack) -> str:
    assert stack.api is not None
    return stack.api.credentials.password


def _as(stack: Stack, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None
    return stack.master.run_cli(
        "salt-run",
        "--eauth",
        "sharedsecret",
        "--username",
        user,
        "--password",
        _secret(stack),
        "--out",
        "json",
        *args,
    )


def _result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return json.loads(done.stdout)


def _names(result: dict[str, Any]) -> list[str]:
    return [row[0][1] for row in result["data"] if row[0][0] == NORMAL]


def test_a_restricted_user_sees_only_the_minions_it_may_target(stack: Stack) -> None:
    first = stack.fleet.ids[0]
    alice = _as(stack, "alice", "query.query", "minion", "fields=name,os")
    assert alice.returncode == 0, alice.stdout + alice.stderr
    assert _names(_result(alice)) == [first]
    keys = _result(_as(stack, "alice", "query.query", "key", "fields=name,state"))
    assert _names(keys) == [first]
    bob = _result(_as(stack, "bob", "query.query", "minion", "fields=name"))
    assert _names(bob) == sorted(stack.fleet.ids)


def test_pillar_is_off_unless_asked_and_allowed_and_masked(stack: Stack) -> None:
    fields = "fields=name,pillar.db.password"
    unasked = _as(stack, "bob", "query.query", "minion", fields)
    assert unasked.returncode != 0
    assert "pass pillar=True" in _result(unasked)["error"]

    refused = _as(stack, "alice", "query.query", "minion", fields, "pillar=True")
    assert refused.returncode != 0
    assert "pillar.items" in _result(refused)["error"]
    assert PILLAR_SECRET not in refused.stdout

    masked = _as(stack, "bob", "query.query", "minion", fields, "pillar=True")
    assert masked.returncode == 0, masked.stdout + masked.stderr
    assert PILLAR_SECRET not in masked.stdout
    rows = _result(masked)["data"]
    assert {tuple(row[1]) for row in rows} == {(NORMAL, "**********")}

    unmasked = _as(
        stack, "bob", "query.query", "minion", fields, "pillar=True", "unmask=True"
    )
    assert {row[1][1] for row in _result(unmasked)["data"]} == {PILLAR_SECRET}


def test_live_fields_need_the_right_to_run_them(stack: Stack) -> None:
    refused = _as(stack, "alice", "query.query", "minion", "fields=name,load")
    assert refused.returncode != 0
    error = _result(refused)["error"]
    assert "status.loadavg" in error and "'alice'" in error

    allowed = _as(stack, "bob", "query.query", "minion", "fields=name,running")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    rows = _result(allowed)["data"]
    assert [cell[0] for row in rows for cell in row] == [NORMAL] * 2 * MINIONS


def test_jobs_of_others_on_minions_it_may_not_target_are_hidden(
    stack: Stack,
) -> None:
    first = stack.fleet.ids[0]
    assert stack.master is not None
    own = stack.master.run_cli(
        "salt",
        "--eauth",
        "sharedsecret",
        "--username",
        "alice",
        "--password",
        _secret(stack),
        "--out",
        "json",
        first,
        "test.ping",
    )
    assert own.returncode == 0, own.stdout + own.stderr
    with stack.client() as client:
        everyone = client.cmd_async("*", "test.ping")
    assert everyone

    mine = _result(_as(stack, "alice", "query.query", "job", "fields=jid,user"))
    assert {row[1][1] for row in mine["data"]} == {"alice"}
    assert everyone not in _names(mine)
    # asked by its number, the other job is not there either
    hidden = _result(
        _as(stack, "alice", "query.query", "job", "fields=jid", f"names={everyone}")
    )
    assert hidden["data"] == [[[3, None]]]
    seen = _result(
        _as(stack, "bob", "query.query", "job", "fields=jid", f"names={everyone}")
    )
    assert seen["data"] == [[[NORMAL, everyone]]]


@pytest.mark.parametrize(
    "qfilter,message",
    [
        ("filter=name =~ /^(a+)+$/", "exponential time"),
        ("filter=" + '["!", ' * 1200 + '["?", "name"]' + "]" * 1200, "nests deeper"),
    ],
)
def test_bad_filters_are_refused_with_a_message(
    stack: Stack, qfilter: str, message: str
) -> None:
    done = _as(stack, "bob", "query.query", "minion", "fields=name", qfilter)
    assert done.returncode != 0
    assert message in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_through_salt_api_the_same_limits_hold(stack: Stack) -> None:
    assert stack.api is not None
    alice = ApiCredentials(url=stack.api.url, user="alice", password=_secret(stack))
    token = login(alice)

    def run(**kwarg: Any) -> Any:
        lowstate = [
            {"client": "runner", "fun": "query.query", "what": "minion", **kwarg}
        ]
        reply = api_request(stack.api.url, "/", lowstate, timeout=60, token=token)
        return reply["return"][0]

    assert _names(run(fields="name,os")) == [stack.fleet.ids[0]]
    pillar = run(fields="name,pillar.db.password", pillar=True)
    assert "pillar.items" in pillar["error"]
    assert PILLAR_SECRET not in json.dumps(pillar)
    assert "status.loadavg" in run(fields="name,load")["error"]
    # a caller cannot grant itself more through the low data
    forged = run(fields="name", __auth_list__=[".*"])
    assert _names(forged) == [stack.fleet.ids[0]]
