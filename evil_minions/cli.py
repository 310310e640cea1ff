"""
Command line of evil_minions.

.. code-block:: text

    python -m evil_minions [run] --master 127.0.0.1:4506 --publish-port 4505 \\
        --count 1000 --processes 1 --prefix evil --keys-dir DIR [options]
    python -m evil_minions run --config FLEET.json [--keys-ready]
    python -m evil_minions keys   --keys-dir DIR --count N [--prefix P] [--seed-master PKI_DIR]
    python -m evil_minions beacon --run-dir DIR (--ids ID[,ID...] | --all) [--no-change-packages]
    python -m evil_minions status --run-dir DIR [--live]
    python -m evil_minions slowdown --run-dir DIR FACTOR
    python -m evil_minions record --config-dir /etc/salt --minion ID --out FILE CALL [CALL ...]

``run`` is the default sub-command. Every mistake a user can make on the
command line ends in one ``evil_minions: error: ...`` line and exit code 2;
a failure at run time (master unreachable for keys, no fleet in a run dir ...)
in such a line and exit code 1. No tracebacks.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn

from evil_minions import argtypes
from evil_minions.config import (
    ConfigError,
    FleetConfig,
    LatencySpec,
    TimingModel,
    parse_function_latencies,
    parse_master,
)
from evil_minions.entrypoint import EXIT_FAILURE, EXIT_USAGE, run_cli
from evil_minions.errors import EvilMinionsError

PROG: Final = "evil_minions"
SUBCOMMANDS: Final = ("run", "keys", "beacon", "status", "slowdown", "record", "worker")
#: Fleet options left out on the command line are absent from the parsed
#: arguments (argparse.SUPPRESS) and keep FleetConfig's defaults: the
#: defaults live in config.py only; help texts show them from there.
SUPPRESS: Final = argparse.SUPPRESS
_DEFAULTS: Final = FleetConfig()


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as ``evil_minions: error: ...`` with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{PROG}: error: {message}\n")


def _latency(text: str) -> LatencySpec:
    try:
        return LatencySpec.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fleet_options(parser: Any, *options: tuple[str, Any, str]) -> None:
    """Add fleet options, each ``(flag, value type or None, help)``: absent
    from the parsed arguments unless given, so FleetConfig's defaults hold."""
    for flag, kind, text in options:
        parser.add_argument(flag, type=kind, default=SUPPRESS, help=text)


def _add_identity_args(parser: argparse.ArgumentParser) -> None:
    d = _DEFAULTS
    _fleet_options(
        parser,
        ("--count", argtypes.positive, f"number of minions (default: {d.count})"),
        ("--prefix", None, f"minion ids are PREFIX-NNNN (default: {d.prefix})"),
        (
            "--start-index",
            argtypes.non_negative,
            f"number of the first minion (default: {d.start_index})",
        ),
        (
            "--id-width",
            argtypes.positive,
            f"zero padding of the number (default: {d.id_width})",
        ),
        (
            "--keys-dir",
            None,
            f"where minion keys are cached (default: ./{d.keys_dir})",
        ),
        ("--keysize", argtypes.positive, f"RSA key size (default: {d.keysize})"),
    )
    parser.add_argument(
        "--seed-master",
        metavar="PKI_DIR",
        help="copy the public keys into PKI_DIR/minions (accept them)",
    )


def _build_run_parser(sub: Any) -> None:
    d = _DEFAULTS
    run = sub.add_parser(
        "run",
        help="start a fleet (default)",
        description="Start simulated minions against a salt-master. Every fleet "
        "option defaults to FleetConfig's default (evil_minions/config.py).",
    )
    run.add_argument(
        "--master",
        help=f"master HOST or HOST:RET_PORT (default port {d.ret_port}); "
        "required unless --config is given",
    )
    run.add_argument(
        "--config",
        metavar="FILE",
        help="every fleet setting from FILE (FleetConfig.to_json, as a harness "
        "writes it) instead of the options below",
    )
    run.add_argument(
        "--keys-ready",
        action="store_true",
        help="the caller generated and accepted the keys already: skip that step",
    )
    _fleet_options(
        run,
        (
            "--publish-port",
            argtypes.port,
            f"master publish port (default: {d.publish_port})",
        ),
    )
    run.add_argument(
        "--transport",
        choices=("zeromq", "tcp"),
        default=SUPPRESS,
        help=f"master transport (default: {d.transport})",
    )
    _fleet_options(
        run,
        (
            "--processes",
            argtypes.positive,
            f"worker processes to spread minions over (default: {d.processes})",
        ),
    )
    _add_identity_args(run)
    _fleet_options(
        run,
        ("--run-dir", None, "sockets, status and logs (default: KEYS_DIR/run)"),
        (
            "--ramp-rate",
            argtypes.rate,
            f"minions started per second, 0 = no limit (default: {d.ramp_rate:g})",
        ),
        (
            "--auth-concurrency",
            argtypes.positive,
            f"sign-ins in flight per process (default: {d.auth_concurrency})",
        ),
    )
    _add_timing_args(run.add_argument_group("timing model"))
    _add_behaviour_args(run.add_argument_group("behaviour"))
    control = run.add_argument_group("run control")
    control.add_argument(
        "--duration",
        type=argtypes.seconds,
        default=0.0,
        help="stop after SECONDS, 0 = run until signalled (default: 0)",
    )
    _fleet_options(
        control,
        (
            "--status-interval",
            argtypes.positive_seconds,
            f"seconds between status file updates (default: {d.status_interval:g})",
        ),
    )
    control.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=SUPPRESS,
        help=f"worker log level (default: {d.log_level})",
    )


