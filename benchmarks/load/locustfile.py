"""An operator console's traffic through salt-api (``rest_cherrypy``).

Run from the project root (the modules beside this file are imported as
``benchmarks.load.*``)::

    SALTFLEET_API_PASSWORD=SECRET locust -f benchmarks/load/locustfile.py \\
        --host http://127.0.0.1:8000 --headless --load-users 20

Users:

- :class:`ConsoleUser`: an operator (or a dashboard) clicking through the
  console: presence checks, jobs to groups and to everyone, job lookups,
  pillar reads, the rate limiter's status. It logs in once and reuses the
  token (a new login only after a ``401``).
- :class:`EventFollower`: exactly one client following ``/events``, as a
  console's live job view does, in bounded windows.

Every failed request is recorded as ``<kind>: <detail>``
(:mod:`benchmarks.load.failures`): ``overloaded`` (the master refused the
job for load) apart from ``timeout`` and ``server_error``.

The task weights, think times, sizes and timeouts, each with its reason,
are in :mod:`benchmarks.load.traffic` (the runner's report quotes them too,
and it must not import locust: locust monkey-patches the process it is
imported in). The load's shape over time is :class:`ConsoleShape` (ramp,
steady, spike, recovery; :mod:`benchmarks.load.shape` states the defaults).
"""

from __future__ import annotations

import collections
import random
import time
from typing import Any

from locust import HttpUser, LoadTestShape, between, constant, events, task
from locust.clients import ResponseContextManager

from benchmarks.load.failures import (
    FailureKind,
    classify,
    missing_minions,
    server_error_cause,
)
from benchmarks.load.shape import LoadProfile
from benchmarks.load.traffic import (
    CONSOLE_THINK_S,
    EVENTS_MAX,
    EVENTS_RECONNECT_S,
    EVENTS_WINDOW_S,
    HTTP_TIMEOUT_S,
    PASSWORD_ENV,
    PILLAR_KEY,
    PILLAR_TIMEOUT_S,
    PRESENCE_TIMEOUT_S,
    RECENT_JOBS,
    WEIGHT_JOB_ALL,
    WEIGHT_JOB_GROUP,
    WEIGHT_JOB_LOOKUP,
    WEIGHT_PILLAR_GET,
    WEIGHT_PILLAR_ITEMS,
    WEIGHT_PRESENCE,
    WEIGHT_RUNNER,
)


@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    # on the parser itself: locust's own options (is_secret) exist only there
    parser.add_argument("--salt-user", default="saltfleet-load", help="eauth user")
    parser.add_argument(
        "--salt-password",
        default="",
        env_var=PASSWORD_ENV,
        is_secret=True,
        help=f"eauth password (or ${PASSWORD_ENV})",
    )
    parser.add_argument("--salt-eauth", default="sharedsecret", help="eauth backend")
    parser.add_argument(
        "--salt-ca-file",
        default="",
        help="certificate that verifies salt-api's TLS (a self-signed one); "
        "workers elsewhere need it at the same path",
    )
    parser.add_argument(
        "--salt-minions",
        default="",
        help="comma-separated minion ids to target; default: the minions "
        "that answer test.ping to '*'",
    )
    parser.add_argument(
        "--salt-without-ratelimit",
        action="store_true",
        help="the master runs pristine Salt, which has no ratelimit runner: "
        "the console does not poll ratelimit.status",
    )
    parser.add_argument(
        "--presence-targets", type=int, default=10, help="minions per presence check"
    )
    parser.add_argument(
        "--group-size", type=int, default=50, help="minions per group job"
    )
    defaults = LoadProfile()
    for name, value, text in (
        ("users", defaults.users, "users in the ramp, steady and recover phases"),
        ("spike-users", defaults.spike_users, "users during the spike"),
        ("ramp", defaults.ramp_s, "seconds of the ramp to --load-users"),
        ("steady", defaults.steady_s, "seconds at --load-users"),
        ("spike", defaults.spike_s, "seconds at --load-spike-users"),
        ("recover", defaults.recover_s, "seconds back at --load-users"),
    ):
        parser.add_argument(
            f"--load-{name}", type=type(value), default=value, help=f"shape: {text}"
        )


def profile_from(options: Any) -> LoadProfile:
    """The :class:`LoadProfile` the ``--load-*`` options describe."""
    return LoadProfile(
        users=options.load_users,
        spike_users=options.load_spike_users,
        ramp_s=options.load_ramp,
        steady_s=options.load_steady,
        spike_s=options.load_spike,
        recover_s=options.load_recover,
    )


