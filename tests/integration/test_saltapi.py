"""salt-api as a part of the stack: it starts, authenticates the load user,
and the token it returns runs the jobs the load user is granted and nothing
else (no cmd.run, no salt.cmd, no wheel, no runner it is not granted);
beyond loopback it serves TLS only; a taken port is refused before start; a
master that cannot take a job, or does not answer, is a 503 with Salt's
message. Every refusal is JSON with the status and the message (patch 0018),
not CherryPy's HTML page."""

from __future__ import annotations

import json
import socket

import psutil
import pytest

from harness.ports import LOOPBACK, PortInUseError
from harness.ratelimit import RateLimiting
from harness.saltapi import (
    LOAD_PERMISSIONS,
    ApiCredentials,
    ApiError,
    ApiSettings,
    LoginError,
    api_request,
    is_loopback,
    login,
    named,
)
from harness.stack import Stack, StackSettings, fleet_stack
from tests.conftest import alive

pytestmark = pytest.mark.integration

MINIONS = 3


@pytest.fixture(scope="module")
def stack(open_tmp_module):
    with fleet_stack(
        MINIONS, root=open_tmp_module / "stack", api=ApiSettings()
    ) as running:
        yield running


def _run(stack: Stack, lowstate: list[dict[str, object]]) -> list[object]:
    """POST ``lowstate`` to / with a fresh token; the returns."""
    assert stack.api is not None
    token = login(stack.api.credentials)
    reply = api_request(stack.api.url, "/", lowstate, timeout=60, token=token)
    return list(reply["return"])


def test_token_runs_a_ping_through_the_root_endpoint(stack: Stack) -> None:
    returns = _run(
        stack, [{"client": "local", "tgt": "*", "fun": "test.ping", "timeout": 30}]
    )
    assert returns[0] == {mid: True for mid in stack.fleet.ids}


def test_granted_runners_and_async_jobs_are_permitted(stack: Stack) -> None:
    (submitted,) = _run(
        stack, [{"client": "local_async", "tgt": "*", "fun": "test.version"}]
    )
    assert isinstance(submitted, dict)
    assert sorted(submitted["minions"]) == sorted(stack.fleet.ids)
    status, job = _run(
        stack,
        [
            {"client": "runner", "fun": "ratelimit.status"},
            {"client": "runner", "fun": "jobs.list_job", "jid": submitted["jid"]},
        ],
    )
    assert isinstance(status, dict)
    assert isinstance(job, dict) and job["jid"] == submitted["jid"]


