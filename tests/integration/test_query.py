"""The ``query`` runner (issue 14) on a real master with simulated minions.

Besides the running simulated minions the master knows three that are not:
``ghost-1`` has an accepted key and cached grains but no process (a stopped
minion: it does not answer and the master sees no connection from its
address, so its live fields are offline), ``pending-1`` and ``rejected-1``
have keys that are not accepted (offline).  Each status of the query result is
checked where a user would see it: ``salt-run`` (table and ``--out json``,
exit codes) and the runner client salt-api uses.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from harness.stack import Stack, fleet_stack

pytestmark = pytest.mark.integration

MINIONS = 3
GHOST = "ghost-1"
PENDING = "pending-1"
REJECTED = "rejected-1"

NORMAL, UNKNOWN, NODATA, UNAVAIL, OFFLINE = range(5)


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    stack = fleet_stack(
        MINIONS, root=open_tmp_module / "stack", master_opts={"timeout": 5}
    )
    with stack as running:
        _add_minions_that_are_not_running(running)
        yield running


def _master_opts(stack: Stack) -> dict[str, Any]:
    import salt.config

    assert stack.master is not None
    return salt.config.master_config(str(stack.master.settings.conf_file))


def _add_minions_that_are_not_running(stack: Stack) -> None:
    import salt.cache

    assert stack.master is not None
    pki = stack.master.settings.pki_dir
    template = (pki / "minions" / stack.fleet.ids[0]).read_text()
    for directory, minion in (
        ("minions", GHOST),
        ("minions_pre", PENDING),
        ("minions_rejected", REJECTED),
    ):
        (pki / directory).mkdir(exist_ok=True)
        (pki / directory / minion).write_text(template)
    cache = salt.cache.factory(_master_opts(stack))
    cache.store(
        "grains",
        GHOST,
        {
            "id": GHOST,
            "os": "SUSE",
            "num_cpus": 2,
            "ipv4": ["10.9.9.9"],
            "roles": ["db"],
        },
    )
    # every running minion has sent its grains (its start-up pillar request)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if all(cache.fetch("grains", m) for m in stack.fleet.ids):
            return
        time.sleep(0.5)
    raise AssertionError("the simulated minions' grains never reached the cache")


def _salt_run(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None
    return stack.master.run_cli("salt-run", *args)


def _json(stack: Stack, *args: str) -> tuple[dict[str, Any], int]:
    done = _salt_run(stack, "--out", "json", *args)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return json.loads(done.stdout), done.returncode


def _rows(result: dict[str, Any]) -> dict[str, list[list[Any]]]:
    return {row[0][1]: row for row in result["data"] if row[0][0] == NORMAL}


def test_every_status_of_minion_fields(stack: Stack) -> None:
    result, code = _json(
        stack,
        "query.query",
        "minion",
        "fields=name,key_state,os,ip4.0,ip4.1,roles,running,xyz",
        "timeout=5",
    )
    assert code != 0  # xyz is unknown
    assert result["fields"][7]["kind"] == "unknown"
    rows = _rows(result)
    assert set(rows) == set(stack.fleet.ids) | {GHOST, PENDING, REJECTED}
    running = rows[stack.fleet.ids[0]]
    assert running[1] == [NORMAL, "accepted"]
    assert running[2][0] == NORMAL
    assert running[3][0] == NORMAL and running[3][1].startswith("10.")
    assert running[4] == [UNAVAIL, None]  # one address but loopback
    assert running[5] == [UNAVAIL, None]  # no roles grain
    assert running[6] == [NORMAL, 0]  # saltutil.running answered, nothing runs
    assert running[7] == [UNKNOWN, None]
    ghost = rows[GHOST]
    assert ghost[2] == [NORMAL, "SUSE"]
    assert ghost[5] == [NORMAL, ["db"]]
    # did not answer, and no connection from its address (10.9.9.9)
    assert ghost[6] == [OFFLINE, None]
    # simulated minions answer status.loadavg with an error: no data
    load = _rows(_json(stack, "query.query", "minion", "fields=name,load")[0])
    assert load[stack.fleet.ids[0]][1] == [NODATA, None]
    assert load[GHOST][1] == [OFFLINE, None]
    for offline in (PENDING, REJECTED):
        assert rows[offline][1][1] in ("pending", "rejected")
        assert rows[offline][2] == [OFFLINE, None]
        assert rows[offline][6] == [OFFLINE, None]


def test_table_filter_and_exit_codes(stack: Stack) -> None:
    done = _salt_run(
        stack, "query.query", "minion", "fields=name,os,roles", 'filter="db" in roles'
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["Name", "OS", "Roles"]
    assert lines[1].split() == [GHOST, "SUSE", "db"]
    assert len(lines) == 2

    done = _salt_run(
        stack,
        "query.query",
        "minion",
        "fields=name,key_state",
        "filter=not key_state == 'accepted'",
        "separator=|",
        "header=False",
    )
    assert done.stdout.split() == [f"{PENDING}|pending", f"{REJECTED}|rejected"]

    unknown = _salt_run(stack, "query.query", "minion", "fields=name,xyz")
    assert unknown.returncode != 0
    assert "'xyz'" in unknown.stdout

    bad = _salt_run(stack, "query.query", "minion", "filter=cpus > 'four'")
    assert bad.returncode != 0
    assert "needs a number" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr


def test_name_lookup_keeps_order_and_marks_missing(stack: Stack) -> None:
    first, second = stack.fleet.ids[1], stack.fleet.ids[0]
    result, code = _json(
        stack,
        "query.query",
        "minion",
        "fields=name,cpus",
        f"filter=name == '{first}' or name == 'nope' or name == '{second}'",
    )
    assert code == 0
    assert [row[0] for row in result["data"]] == [
        [NORMAL, first],
        [UNAVAIL, None],
        [NORMAL, second],
    ]


def test_jobs_and_keys(stack: Stack) -> None:
    with stack.client() as client:
        jid = client.cmd_async([*stack.fleet.ids, GHOST], "test.ping", tgt_type="list")
    assert jid
    fields = (
        "fields=jid,function,target_type,expected,returned,missing,ratelimit.outcome"
    )
    deadline = time.monotonic() + 30
    while True:
        result, _ = _json(stack, "query.query", "job", fields, f"filter=jid == '{jid}'")
        if result["data"][0][4] == [NORMAL, MINIONS] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    (row,) = result["data"]
    assert row[:3] == [[NORMAL, jid], [NORMAL, "test.ping"], [NORMAL, "list"]]
    assert row[3] == [NORMAL, MINIONS + 1]
    assert row[4] == [NORMAL, MINIONS]
    assert row[5] == [NORMAL, [GHOST]]
    assert row[6] == [UNAVAIL, None]  # rate limiting is off

    keys, _ = _json(stack, "query.query", "key", "fields=name,state,fingerprint")
    states = {row[0][1]: row[1][1] for row in keys["data"]}
    assert states[PENDING] == "pending" and states[REJECTED] == "rejected"
    assert all(row[2][0] == NORMAL and ":" in row[2][1] for row in keys["data"])


def test_runner_client_returns_plain_values(stack: Stack) -> None:
    import salt.runner

    with salt.runner.RunnerClient(_master_opts(stack)) as client:
        result = client.cmd(
            "query.query",
            ["minion"],
            kwarg={"fields": "name,os", "filter": ["==", "name", GHOST]},
            print_event=False,
        )
        assert result["data"] == [[(NORMAL, GHOST), (NORMAL, "SUSE")]]
        legacy = client.cmd(
            "query.query",
            ["minion"],
            kwarg={"fields": "name,os", "filter": f"name == '{GHOST}'", "legacy": True},
            print_event=False,
        )
        assert legacy == [[GHOST, "SUSE"]]
        fields = client.cmd("query.fields", ["key"], print_event=False)
    assert [f["name"] for f in fields["fields"]] == ["name", "state", "fingerprint"]