class ConsoleShape(LoadTestShape):
    """Ramp, steady, spike, recovery; then the run ends."""

    def tick(self) -> tuple[int, float] | None:
        """Users and spawn rate of the current phase; None ends the run."""
        assert self.runner is not None
        phase = profile_from(self.runner.environment.parsed_options).at(
            self.get_run_time()
        )
        return None if phase is None else (phase.users, phase.spawn_rate)


#: minion ids of this process, fetched once (every user targets the same fleet)
_fleet: list[str] = []


class SaltApiUser(HttpUser):
    """Logs in once, keeps the token, and classifies every failure."""

    abstract = True
    token: str | None = None

    @property
    def options(self) -> Any:
        """Locust's parsed options, the ``--salt-*`` and ``--load-*`` ones included."""
        return self.environment.parsed_options

    def on_start(self) -> None:
        """Log in once; the token is reused until a ``401``."""
        if self.options.salt_ca_file:
            self.client.verify = self.options.salt_ca_file
        self.login()

    def login(self) -> None:
        """``POST /login`` with the eauth credentials; keep the token."""
        body = {
            "username": self.options.salt_user,
            "password": self.options.salt_password,
            "eauth": self.options.salt_eauth,
        }
        self.token = None
        reply = self.send("POST", "/login", "/login", body, authenticated=False)
        if isinstance(reply, list) and reply and isinstance(reply[0], dict):
            self.token = reply[0].get("token")

    def send(
        self,
        method: str,
        path: str,
        name: str,
        body: Any = None,
        *,
        targeted: list[str] | None = None,
        authenticated: bool = True,
    ) -> Any:
        """One request; its ``return`` on success, None on a failure (which
        is recorded with its :class:`FailureKind`)."""
        headers = {"Accept": "application/json"}
        if authenticated:
            if self.token is None:
                self.login()
            if self.token is None:
                return None
            headers["X-Auth-Token"] = self.token
        with self.client.request(
            method,
            path,
            name=name,
            json=body,
            headers=headers,
            timeout=HTTP_TIMEOUT_S,
            catch_response=True,
        ) as response:
            return self._judge(response, targeted)

    def _judge(
        self, response: ResponseContextManager, targeted: list[str] | None
    ) -> Any:
        status = int(response.status_code or 0)
        kind = classify(status, response.text or "", response.error)
        if kind is not None:
            detail = f"HTTP {status}" if status else type(response.error).__name__
            if kind is FailureKind.OVERLOADED:
                detail += " master overloaded, retry later"
            if kind is FailureKind.SERVER_ERROR:
                cause = server_error_cause(response.text or "")
                detail += f" ({cause})" if cause else ""
            if kind is FailureKind.AUTH:
                self.token = None  # log in again before the next request
            response.failure(kind.message(detail))
            return None
        try:
            returns = response.json()["return"]
        except (ValueError, KeyError, TypeError):
            response.failure(
                FailureKind.SERVER_ERROR.message("HTTP 200 without a return")
            )
            return None
        if targeted is not None:
            first = returns[0] if isinstance(returns, list) and returns else None
            missing = missing_minions(targeted, first)
            if missing:
                response.failure(FailureKind.INCOMPLETE.message("minions missing"))
                return None
        response.success()
        return returns

    def call(self, name: str, low: dict[str, Any], **kwargs: Any) -> Any:
        """POST one lowstate chunk to ``/``; its return."""
        returns = self.send("POST", "/", name, [low], **kwargs)
        return returns[0] if isinstance(returns, list) and returns else None

    def fleet(self) -> list[str]:
        """The minion ids to target (the option, else the accepted keys)."""
        if not _fleet:
            given = [m for m in self.options.salt_minions.split(",") if m.strip()]
            if not given:
                # the load user has no wheel grant to list keys: the minions
                # that answer are the fleet (the runner passes --salt-minions)
                reply = self.call(
                    "local test.ping [fleet]",
                    {
                        "client": "local",
                        "tgt": "*",
                        "fun": "test.ping",
                        "timeout": PRESENCE_TIMEOUT_S,
                    },
                )
                given = list(reply) if isinstance(reply, dict) else []
            _fleet[:] = sorted(given)
        return _fleet

    def sample(self, size: int) -> list[str]:
        """``size`` minions picked at random from the fleet."""
        ids = self.fleet()
        return random.sample(ids, min(size, len(ids)))


