"""
Typed configuration of a simulated fleet: one place for every knob and default.

``FleetConfig`` is what the CLI parses into and what the harness builds
directly; it round-trips through JSON (``to_json`` / ``from_json``): the
supervisor hands it to its worker processes in a file, and a harness hands it
to the supervisor the same way (``python -m evil_minions run --config FILE``,
read with :meth:`FleetConfig.load`). The CLI's flags take their defaults from
here too.

``TimingModel`` describes how long simulated work takes: a latency per
function (fixed or uniformly random within bounds), a global slowdown factor
and a per-minion ceiling on concurrent jobs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from evil_minions.errors import EvilMinionsError
from evil_minions.returns import ReturnRetry

DEFAULT_PREFIX: Final = "evil"
DEFAULT_KEYSIZE: Final = 2048
DEFAULT_ID_WIDTH: Final = 4
#: relative to the current directory: meant for a person at a shell
DEFAULT_KEYS_DIR: Final = "evil-minions-keys"

#: Functions that never wait for a free job slot. A real minion queues every
#: job once ``process_count_max`` is reached, but with the master's
#: ``saltutil.find_job`` probes queued behind long jobs the CLI reports busy
#: minions as "did not return"; exempting the probes keeps the busy-minion
#: model about load, not about that artefact. Override with
#: ``--exempt-functions``.
DEFAULT_EXEMPT_FUNCTIONS: Final = frozenset({"saltutil.find_job", "saltutil.running"})

_LATENCY_RE: Final = re.compile(
    r"^\s*(?P<low>\d+(?:\.\d+)?)\s*(?:-\s*(?P<high>\d+(?:\.\d+)?)\s*)?$"
)


class ConfigError(EvilMinionsError, ValueError):
    """A configuration value a user supplied is invalid; the message names it."""


@dataclasses.dataclass(frozen=True)
class LatencySpec:
    """A duration in seconds: fixed (``low == high``) or uniform in ``[low, high]``."""

    low: float = 0.0
    high: float = 0.0

    def __post_init__(self) -> None:
        if self.low < 0 or self.high < self.low:
            raise ConfigError(
                f"invalid latency {self.low}-{self.high}: need 0 <= low <= high"
            )

    @classmethod
    def parse(cls, text: str) -> LatencySpec:
        """
        Parse ``"0.2"`` (fixed) or ``"0.05-0.5"`` (uniform range), in seconds.

        .. code-block:: python

            LatencySpec.parse("0.05-0.5")  # LatencySpec(low=0.05, high=0.5)
        """
        match = _LATENCY_RE.match(text)
        if not match:
            raise ConfigError(
                f"invalid latency {text!r}: use SECONDS or LOW-HIGH, e.g. 0.2 or 0.05-0.5"
            )
        low = float(match.group("low"))
        high = float(match.group("high")) if match.group("high") else low
        return cls(low, high)

    def sample(self, rng: random.Random) -> float:
        """Draw one duration."""
        if self.high == self.low:
            return self.low
        return rng.uniform(self.low, self.high)

    def render(self) -> str:
        """The inverse of :meth:`parse`."""
        return (
            f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
        )


@dataclasses.dataclass(frozen=True)
class TimingModel:
    """How long simulated work takes and how much of it a minion does at once."""

    #: latency of every function without an entry in ``per_function``
    default_latency: LatencySpec = LatencySpec()
    #: latency per function name, e.g. ``{"pkg.list_pkgs": LatencySpec(0.5, 2)}``
    per_function: Mapping[str, LatencySpec] = dataclasses.field(default_factory=dict)
    #: total duration of one ``state.apply`` / ``state.highstate`` / ``state.sls``
    state_duration: LatencySpec = LatencySpec(1.0, 3.0)
    #: every sampled latency and state duration is multiplied by this
    slowdown: float = 1.0
    #: jobs a minion runs at once; more wait for a free slot (0: unlimited)
    max_concurrent_jobs: int = 0
    #: functions that never wait for a slot (see DEFAULT_EXEMPT_FUNCTIONS)
    exempt_functions: frozenset[str] = DEFAULT_EXEMPT_FUNCTIONS

    def __post_init__(self) -> None:
        if self.slowdown <= 0:
            raise ConfigError(f"invalid slowdown {self.slowdown}: must be > 0")
        if self.max_concurrent_jobs < 0:
            raise ConfigError(
                f"invalid max concurrent jobs {self.max_concurrent_jobs}: must be >= 0"
            )

    def latency(
        self, fun: str, rng: random.Random, slowdown: float | None = None
    ) -> float:
        """Seconds a call of ``fun`` takes before it returns, slowdown applied."""
        spec = self.per_function.get(fun, self.default_latency)
        return spec.sample(rng) * (self.slowdown if slowdown is None else slowdown)

    def state_run_duration(
        self, rng: random.Random, slowdown: float | None = None
    ) -> float:
        """Seconds one simulated state run takes, slowdown applied."""
        factor = self.slowdown if slowdown is None else slowdown
        return self.state_duration.sample(rng) * factor

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "default_latency": self.default_latency.render(),
            "per_function": {k: v.render() for k, v in self.per_function.items()},
            "state_duration": self.state_duration.render(),
            "slowdown": self.slowdown,
            "max_concurrent_jobs": self.max_concurrent_jobs,
            "exempt_functions": sorted(self.exempt_functions),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimingModel:
        """Inverse of :meth:`to_dict`."""
        return cls(
            default_latency=LatencySpec.parse(data["default_latency"]),
            per_function={
                k: LatencySpec.parse(v) for k, v in data["per_function"].items()
            },
            state_duration=LatencySpec.parse(data["state_duration"]),
            slowdown=float(data["slowdown"]),
            max_concurrent_jobs=int(data["max_concurrent_jobs"]),
            exempt_functions=frozenset(data["exempt_functions"]),
        )


def parse_function_latencies(items: Sequence[str]) -> dict[str, LatencySpec]:
    """
    Parse ``FUN=LATENCY`` items, e.g. ``["test.ping=0.01", "pkg.list_pkgs=0.5-2"]``.
    """
    result: dict[str, LatencySpec] = {}
    for item in items:
        fun, sep, spec = item.partition("=")
        if not sep or "." not in fun.strip():
            raise ConfigError(
                f"invalid function latency {item!r}: use MODULE.FUNCTION=LATENCY,"
                " e.g. test.ping=0.01 or pkg.list_pkgs=0.5-2"
            )
        result[fun.strip()] = LatencySpec.parse(spec)
    return result


def parse_master(text: str) -> tuple[str, int | None]:
    """
    Parse ``HOST``, ``HOST:PORT`` or ``[IPV6]:PORT`` into ``(host, port or None)``.
    """
    text = text.strip()
    if not text:
        raise ConfigError(
            "empty --master: use HOST or HOST:RET_PORT, e.g. 127.0.0.1:4506"
        )
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    port = None
    if port_text:
        if not port_text.isdigit():
            raise ConfigError(f"invalid port in --master {text!r}: not a number")
        port = check_port(int(port_text), "--master")
    if not host:
        raise ConfigError(f"invalid --master {text!r}: missing host")
    return host, port


def check_port(port: int, what: str) -> int:
    """Return ``port`` if it is a valid TCP port, else raise naming ``what``."""
    if not 1 <= port <= 65535:
        raise ConfigError(f"invalid port {port} for {what}: must be 1-65535")
    return port


@dataclasses.dataclass(frozen=True)
class FleetConfig:
    """Everything a fleet run needs; defaults live here and nowhere else."""

    master_host: str = "127.0.0.1"
    ret_port: int = 4506
    publish_port: int = 4505
    transport: str = "zeromq"
    count: int = 10
    processes: int = 1
    prefix: str = DEFAULT_PREFIX
    start_index: int = 1
    id_width: int = DEFAULT_ID_WIDTH
    keys_dir: str = DEFAULT_KEYS_DIR
    run_dir: str = ""
    keysize: int = DEFAULT_KEYSIZE
    #: minions started per second over the whole fleet (0: as fast as possible)
    ramp_rate: float = 0.0
    #: authentications in flight at once per process
    auth_concurrency: int = 32
    timing: TimingModel = TimingModel()
    replay_file: str | None = None
    #: consult the replay file before the simulator's own functions
    replay_first: bool = False
    #: fetch the pillar once when a minion starts, as a real minion does
    startup_pillar: bool = True
    #: compile the pillar for every state run, as a real minion does (package
    #: states and pillar errors come from it); off, a state run uses the
    #: pillar fetched last and costs the master no pillar compile
    state_pillar: bool = True
    state_count: int = 10
    package_count: int = 300
    request_timeout: float = 60.0
    request_tries: int = 3
    #: Salt's minion options for returns (see evil_minions.returns); None:
    #: Salt's default (``salt.config.DEFAULT_MINION_OPTS``)
    return_retry_timer: int | None = None
    return_retry_timer_max: int | None = None
    return_retry_tries: int | None = None
    #: Salt's minion option ``return_priority_functions`` (a Salt with the
    #: series only): the returns of these functions go before the requests
    #: waiting on a minion's channel; empty, Salt's default, keeps the order
    return_priority_functions: tuple[str, ...] = ()
    status_interval: float = 1.0
    log_level: str = "warning"
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ConfigError(f"invalid --count {self.count}: must be >= 1")
        if self.processes < 1:
            raise ConfigError(f"invalid --processes {self.processes}: must be >= 1")
        if self.processes > self.count:
            raise ConfigError(
                f"--processes {self.processes} is more than --count {self.count}:"
                " every process needs at least one minion"
            )
        check_port(self.ret_port, "the master ret port")
        check_port(self.publish_port, "--publish-port")
        if self.transport not in ("zeromq", "tcp"):
            raise ConfigError(
                f"invalid --transport {self.transport!r}: choose zeromq or tcp"
            )
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.prefix):
            raise ConfigError(
                f"invalid --prefix {self.prefix!r}: use letters, digits, '.', '_' or '-'"
            )
        if self.start_index < 0:
            raise ConfigError(f"invalid --start-index {self.start_index}: must be >= 0")
        if self.ramp_rate < 0:
            raise ConfigError(f"invalid --ramp-rate {self.ramp_rate}: must be >= 0")
        if self.auth_concurrency < 1:
            raise ConfigError(
                f"invalid --auth-concurrency {self.auth_concurrency}: must be >= 1"
            )
        if self.keysize < 2048:
            raise ConfigError(f"invalid --keysize {self.keysize}: Salt needs >= 2048")
        if self.state_count < 1 or self.package_count < 1:
            raise ConfigError("--state-count and --package-count must be >= 1")
        if self.request_timeout <= 0 or self.request_tries < 1:
            raise ConfigError("--request-timeout must be > 0 and --request-tries >= 1")
        # a list after a JSON round trip
        object.__setattr__(
            self, "return_priority_functions", tuple(self.return_priority_functions)
        )
        try:
            self.return_retry()
        except ValueError as exc:
            # the message names the option
            raise ConfigError(f"invalid minion return options: {exc}") from None

    def return_retry_options(self) -> dict[str, Any]:
        """The ``return_retry_*`` and ``return_priority_functions`` minion
        options set here (unset: Salt's default)."""
        given: dict[str, Any] = {
            "return_retry_timer": self.return_retry_timer,
            "return_retry_timer_max": self.return_retry_timer_max,
            "return_retry_tries": self.return_retry_tries,
        }
        if self.return_priority_functions:
            given["return_priority_functions"] = list(self.return_priority_functions)
        return {name: value for name, value in given.items() if value is not None}

    def return_retry(self) -> ReturnRetry:
        """How the fleet's minions try and give up returns."""
        return ReturnRetry.from_opts(self.return_retry_options())

    @property
    def master_uri(self) -> str:
        """ZeroMQ/TCP URI of the master's request server."""
        host = f"[{self.master_host}]" if ":" in self.master_host else self.master_host
        return f"tcp://{host}:{self.ret_port}"

    @property
    def effective_run_dir(self) -> str:
        """Where sockets, status files and logs go (default: ``<keys_dir>/run``)."""
        return self.run_dir or os.path.join(self.keys_dir, "run")

    def minion_ids(self) -> list[str]:
        """Every minion id of the fleet, in start order."""
        return minion_ids(self.prefix, self.count, self.start_index, self.id_width)

    def to_json(self) -> str:
        """Serialise for the worker processes."""
        data = dataclasses.asdict(self)
        data["timing"] = self.timing.to_dict()
        return json.dumps(data, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> FleetConfig:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        data["timing"] = TimingModel.from_dict(data["timing"])
        return cls(**data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FleetConfig:
        """
        Read a file written from :meth:`to_json`; errors name the file.

        .. code-block:: python

            FleetConfig.load("/tmp/fleet/fleet.json").count  # 1000
        """
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ConfigError(
                f"cannot read fleet config {path}: {exc.strerror}"
            ) from None
        try:
            return cls.from_json(text)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path} is not a fleet config (FleetConfig.to_json): {exc!r}"
            ) from None


def minion_ids(
    prefix: str, count: int, start_index: int = 1, width: int = DEFAULT_ID_WIDTH
) -> list[str]:
    """
    ``["<prefix>-0001", ...]``: ``count`` ids, zero padded to at least ``width``.

    .. code-block:: python

        minion_ids("evil", 3)  # ['evil-0001', 'evil-0002', 'evil-0003']
    """
    last = start_index + count - 1
    width = max(width, len(str(last)))
    return [f"{prefix}-{n:0{width}d}" for n in range(start_index, last + 1)]


def split_evenly(items: Sequence[str], parts: int) -> list[list[str]]:
    """Split ``items`` into ``parts`` contiguous slices whose sizes differ by at most 1."""
    size, extra = divmod(len(items), parts)
    slices: list[list[str]] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        slices.append(list(items[start:end]))
        start = end
    return slices