def _add_timing_args(timing: Any) -> None:
    defaults = _DEFAULTS.timing
    _fleet_options(
        timing,
        (
            "--latency",
            _latency,
            "latency of every function: SECONDS or LOW-HIGH "
            f"(default: {defaults.default_latency.render()})",
        ),
    )
    timing.add_argument(
        "--function-latency",
        action="append",
        default=SUPPRESS,
        metavar="FUN=LATENCY",
        help="latency of one function, repeatable (e.g. pkg.list_pkgs=0.5-2)",
    )
    _fleet_options(
        timing,
        (
            "--state-duration",
            _latency,
            f"duration of a state run (default: {defaults.state_duration.render()})",
        ),
        (
            "--slowdown",
            argtypes.positive_number,
            f"multiply all latencies (default: {defaults.slowdown:g})",
        ),
        (
            "--max-concurrent-jobs",
            argtypes.non_negative,
            "jobs a minion runs at once, more wait; 0 = unlimited "
            f"(default: {defaults.max_concurrent_jobs})",
        ),
        (
            "--exempt-functions",
            None,
            "functions that never wait for a job slot "
            f"(default: {','.join(sorted(defaults.exempt_functions))})",
        ),
    )


def _add_behaviour_args(behaviour: Any) -> None:
    d = _DEFAULTS
    behaviour.add_argument(
        "--replay",
        dest="replay_file",
        default=SUPPRESS,
        help="replay file with recorded returns of a real minion",
    )
    behaviour.add_argument(
        "--replay-first",
        action="store_true",
        default=SUPPRESS,
        help="prefer replayed returns over simulated ones",
    )
    behaviour.add_argument(
        "--no-startup-pillar",
        dest="startup_pillar",
        action="store_false",
        default=SUPPRESS,
        help="do not fetch the pillar when a minion starts",
    )
    behaviour.add_argument(
        "--no-state-pillar",
        dest="state_pillar",
        action="store_false",
        default=SUPPRESS,
        help="state runs do not compile the pillar (they see the pillar fetched "
        "last: no new package states or pillar errors)",
    )
    _fleet_options(
        behaviour,
        (
            "--state-count",
            argtypes.positive,
            f"states in a simulated state run (default: {d.state_count})",
        ),
        (
            "--package-count",
            argtypes.positive,
            f"packages per minion (default: {d.package_count})",
        ),
        (
            "--request-timeout",
            argtypes.positive_seconds,
            "seconds per sign-in, event or pillar request to the master "
            f"(default: {d.request_timeout:g}; returns: --return-retry-*)",
        ),
        (
            "--request-tries",
            argtypes.positive,
            f"tries per request (default: {d.request_tries})",
        ),
        *(
            (
                "--" + option.replace("_", "-"),
                argtypes.positive,
                f"{what}: Salt's minion option {option} (default: Salt's)",
            )
            for option, what in (
                ("return_retry_timer", "least seconds per try of a job return"),
                ("return_retry_timer_max", "most seconds per try of a job return"),
                ("return_retry_tries", "tries of a job return"),
            )
        ),
        (
            "--return-priority-functions",
            argtypes.function_names,
            "functions whose job returns go before the requests waiting on a "
            "minion's channel, comma-separated (test.ping,saltutil.find_job): "
            "Salt's minion option return_priority_functions, which a Salt with "
            "the saltfleet series has (default: none)",
        ),
        ("--seed", int, "seed for latencies and package changes (default: random)"),
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, description="Simulate many Salt minions against a real salt-master."
    )
    sub = parser.add_subparsers(
        dest="command",
        parser_class=_Parser,
        metavar="{run,keys,beacon,status,slowdown,record}",
    )
    _build_run_parser(sub)

    keys = sub.add_parser(
        "keys",
        help="generate (and optionally seed) minion keys; forget pinned master keys",
    )
    _add_identity_args(keys)

    beacon = sub.add_parser(
        "beacon", help="make minions fire salt/beacon/<id>/pkgset/changed"
    )
    beacon.add_argument("--run-dir", required=True, help="run dir of the running fleet")
    target = beacon.add_mutually_exclusive_group(required=True)
    target.add_argument("--ids", help="comma separated minion ids")
    target.add_argument("--all", action="store_true", help="every minion of the fleet")
    beacon.add_argument(
        "--no-change-packages",
        dest="change_packages",
        action="store_false",
        help="fire without changing the package set",
    )
    beacon.add_argument(
        "--packages",
        type=argtypes.positive,
        default=3,
        help="packages to change per minion (default: 3)",
    )

    status = sub.add_parser(
        "status", help="print the status of a running fleet as JSON"
    )
    status.add_argument("--run-dir", required=True)
    status.add_argument(
        "--live",
        action="store_true",
        help="ask the workers instead of reading status.json",
    )

    slowdown = sub.add_parser(
        "slowdown", help="change the slowdown factor of a running fleet"
    )
    slowdown.add_argument("--run-dir", required=True)
    slowdown.add_argument("factor", type=argtypes.positive_number)

    record = sub.add_parser(
        "record", help="record a real minion's returns into a replay file"
    )
    record.add_argument(
        "--config-dir",
        default="/etc/salt",
        help="salt-master config dir (default: %(default)s)",
    )
    record.add_argument("--minion", required=True, help="id of the real minion")
    record.add_argument("--out", required=True, help="replay file to write")
    record.add_argument("--timeout", type=argtypes.positive, default=60)
    record.add_argument(
        "calls",
        nargs="+",
        metavar="CALL",
        help='function and arguments, e.g. "network.interfaces" or "cmd.run uptime"',
    )

    worker = sub.add_parser("worker")  # internal: started by the supervisor
    worker.add_argument("--run-dir", required=True)
    worker.add_argument("--index", type=argtypes.non_negative, required=True)
    return parser