class ConsoleUser(SaltApiUser):
    """An operator at the console; weights and think time stated above."""

    wait_time = between(*CONSOLE_THINK_S)

    def on_start(self) -> None:
        """Log in and start with an empty recent-jobs list."""
        super().on_start()
        self.recent_jobs: collections.deque[str] = collections.deque(maxlen=RECENT_JOBS)

    @task(WEIGHT_PRESENCE)
    def presence(self) -> None:
        """Presence check: ``test.ping`` to a few minions with a short timeout."""
        targets = self.sample(self.options.presence_targets)
        if targets:
            low = {
                "client": "local",
                "tgt": targets,
                "tgt_type": "list",
                "fun": "test.ping",
                "timeout": PRESENCE_TIMEOUT_S,
            }
            self.call("local test.ping [presence]", low, targeted=targets)

    def _submit(self, name: str, tgt: Any, tgt_type: str, fun: str) -> None:
        low = {"client": "local_async", "tgt": tgt, "tgt_type": tgt_type, "fun": fun}
        reply = self.call(name, low)
        if isinstance(reply, dict) and reply.get("jid"):
            self.recent_jobs.append(str(reply["jid"]))

    @task(WEIGHT_JOB_GROUP)
    def job_to_group(self) -> None:
        """An async job (package inventory) to a group of minions."""
        targets = self.sample(self.options.group_size)
        if targets:
            self._submit(
                "local_async pkg.list_pkgs [group]", targets, "list", "pkg.list_pkgs"
            )

    @task(WEIGHT_JOB_ALL)
    def job_to_all(self) -> None:
        """An async job to every minion."""
        self._submit("local_async test.version [all]", "*", "glob", "test.version")

    @task(WEIGHT_JOB_LOOKUP)
    def job_lookup(self) -> None:
        """``GET /jobs/<jid>`` of one of this user's recent jobs."""
        if self.recent_jobs:
            jid = random.choice(self.recent_jobs)
            self.send("GET", f"/jobs/{jid}", "/jobs/[jid]")

    def _pillar(self, fun: str, arg: list[str]) -> None:
        for minion in self.sample(1):
            low = {
                "client": "local",
                "tgt": minion,
                "fun": fun,
                "arg": arg,
                "timeout": PILLAR_TIMEOUT_S,
            }
            self.call(f"local {fun} [one]", low, targeted=[minion])

    @task(WEIGHT_PILLAR_ITEMS)
    def pillar_items(self) -> None:
        """One minion's whole pillar, compiled by the master."""
        self._pillar("pillar.items", [])

    @task(WEIGHT_PILLAR_GET)
    def pillar_get(self) -> None:
        """One pillar value of one minion."""
        self._pillar("pillar.get", [PILLAR_KEY])

    @task(WEIGHT_RUNNER)
    def ratelimit_status(self) -> None:
        """The rate limiter's status, as a console's load indicator polls it;
        a console on pristine Salt has no such indicator."""
        if self.options.salt_without_ratelimit:
            return
        self.call(
            "runner ratelimit.status", {"client": "runner", "fun": "ratelimit.status"}
        )


class EventFollower(SaltApiUser):
    """One live view following ``/events`` in bounded windows."""

    fixed_count = 1
    wait_time = constant(EVENTS_RECONNECT_S)

    @task
    def follow(self) -> None:
        """Read ``/events`` for one bounded window, then record what was read."""
        if self.token is None:
            self.login()
        if self.token is None:
            return
        started = time.monotonic()
        seen = 0
        with self.client.get(
            "/events",
            name="/events [connect]",
            headers={"X-Auth-Token": self.token, "Accept": "text/event-stream"},
            stream=True,
            timeout=(HTTP_TIMEOUT_S, EVENTS_WINDOW_S + HTTP_TIMEOUT_S),
            catch_response=True,
        ) as response:
            if self._judge_stream(response) is None:
                return
            for line in response.iter_lines(decode_unicode=True):
                seen += line.startswith("data:")
                if seen >= EVENTS_MAX or time.monotonic() - started > EVENTS_WINDOW_S:
                    break
            response.close()
        events.request.fire(
            request_type="SSE",
            name="/events [window]",
            response_time=(time.monotonic() - started) * 1000,
            response_length=seen,
            exception=None,
            context={},
        )

    def _judge_stream(self, response: ResponseContextManager) -> bool | None:
        status = int(response.status_code or 0)
        kind = classify(
            status, "" if status == 200 else response.text or "", response.error
        )
        if kind is not None:
            if kind is FailureKind.AUTH:
                self.token = None
            response.failure(kind.message(f"HTTP {status}"))
            return None
        response.success()
        return True
