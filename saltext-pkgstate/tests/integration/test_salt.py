"""Package states served to a real salt-minion on this machine.

The minion runs as this host's user with the real package manager (apt/dpkg
on Debian): every ``state.apply`` of a state that would change something runs
with ``test=True``, and the one real apply uses a state the host already
satisfies. The installed package set is compared before and after.

``latest`` depends on the host's apt lists: a state run refreshes them
(``apt-get update``, as ``pkg.latest`` does), and the expected change is read
from ``apt-cache policy`` afterwards. Without any candidate (no apt lists,
offline) the test is skipped with that reason.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

# these drive a master, minions and salt-api with the saltfleet harness
pytest.importorskip(
    "harness.stack", reason="needs the saltfleet harness (nox -s tests)"
)

from harness.minion import SaltMinion
from harness.polling import wait_until
from harness.saltapi import ApiSettings, api_request, login
from harness.stack import Stack, StackSettings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("dpkg-query") is None or shutil.which("apt-cache") is None,
        reason="needs a Debian-family host (dpkg and apt)",
    ),
]

APPLY_TIMEOUT = 240
#: seconds for the engine's database write after an event
ENGINE_TIMEOUT = 60
SECOND_MINION = "saltfleet-minion-2"
#: small packages one of which is in the repositories and not installed
NOT_INSTALLED_CANDIDATES = ("sl", "cowsay", "figlet", "telnet", "hello")


def _installed() -> dict[str, str]:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev} ${Version}\n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pkgs = {}
    for line in out.splitlines():
        name, status, version = ([*line.split(), "", "", ""])[:3]
        if status.startswith("ii"):
            pkgs[name] = version
    return pkgs


def _policy(name: str) -> tuple[str | None, str | None]:
    """(installed, candidate) of a package as apt-cache policy reports them."""
    out = subprocess.run(
        ["apt-cache", "policy", name], capture_output=True, text=True, check=False
    ).stdout
    values: dict[str, str | None] = {"Installed": None, "Candidate": None}
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        if key in values:
            value = value.strip()
            values[key] = None if value == "(none)" else value
    return values["Installed"], values["Candidate"]


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    # an operator console's user: the package-state runners, nothing else
    api = ApiSettings(
        user="pkgstate-operator",
        permissions=({"@runner": ["pkgstate.show", "pkgstate.set"]},),
    )
    settings = StackSettings(root=open_tmp_module / "stack", pkgstates=True, api=api)
    with Stack(settings) as running:
        yield running


@pytest.fixture(scope="module")
def minion_id(stack: Stack) -> str:
    assert stack.minion is not None
    return stack.minion.minion_id


@pytest.fixture(scope="module")
def host_packages() -> dict[str, str]:
    return _installed()


@pytest.fixture(scope="module")
def absent_package(host_packages) -> str:
    for name in NOT_INSTALLED_CANDIDATES:
        installed, candidate = _policy(name)
        if name not in host_packages and installed is None and candidate:
            return name
    pytest.skip("apt knows none of the small test packages (no apt lists?)")


def _salt_run(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None
    return stack.master.run_cli("salt-run", "--out", "yaml", *args)


def _run_ok(stack: Stack, *args: str) -> Any:
    done = _salt_run(stack, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return yaml.safe_load(done.stdout)


def _run_fails(stack: Stack, *args: str) -> str:
    done = _salt_run(stack, *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    error = yaml.safe_load(done.stdout)["error"]
    assert isinstance(error, str)
    return error


def _export_data(stack: Stack, *args: str) -> dict[str, Any]:
    text = _run_ok(stack, "pkgstate.export", *args)
    return yaml.safe_load(text) or {}


def _show_sls(stack: Stack, minion: str) -> dict[str, Any]:
    from saltext.pkgstate.render import canonical

    ret = stack.cmd(minion, "state.show_sls", ["pkgstate"], timeout=60)[minion]
    assert isinstance(ret, dict), ret
    return canonical(ret)


def _apply(stack: Stack, minion: str, *args: str, test: bool) -> dict[str, Any]:
    ret = stack.cmd(
        minion, "state.apply", list(args), timeout=APPLY_TIMEOUT, kwarg={"test": test}
    )
    result = ret[minion]
    assert isinstance(result, dict), result
    return {key.split("_|-")[1]: value for key, value in result.items()}


def test_test_apply_reports_exactly_the_expected_changes(
    stack, minion_id, host_packages, absent_package
):
    from saltext.pkgstate.render import canonical

    latest = "dpkg"
    entries = [
        "bc",  # installed: no change
        "curl>=7.0",  # >= and satisfied: no change
        f"{latest}@latest",
        absent_package,  # installed but missing: would be installed
        "sl@removed" if absent_package != "sl" else "cowsay@removed",
    ]
    removed = entries[-1].split("@")[0]
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}", *entries)

    exported = canonical(_export_data(stack, f"minion={minion_id}"))
    assert _show_sls(stack, minion_id) == exported
    assert set(exported) == {
        "pkgstate-installed-bc",
        "pkgstate-installed-curl",
        f"pkgstate-latest-{latest}",
        f"pkgstate-installed-{absent_package}",
        f"pkgstate-removed-{removed}",
    }
    assert exported["pkgstate-installed-curl"] == {
        "pkg.installed": {"name": "curl", "version": ">=7.0"}
    }

    ran = _apply(stack, minion_id, "pkgstate", test=True)
    assert _installed() == host_packages, "test=True changed the host"

    assert set(ran) == set(exported)
    for sid in ("pkgstate-installed-bc", "pkgstate-installed-curl"):
        assert (ran[sid]["result"], ran[sid]["changes"]) == (True, {}), ran[sid]
    gone = ran[f"pkgstate-removed-{removed}"]
    assert (gone["result"], gone["changes"]) == (True, {}), gone
    new = ran[f"pkgstate-installed-{absent_package}"]
    assert new["result"] is None
    assert absent_package in new["comment"]
    installed, candidate = _policy(latest)  # after the run's apt refresh
    if candidate is None:
        pytest.skip(f"apt has no candidate for {latest}: no apt lists")
    up = ran[f"pkgstate-latest-{latest}"]
    if installed == candidate:
        assert (up["result"], up["changes"]) == (True, {}), up
    else:
        assert up["result"] is None
        assert up["changes"] == {latest: {"old": installed, "new": candidate}}


def test_rollback_restores_the_earlier_result(stack, minion_id, absent_package):
    from saltext.pkgstate.render import canonical

    first = _run_ok(stack, "pkgstate.set", "rollback-demo", "bc", "curl>=7.0")
    _run_ok(stack, "pkgstate.assign", "rollback-demo", f"minions={minion_id}")
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}")  # own state: empty
    before = _show_sls(stack, minion_id)
    assert before == canonical(_export_data(stack, "rollback-demo"))

    _run_ok(stack, "pkgstate.set", "rollback-demo", "bc@latest", absent_package)
    changed = _show_sls(stack, minion_id)
    assert changed != before
    diff = _run_ok(stack, "pkgstate.diff", "rollback-demo")
    assert diff["added"] == {absent_package: absent_package}
    assert diff["removed"] == {"curl": "curl>=7.0"}
    assert diff["changed"] == {"bc": {"from": "bc", "to": "bc@latest"}}

    back = _run_ok(
        stack, "pkgstate.rollback", "rollback-demo", f"revision={first['revision']}"
    )
    assert back["revision"] == first["revision"] + 2
    assert back["packages"] == first["packages"]
    assert _show_sls(stack, minion_id) == before
    history = _run_ok(stack, "pkgstate.history", "rollback-demo")
    assert [h["revision"] for h in history] == [1, 2, 3]
    assert history[-1]["comment"] == "rollback to revision 1"

    _run_ok(stack, "pkgstate.unassign", "rollback-demo", f"minions={minion_id}")
    assert _show_sls(stack, minion_id) == {}


@pytest.fixture(scope="module")
def second_minion(stack):
    assert stack.master is not None and stack.listener is not None
    minion = SaltMinion(
        Path(stack.root) / "minion-2", SECOND_MINION, stack.master, stack.listener
    )
    minion.start()
    try:
        yield minion.minion_id
    finally:
        minion.stop()


def test_a_group_change_reaches_every_member_on_the_next_highstate(
    stack, minion_id, second_minion, absent_package, host_packages, add_org
):
    members = [minion_id, second_minion]
    add_org(stack.pg, "acme", {minion: ["web"] for minion in members})
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}")  # own state: empty
    _run_ok(stack, "pkgstate.set", "web", "bc")
    _run_ok(stack, "pkgstate.assign", "web", "group=acme/web")
    for minion in members:
        shown = _run_ok(stack, "pkgstate.show", f"minion={minion}")
        assert shown["packages"]["bc"]["decided_by"] == "web"

    _run_ok(stack, "pkgstate.set", "web", "bc", absent_package)
    try:
        for minion in members:
            ran = _apply(stack, minion, test=True)  # a highstate
            sid = f"pkgstate-installed-{absent_package}"
            assert sid in ran, sorted(ran)
            assert ran[sid]["result"] is None
            assert ran["pkgstate-installed-bc"]["result"] is True
        assert _installed() == host_packages
    finally:
        # the later tests apply for real: nothing of this group may remain
        _run_ok(stack, "pkgstate.unassign", "web", "group=acme/web")


def _inventory_time(stack: Stack, minion: str) -> Any:
    assert stack.pg is not None
    conn = stack.pg.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "SELECT refreshed_at FROM pkgstate_inventory WHERE minion_id = %s",
                (minion,),
            )
            row = cur.fetchone()
            return row[0] if row else None
    finally:
        conn.close()


def test_beacon_event_refreshes_the_inventory_and_status_follows(
    stack, minion_id, host_packages
):
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}", "bc", "curl>=7.0")
    before = _inventory_time(stack, minion_id)
    stack.cmd(
        minion_id,
        "event.send",
        [f"salt/beacon/{minion_id}/pkgset/changed"],
        kwarg={
            "data": {"cookie": "/var/cache/salt/minion/dpkg.cookie", "value": "x 1"}
        },
    )
    # the engine's database write is nothing the test can subscribe to
    assert wait_until(
        lambda: (t := _inventory_time(stack, minion_id)) and t != before,
        timeout=ENGINE_TIMEOUT,
        interval=0.5,
    ), "the engine stored no new inventory"
    stored = _run_ok(stack, "pkgstate.inventory", minion_id)["packages"]
    assert stored["bc"] == [host_packages["bc"]]

    status = _run_ok(stack, "pkgstate.status", minion_id)
    assert {p: s["status"] for p, s in status["packages"].items()} == {
        "bc": "pending",
        "curl": "pending",
    }
    # A real apply of a state this host already satisfies changes nothing;
    # the engine records it as applied. Guard: exactly these two packages.
    resolved = _run_ok(stack, "pkgstate.show", f"minion={minion_id}")["packages"]
    assert {n: (p["policy"], p.get("op")) for n, p in resolved.items()} == {
        "bc": ("installed", None),
        "curl": ("installed", ">="),
    }
    ran = _apply(stack, minion_id, "pkgstate", test=False)
    assert all(r["result"] is True and not r["changes"] for r in ran.values()), ran
    assert _installed() == host_packages
    status = wait_until(
        lambda: (
            (s := _run_ok(stack, "pkgstate.status", minion_id))["counts"]
            == {"consistent": 2}
            and s
        ),
        timeout=ENGINE_TIMEOUT,
        interval=0.5,
    )
    assert status, "status did not turn consistent after the apply"
    assert status["applied_digest"] == status["digest"]
    summary = _run_ok(stack, "pkgstate.status")
    assert summary["minions"][minion_id] == {"consistent": 2}

    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}", "bc", "curl>=7.0", "sl")
    status = _run_ok(stack, "pkgstate.status", minion_id)
    assert status["packages"]["sl"]["status"] == "pending"
    assert status["packages"]["bc"]["status"] == "consistent"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pkgstate.set", "guarded", "nginx=>1.0"], "unknown operator '=>'"),
        (
            ["pkgstate.set", "guarded", "curl@latest>=1"],
            "cannot be combined with latest",
        ),
        (["pkgstate.set", "guarded", "nginx>=1.x y"], "does not parse"),
        (["pkgstate.set", "guarded", "nginx", "nginx>=1"], "two entries"),
        (["pkgstate.assign", "guarded", "group=no-such-group"], "no group"),
        (["pkgstate.assign", "guarded", "grain=P@os:("], "does not compile"),
        (["pkgstate.rollback", "guarded", "revision=9"], "revision"),
        (["pkgstate.set", "guarded", "nginx=1.2"], "nginx==1.2"),
    ],
)
def test_bad_input_fails_and_changes_nothing(stack, args, message):
    if _salt_run(stack, "pkgstate.show", "guarded").returncode != 0:
        _run_ok(stack, "pkgstate.set", "guarded", "bc")
    before = _run_ok(stack, "pkgstate.history", "guarded")
    assignments = _run_ok(stack, "pkgstate.show", "guarded")["assignments"]
    assert message in _run_fails(stack, *args)
    assert _run_ok(stack, "pkgstate.history", "guarded") == before
    assert _run_ok(stack, "pkgstate.show", "guarded")["assignments"] == assignments


def test_the_runner_answers_through_salt_api(stack, minion_id):
    assert stack.api is not None
    _run_ok(stack, "pkgstate.set", "api-demo", "bc", "curl>=7.0")
    token = login(stack.api.credentials)
    reply = api_request(
        stack.api.url,
        "/",
        [
            {"client": "runner", "fun": "pkgstate.show", "name": "api-demo"},
            {
                "client": "runner",
                "fun": "pkgstate.set",
                "name": "api-demo",
                "packages": ["bc", "nginx=>1"],
            },
        ],
        timeout=60,
        token=token,
    )
    shown, refused = reply["return"]
    assert shown["packages"] == {"bc": "bc", "curl": "curl>=7.0"}
    assert refused["retcode"] == 1
    assert "unknown operator" in refused["error"]
    history = _run_ok(stack, "pkgstate.history", "api-demo")
    assert len(history) == 1


def test_a_pillar_override_is_the_callers_as_upstream_allows(stack, minion_id):
    """Decided as upstream: ``state.apply pillar=...`` overrides the pillar
    by design, the ``pkgstate`` key included (docs/SECURITY.md): merged over
    the stored data, it adds packages and changes stored ones for that run
    (test=True here); what is stored, its history and the minion's resolved
    state stay as they were."""
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}", "bc")
    history = _run_ok(stack, "pkgstate.history", f"minion:{minion_id}")
    resolved = _run_ok(stack, "pkgstate.show", f"minion={minion_id}")
    # merged over the compiled pillar: a package added, a stored one changed
    override = {
        "pkgstate": {
            "packages": {
                "saltfleet-override": {"policy": "installed"},
                "bc": {"policy": "removed"},
            }
        }
    }
    ran = stack.cmd(
        minion_id,
        "state.apply",
        ["pkgstate"],
        kwarg={"test": True, "pillar": override},
        timeout=120,
    )[minion_id]
    assert isinstance(ran, dict), ran
    planned = " ".join(ran)
    assert "pkgstate-installed-saltfleet-override" in planned
    assert "pkgstate-removed-bc" in planned
    assert "pkgstate-installed-bc" not in planned
    assert _run_ok(stack, "pkgstate.history", f"minion:{minion_id}") == history
    assert _run_ok(stack, "pkgstate.show", f"minion={minion_id}") == resolved


def test_a_database_outage_fails_the_pillar_closed(stack, minion_id):
    """Last in the module: it stops the stack's PostgreSQL."""
    assert stack.postgres is not None
    _run_ok(stack, "pkgstate.set", f"minion:{minion_id}", "bc")
    stack.postgres.stop()
    pillar = stack.cmd(minion_id, "pillar.items", timeout=60)[minion_id]
    assert "pkgstate" not in pillar
    assert pillar.get("_errors"), pillar
    assert stack.master is not None
    log = stack.master.settings.log_file.read_text()
    assert "ext_pillar pkgstate: cannot resolve the package state of" in log
    ran = stack.cmd(
        minion_id, "state.apply", ["pkgstate"], kwarg={"test": True}, timeout=60
    )
    assert not isinstance(ran[minion_id], dict) or not any(
        "pkgstate-" in key for key in ran[minion_id]
    ), ran