#: ``run`` / ``keys`` options stored under the name of a FleetConfig field
_FLEET_FIELDS: Final = (
    "publish_port", "transport", "processes", "count", "prefix", "start_index",
    "id_width", "keys_dir", "run_dir", "keysize", "ramp_rate", "auth_concurrency",
    "replay_file", "replay_first", "startup_pillar", "state_pillar", "state_count",
    "package_count", "request_timeout", "request_tries", "return_retry_timer",
    "return_retry_timer_max", "return_retry_tries", "return_priority_functions",
    "status_interval",
    "log_level", "seed",
)  # fmt: skip
#: option names that differ from their FleetConfig field
_OPTION_NAMES: Final = {
    "replay_file": "--replay",
    "startup_pillar": "--no-startup-pillar",
    "state_pillar": "--no-state-pillar",
}
#: ``run`` options that make up the TimingModel
_TIMING_OPTIONS: Final = (
    "latency", "function_latency", "state_duration", "slowdown",
    "max_concurrent_jobs", "exempt_functions",
)  # fmt: skip


def _timing_from_args(args: argparse.Namespace) -> TimingModel | None:
    """The TimingModel of the given timing options, None if none was given."""
    given = {k: getattr(args, k) for k in _TIMING_OPTIONS if hasattr(args, k)}
    if not given:
        return None
    fields: dict[str, Any] = {}
    if "latency" in given:
        fields["default_latency"] = given.pop("latency")
    if "function_latency" in given:
        fields["per_function"] = parse_function_latencies(given.pop("function_latency"))
    if "exempt_functions" in given:
        fields["exempt_functions"] = frozenset(
            f.strip() for f in given.pop("exempt_functions").split(",") if f.strip()
        )
    return TimingModel(**fields, **given)


def config_from_args(args: argparse.Namespace) -> FleetConfig:
    """
    Turn parsed ``run`` or ``keys`` arguments into a :class:`FleetConfig`.

    Options not given keep FleetConfig's defaults; ``run --config FILE``
    reads the whole config from FILE instead. Raises ConfigError.
    """
    if getattr(args, "config", None):
        given = [
            k
            for k in ("master", *_FLEET_FIELDS, *_TIMING_OPTIONS)
            if getattr(args, k, None) is not None
        ]
        if given:
            raise ConfigError(
                f"--config {args.config} holds every fleet setting: drop "
                + ", ".join(
                    _OPTION_NAMES.get(k, f"--{k.replace('_', '-')}") for k in given
                )
            )
        return FleetConfig.load(args.config)
    fields: dict[str, Any] = {
        k: getattr(args, k) for k in _FLEET_FIELDS if hasattr(args, k)
    }
    timing = _timing_from_args(args)
    if timing is not None:
        fields["timing"] = timing
    master = getattr(args, "master", None)
    if args.command == "run":
        if not master:
            raise ConfigError(
                "the following arguments are required: --master (or --config FILE)"
            )
        fields["master_host"], port = parse_master(master)
        if port is not None:
            fields["ret_port"] = port
    return FleetConfig(**fields)