def _refused(stack: Stack, low: dict[str, object]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        _run(stack, [low])
    return refused.value


def _error_message(refused: ApiError) -> str:
    """The message of salt-api's JSON error body, which must carry the same
    status as the response."""
    body = json.loads(refused.body)
    assert body["status"] == refused.status, refused.body
    assert isinstance(body["return"], str) and body["return"], refused.body
    return body["return"]


@pytest.mark.parametrize(
    "low",
    [
        {"client": "local", "tgt": "*", "fun": "cmd.run", "arg": ["id"]},
        {"client": "runner", "fun": "salt.cmd", "arg": ["cmd.run", "id"]},
        {"client": "runner", "fun": "jobs.list_jobs"},
        {"client": "runner", "fun": "pkgstate.refresh", "tgt": "*"},
    ],
    ids=[
        "local-cmd.run",
        "runner-salt.cmd",
        "runner-jobs.list_jobs",
        "runner-pkgstate",
    ],
)
def test_what_the_load_user_is_not_granted_is_refused(stack: Stack, low) -> None:
    refused = _refused(stack, low)
    assert refused.status == 401, refused.body
    message = _error_message(refused)
    assert "Authentication failure" in message or "Authorization" in message


@pytest.mark.parametrize(
    "low",
    [
        {"client": "wheel", "fun": "config.values"},
        {"client": "wheel", "fun": "key.delete", "match": "*"},
        {"client": "wheel_async", "fun": "key.delete", "match": "*"},
    ],
    ids=["config.values", "key.delete", "key.delete-async"],
)
def test_no_wheel_call_is_taken(stack: Stack, low) -> None:
    refused = _refused(stack, low)
    assert refused.status == 400, refused.body
    message = _error_message(refused)
    assert "disabled" in message or "not enabled" in message, refused.body
    assert stack.api is not None
    assert stack.api.credentials.password not in refused.body
    # the keys are all still there
    returns = _run(
        stack, [{"client": "local", "tgt": "*", "fun": "test.ping", "timeout": 30}]
    )
    assert returns[0] == {mid: True for mid in stack.fleet.ids}


def _outward_address() -> str | None:
    """An address of this machine other than loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for UDP
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if is_loopback(address) else address


def test_beyond_loopback_only_tls_with_the_generated_certificate(open_tmp) -> None:
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    settings = StackSettings(
        root=open_tmp / "stack", real_minion=False, api=ApiSettings(host=address)
    )
    with Stack(settings) as stack:
        assert stack.api is not None
        credentials = stack.api.credentials
        assert credentials.url.startswith("https://") and credentials.ca_file
        assert login(credentials)
        plain = ApiCredentials(
            url=credentials.url.replace("https://", "http://"),
            user=credentials.user,
            password=credentials.password,
        )
        with pytest.raises(LoginError):
            login(plain)  # no answer in clear text
        unverified = ApiCredentials(
            url=credentials.url, user=credentials.user, password=credentials.password
        )
        with pytest.raises(LoginError, match="CERTIFICATE_VERIFY_FAILED"):
            login(unverified)  # the system's roots do not vouch for it


def test_a_wrong_secret_gets_no_token(stack: Stack) -> None:
    assert stack.api is not None
    wrong = stack.api.credentials.__class__(
        url=stack.api.url, user=stack.api.credentials.user, password="not-it"
    )
    with pytest.raises(LoginError, match="401"):
        login(wrong)
    with pytest.raises(ApiError) as refused:
        api_request(stack.api.url, "/login", wrong.login_body(), timeout=60)
    assert refused.value.status == 401
    assert _error_message(refused.value) == (
        "Could not authenticate using provided credentials"
    )
    assert wrong.password not in refused.value.body


def test_a_token_it_did_not_issue_is_refused_in_json(stack: Stack) -> None:
    assert stack.api is not None
    ping = {"client": "local", "tgt": "*", "fun": "test.ping"}
    with pytest.raises(ApiError) as refused:
        # hex, as salt-api's tokens are, but never issued
        api_request(stack.api.url, "/", [ping], timeout=60, token="0" * 40)
    assert refused.value.status == 401
    # CherryPy's standard 401 message: salt-api refuses before its handler
    assert _error_message(refused.value)


def test_the_api_is_a_recorded_part_stopped_with_the_stack(open_tmp) -> None:
    settings = StackSettings(
        root=open_tmp / "stack", real_minion=False, api=ApiSettings()
    )
    with Stack(settings) as stack:
        assert stack.api is not None
        pids = [stack.api.process.pid, *stack.api.process.seen_pids()]
        assert stack.api.process.pid in stack.pids()
    assert alive(pids) == []


def test_a_taken_api_port_is_refused_before_anything_starts(open_tmp) -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = StackSettings(
            root=open_tmp / "stack", real_minion=False, api=ApiSettings(port=port)
        )
        stack = Stack(settings)
        with pytest.raises(PortInUseError, match=f"salt-api port {port}"):
            stack.start()
        assert stack.master is None


def test_an_overloaded_master_answers_503_retry_later(open_tmp) -> None:
    """What rest_cherrypy returns when the rate limiter's queue is full."""
    limits = RateLimiting(max_master_jobs=MINIONS + 2, max_minion_jobs=2, max_queue=1)
    stack = fleet_stack(
        MINIONS,
        root=open_tmp / "stack",
        master_opts=limits.master_options(),
        # test.sleep holds the limiter's slots; the load user does not call it
        api=ApiSettings(permissions=(*LOAD_PERMISSIONS, named("test.sleep"))),
    )
    # each job takes MINIONS of the MINIONS + 2 points: the first runs, the
    # second waits at the head of the queue, the third is over max_queue
    sleep = {"client": "local_async", "tgt": "*", "fun": "test.sleep", "arg": [20]}
    with stack:
        first, second = _run(stack, [sleep]), _run(stack, [sleep])
        with pytest.raises(ApiError) as refused:
            _run(stack, [sleep])
    assert all(isinstance(r[0], dict) and r[0].get("jid") for r in (first, second))
    assert refused.value.status == 503
    assert "overloaded" in _error_message(refused.value).lower(), refused.value.body


def test_a_master_that_does_not_answer_is_503_not_500(stack: Stack) -> None:
    """With every MWorker stopped, the master takes no publication: salt-api
    says so with 503 and Salt's "master is not responding", not a bare 500
    (patch 0004), and the master serves again once they run."""
    assert stack.api is not None and stack.master is not None
    token = login(stack.api.credentials)  # logging in needs a worker too
    master = psutil.Process(stack.master.process.pid)
    workers = [
        child
        for child in master.children(recursive=True)
        if "MWorker" in " ".join(child.cmdline())
    ]
    assert workers, [" ".join(c.cmdline()) for c in master.children(recursive=True)]
    ping = {"client": "local", "tgt": "*", "fun": "test.ping", "timeout": 3}
    for worker in workers:
        worker.suspend()
    try:
        with pytest.raises(ApiError) as unanswered:
            api_request(stack.api.url, "/", [ping], timeout=60, token=token)
    finally:
        for worker in workers:
            worker.resume()
    assert unanswered.value.status == 503, unanswered.value.body
    assert "master is not responding" in _error_message(unanswered.value)
    returns = _run(stack, [{**ping, "timeout": 30}])
    assert returns[0] == {mid: True for mid in stack.fleet.ids}


def test_up_api_prints_the_url_and_credentials_that_log_in(open_tmp, cli) -> None:
    root = open_tmp / "stack"
    up = cli("up", "--root", str(root), "--no-minion", "--api")
    try:
        assert up.returncode == 0, up.stderr
        # the credentials line, not the progress line "salt-api: starting ..."
        line = next(x for x in up.stdout.splitlines() if x.startswith("salt-api: http"))
        _, url, _, user, _, password, _, eauth = line.split()
        credentials = ApiCredentials(url=url, user=user, password=password, eauth=eauth)
        assert login(credentials)
        status = cli("status", "--root", str(root))
        assert f"salt-api: {url}" in status.stdout
    finally:
        down = cli("down", "--root", str(root))
    assert down.returncode == 0, down.stderr
