"""The pkgstate runner keeps an eauth caller to the minions its grants name.

A stack with two simulated minions ``web-0001``/``web-0002``, one real
minion that is not a web minion, and salt-api whose user ``web-operator``
is granted functions on ``web*`` and the runners. Through salt-api and
through ``salt-run --eauth`` that user may save and read the web minions'
states and refresh them, and is refused, with a message naming the minions
and nothing stored, everything that reaches the other minion: its own state,
an assignment to it, a named state (it may reach every minion), a refresh of
``*``. The master's own user (plain ``salt-run``) is not limited. Minions
the master does not know are an error, not an empty answer.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

# these drive a master, minions and salt-api with the saltfleet harness
pytest.importorskip(
    "harness.stack", reason="needs the saltfleet harness (nox -s tests)"
)

from harness.fleet import FleetConfig
from harness.saltapi import ApiSettings, api_request, login
from harness.stack import Stack, StackSettings

pytestmark = pytest.mark.integration

USER = "web-operator"
GRANTS = (
    {"web*": ["state.apply", "pkg.list_pkgs", "pkg.list_repo_pkgs", "test.ping"]},
    "@runner",
)
WEB = ["web-0001", "web-0002"]


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    settings = StackSettings(
        root=open_tmp_module / "stack",
        fleet=FleetConfig(count=len(WEB), prefix="web"),
        pkgstates=True,
        api=ApiSettings(user=USER, permissions=GRANTS),
    )
    with Stack(settings) as running:
        assert running.fleet is not None and sorted(running.fleet.ids) == WEB
        yield running


@pytest.fixture(scope="module")
def other(stack: Stack) -> str:
    """The minion the web operator may not touch (the stack's real minion)."""
    assert stack.minion is not None
    assert not stack.minion.minion_id.startswith("web")
    return stack.minion.minion_id


def _api(stack: Stack, fun: str, **kwargs: Any) -> Any:
    """One runner call through salt-api as the web operator; its return."""
    assert stack.api is not None
    token = login(stack.api.credentials)
    low = {"client": "runner", "fun": fun, **kwargs}
    return api_request(stack.api.url, "/", [low], timeout=120, token=token)["return"][0]


def _salt_run(
    stack: Stack, *args: str, eauth: bool
) -> subprocess.CompletedProcess[str]:
    assert stack.master is not None and stack.api is not None
    login_args = (
        [
            "--eauth",
            "sharedsecret",
            "--username",
            USER,
            "--password",
            stack.api.credentials.password,
        ]
        if eauth
        else []
    )
    return stack.master.run_cli("salt-run", "--out", "yaml", *login_args, *args)


def _as_root(stack: Stack, *args: str) -> Any:
    done = _salt_run(stack, *args, eauth=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return yaml.safe_load(done.stdout)


def _refused_by_api(stack: Stack, fun: str, *minions: str, **kwargs: Any) -> str:
    reply = _api(stack, fun, **kwargs)
    assert isinstance(reply, dict) and reply.get("retcode") == 1, reply
    message = reply["error"]
    assert f"user {USER!r} may not" in message, message
    for minion in minions:
        assert minion in message
    return str(message)


def test_the_operator_acts_on_its_own_minions(stack: Stack) -> None:
    saved = _api(stack, "pkgstate.set", name="minion:web-0001", packages=["bc"])
    assert saved["revision"] == 1 and saved["author"] == USER
    assert _api(stack, "pkgstate.show", minion="web-0001")["packages"]["bc"]
    refreshed = _api(stack, "pkgstate.refresh", tgt="web*")
    assert "error" not in refreshed, refreshed
    status = _api(stack, "pkgstate.status")
    assert set(status["minions"]) <= set(WEB)


def test_through_salt_api_nothing_reaches_another_minion(
    stack: Stack, other: str
) -> None:
    _refused_by_api(
        stack,
        "pkgstate.set",
        other,
        name=f"minion:{other}",
        packages=["coreutils@purged"],
    )
    _refused_by_api(
        stack, "pkgstate.assign", other, name="web-base", minions=f"web-0001,{other}"
    )
    _refused_by_api(stack, "pkgstate.show", other, minion=other)
    _refused_by_api(stack, "pkgstate.status", other, minion=other)
    _refused_by_api(stack, "pkgstate.export", other, minion=other)
    _refused_by_api(stack, "pkgstate.refresh", other, tgt="*")
    # a named state may be assigned anywhere: changing it needs every minion
    _refused_by_api(stack, "pkgstate.set", other, name="web-base", packages=["bc"])
    # nothing of it was stored
    states = _as_root(stack, "pkgstate.show")
    assert f"minion:{other}" not in states and "web-base" not in states
    assert _salt_run(stack, "pkgstate.inventory", other, eauth=False).returncode != 0


def test_through_salt_run_eauth_the_same_refusals(stack: Stack, other: str) -> None:
    for args in (
        ("pkgstate.set", f"minion:{other}", "coreutils@purged"),
        ("pkgstate.refresh", "tgt=*"),
        ("pkgstate.show", f"minion={other}"),
    ):
        done = _salt_run(stack, *args, eauth=True)
        text = done.stdout + done.stderr
        assert done.returncode != 0, text
        assert "Traceback" not in text
        error = yaml.safe_load(done.stdout)["error"]
        assert f"user {USER!r} may not" in error and other in error, error
    assert f"minion:{other}" not in _as_root(stack, "pkgstate.show")
    allowed = _salt_run(stack, "pkgstate.show", "minion=web-0002", eauth=True)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_the_masters_own_user_is_not_limited(stack: Stack, other: str) -> None:
    saved = _as_root(stack, "pkgstate.set", f"minion:{other}", "bc")
    assert saved["revision"] >= 1
    assert _as_root(stack, "pkgstate.show", f"minion={other}")["packages"]["bc"]


@pytest.mark.parametrize("fun", ["pkgstate.show", "pkgstate.status"])
def test_a_minion_the_master_does_not_know_is_an_error(stack: Stack, fun) -> None:
    arg = "minion=no-such-minion" if fun == "pkgstate.show" else "no-such-minion"
    done = _salt_run(stack, fun, arg, eauth=False)
    assert done.returncode == 1, done.stdout + done.stderr
    error = yaml.safe_load(done.stdout)["error"]
    assert "minion 'no-such-minion' is unknown" in error


def test_a_100k_package_name_is_refused_with_a_short_message(stack: Stack) -> None:
    done = _salt_run(
        stack, "pkgstate.set", "minion:web-0002", "x" * 100_000, eauth=False
    )
    assert done.returncode == 1, done.stderr[-500:]
    error = yaml.safe_load(done.stdout)["error"]
    assert "100000 characters" in error and len(error) < 300, error[:300]
    shown = _as_root(stack, "pkgstate.show")
    assert "minion:web-0002" not in shown