def _cmd_run(args: argparse.Namespace) -> int:
    from evil_minions.supervisor import FleetSupervisor

    cfg = config_from_args(args)
    return FleetSupervisor(
        cfg,
        seed_master_pki=args.seed_master,
        keys_ready=args.keys_ready,
        duration=args.duration,
    ).run()


def _cmd_keys(args: argparse.Namespace) -> int:
    from evil_minions import keys

    def progress(done: int, total: int) -> None:
        print(
            f"\rkeys: {done}/{total} ready",
            end="\n" if done == total else "",
            file=sys.stderr,
            flush=True,
        )

    written = keys.prepare_keys(
        config_from_args(args), master_pki_dir=args.seed_master, progress=progress
    )
    if args.seed_master:
        print(
            f"seeded {written} new keys into {args.seed_master}/minions",
            file=sys.stderr,
        )
    return 0


def _cmd_beacon(args: argparse.Namespace) -> int:
    from evil_minions import control

    ids = None if args.all else [i.strip() for i in args.ids.split(",") if i.strip()]
    report = control.fire_beacons(
        args.run_dir, ids, change_packages=args.change_packages, packages=args.packages
    )
    print(
        json.dumps(
            {"fired": report.fired, "failed": report.failed, "unknown": report.unknown},
            indent=1,
        )
    )
    return 0 if not report.failed and not report.unknown else EXIT_FAILURE


def _cmd_status(args: argparse.Namespace) -> int:
    from evil_minions import control, status

    if args.live:
        print(
            json.dumps(control.process_status(args.run_dir), indent=1, sort_keys=True)
        )
        return 0
    current = status.read_status(args.run_dir)
    if current is None:
        raise control.ControlError(
            f"no status.json in {args.run_dir}: is a fleet running there?"
        )
    print(json.dumps(current, indent=1, sort_keys=True))
    return 0


def _cmd_slowdown(args: argparse.Namespace) -> int:
    from evil_minions import control

    control.set_slowdown(args.run_dir, args.factor)
    return 0


def parse_call(text: str) -> Any:
    """``"cmd.run 'uname -a' python_shell=True"`` -> ReplayCall(fun, args, kwargs)."""
    from evil_minions.replay import ReplayCall

    words = shlex.split(text)
    if not words or "." not in words[0]:
        raise ConfigError(
            f"invalid call {text!r}: start with MODULE.FUNCTION, e.g. 'cmd.run uptime'"
        )
    args = [w for w in words[1:] if "=" not in w]
    kwargs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return ReplayCall(words[0], tuple(args), kwargs)


def _cmd_record(args: argparse.Namespace) -> int:
    import os

    import salt.client

    from evil_minions import replay

    calls = [parse_call(c) for c in args.calls]
    client = salt.client.LocalClient(c_path=os.path.join(args.config_dir, "master"))
    store = replay.record_from_client(
        client, args.minion, calls, args.out, timeout=args.timeout
    )
    print(
        f"recorded {len(store.entries)} returns of {args.minion} into {args.out}",
        file=sys.stderr,
    )
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
    from evil_minions.fleet import run_worker

    return run_worker(args.run_dir, args.index)


_COMMANDS: Final = {
    "run": _cmd_run,
    "keys": _cmd_keys,
    "beacon": _cmd_beacon,
    "status": _cmd_status,
    "slowdown": _cmd_slowdown,
    "record": _cmd_record,
    "worker": _cmd_worker,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    return run_cli(
        _main,
        argv,
        prog=PROG,
        errors={ConfigError: EXIT_USAGE, EvilMinionsError: EXIT_FAILURE},
    )


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in (*SUBCOMMANDS, "-h", "--help"):
        argv.insert(0, "run")
    args = _build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except EvilMinionsError:
        raise
    except Exception as exc:
        # Salt's client errors (master down, bad config dir) are user-facing
        # conditions, not bugs: report them in one line too. Imported here so
        # `--help` and argument errors stay fast.
        import salt.exceptions

        if isinstance(exc, salt.exceptions.SaltException):
            raise EvilMinionsError(str(exc)) from exc
        raise
