"""
Command line of evil_minions.

.. code-block:: text

    python -m evil_minions [run] --master 127.0.0.1:4506 --publish-port 4505 \\
        --count 1000 --processes 1 --prefix evil --keys-dir DIR [options]
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

from evil_minions.config import (
    DEFAULT_AUTH_CONCURRENCY,
    DEFAULT_EXEMPT_FUNCTIONS,
    DEFAULT_ID_WIDTH,
    DEFAULT_KEYSIZE,
    DEFAULT_PACKAGE_COUNT,
    DEFAULT_PREFIX,
    DEFAULT_PUBLISH_PORT,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_REQUEST_TRIES,
    DEFAULT_RET_PORT,
    DEFAULT_STATE_COUNT,
    DEFAULT_STATUS_INTERVAL,
    ConfigError,
    FleetConfig,
    LatencySpec,
    TimingModel,
    minion_ids,
    parse_function_latencies,
    parse_master,
)
from evil_minions.entrypoint import EXIT_FAILURE, EXIT_USAGE, run_cli
from evil_minions.errors import EvilMinionsError

PROG: Final = "evil_minions"
SUBCOMMANDS: Final = ("run", "keys", "beacon", "status", "slowdown", "record", "worker")


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as ``evil_minions: error: ...`` with exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{PROG}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be >= 0")
    return value


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def _latency(text: str) -> LatencySpec:
    try:
        return LatencySpec.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (1-65535)")
    return value


def _add_identity_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count",
        type=_positive_int,
        default=10,
        help="number of minions (default: 10)",
    )
    parser.add_argument(
        "--prefix",
        default=DEFAULT_PREFIX,
        help="minion ids are PREFIX-NNNN (default: %(default)s)",
    )
    parser.add_argument(
        "--start-index",
        type=_non_negative_int,
        default=1,
        help="number of the first minion (default: 1)",
    )
    parser.add_argument(
        "--id-width",
        type=_positive_int,
        default=DEFAULT_ID_WIDTH,
        help="zero padding of the number (default: %(default)s)",
    )
    parser.add_argument(
        "--keys-dir",
        default="evil-minions-keys",
        help="where minion keys are cached (default: ./%(default)s)",
    )
    parser.add_argument(
        "--keysize",
        type=_positive_int,
        default=DEFAULT_KEYSIZE,
        help="RSA key size (default: %(default)s)",
    )
    parser.add_argument(
        "--seed-master",
        metavar="PKI_DIR",
        help="copy the public keys into PKI_DIR/minions (accept them)",
    )


def _build_run_parser(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="start a fleet (default)",
        description="Start simulated minions against a salt-master.",
    )
    run.add_argument(
        "--master",
        required=True,
        help=f"master HOST or HOST:RET_PORT (default port {DEFAULT_RET_PORT})",
    )
    run.add_argument(
        "--publish-port",
        type=_port,
        default=DEFAULT_PUBLISH_PORT,
        help="master publish port (default: %(default)s)",
    )
    run.add_argument(
        "--transport",
        choices=("zeromq", "tcp"),
        default="zeromq",
        help="master transport (default: %(default)s)",
    )
    run.add_argument(
        "--processes",
        type=_positive_int,
        default=1,
        help="worker processes to spread minions over (default: 1)",
    )
    _add_identity_args(run)
    run.add_argument(
        "--run-dir", default="", help="sockets, status and logs (default: KEYS_DIR/run)"
    )
    run.add_argument(
        "--ramp-rate",
        type=_non_negative_float,
        default=0.0,
        help="minions started per second, 0 = no limit (default: 0)",
    )
    run.add_argument(
        "--auth-concurrency",
        type=_positive_int,
        default=DEFAULT_AUTH_CONCURRENCY,
        help="sign-ins in flight per process (default: %(default)s)",
    )
    timing = run.add_argument_group("timing model")
    timing.add_argument(
        "--latency",
        type=_latency,
        default=LatencySpec(),
        help="latency of every function: SECONDS or LOW-HIGH (default: 0)",
    )
    timing.add_argument(
        "--function-latency",
        action="append",
        default=[],
        metavar="FUN=LATENCY",
        help="latency of one function, repeatable (e.g. pkg.list_pkgs=0.5-2)",
    )
    timing.add_argument(
        "--state-duration",
        type=_latency,
        default=TimingModel().state_duration,
        help="duration of a state run (default: 1-3)",
    )
    timing.add_argument(
        "--slowdown",
        type=_positive_float,
        default=1.0,
        help="multiply all latencies (default: 1)",
    )
    timing.add_argument(
        "--max-concurrent-jobs",
        type=_non_negative_int,
        default=0,
        help="jobs a minion runs at once, more wait; 0 = unlimited (default: 0)",
    )
    timing.add_argument(
        "--exempt-functions",
        default=",".join(sorted(DEFAULT_EXEMPT_FUNCTIONS)),
        help="functions that never wait for a job slot (default: %(default)s)",
    )
    behaviour = run.add_argument_group("behaviour")
    behaviour.add_argument(
        "--replay",
        dest="replay_file",
        help="replay file with recorded returns of a real minion",
    )
    behaviour.add_argument(
        "--replay-first",
        action="store_true",
        help="prefer replayed returns over simulated ones",
    )
    behaviour.add_argument(
        "--no-startup-pillar",
        dest="startup_pillar",
        action="store_false",
        help="do not fetch the pillar when a minion starts",
    )
    behaviour.add_argument(
        "--state-count",
        type=_positive_int,
        default=DEFAULT_STATE_COUNT,
        help="states in a simulated state run (default: %(default)s)",
    )
    behaviour.add_argument(
        "--package-count",
        type=_positive_int,
        default=DEFAULT_PACKAGE_COUNT,
        help="packages per minion (default: %(default)s)",
    )
    behaviour.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=DEFAULT_REQUEST_TIMEOUT,
        help="seconds per request to the master (default: %(default)s)",
    )
    behaviour.add_argument(
        "--request-tries",
        type=_positive_int,
        default=DEFAULT_REQUEST_TRIES,
        help="tries per request (default: %(default)s)",
    )
    behaviour.add_argument(
        "--seed",
        type=int,
        help="seed for latencies and package changes (default: random)",
    )
    control = run.add_argument_group("run control")
    control.add_argument(
        "--duration",
        type=_non_negative_float,
        default=0.0,
        help="stop after SECONDS, 0 = run until signalled (default: 0)",
    )
    control.add_argument(
        "--status-interval",
        type=_positive_float,
        default=DEFAULT_STATUS_INTERVAL,
        help="seconds between status file updates (default: %(default)s)",
    )
    control.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="warning",
        help="worker log level (default: %(default)s)",
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

    keys = sub.add_parser("keys", help="generate (and optionally seed) minion keys")
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
        type=_positive_int,
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
    slowdown.add_argument("factor", type=_positive_float)

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
    record.add_argument("--timeout", type=_positive_int, default=60)
    record.add_argument(
        "calls",
        nargs="+",
        metavar="CALL",
        help='function and arguments, e.g. "network.interfaces" or "cmd.run uptime"',
    )

    worker = sub.add_parser("worker")  # internal: started by the supervisor
    worker.add_argument("--run-dir", required=True)
    worker.add_argument("--index", type=_non_negative_int, required=True)
    return parser


def config_from_args(args: argparse.Namespace) -> FleetConfig:
    """Turn parsed ``run`` arguments into a :class:`FleetConfig` (raises ConfigError)."""
    host, port = parse_master(args.master)
    timing = TimingModel(
        default_latency=args.latency,
        per_function=parse_function_latencies(args.function_latency),
        state_duration=args.state_duration,
        slowdown=args.slowdown,
        max_concurrent_jobs=args.max_concurrent_jobs,
        exempt_functions=frozenset(
            f.strip() for f in args.exempt_functions.split(",") if f.strip()
        ),
    )
    return FleetConfig(
        master_host=host,
        ret_port=port or DEFAULT_RET_PORT,
        publish_port=args.publish_port,
        transport=args.transport,
        count=args.count,
        processes=args.processes,
        prefix=args.prefix,
        start_index=args.start_index,
        id_width=args.id_width,
        keys_dir=args.keys_dir,
        run_dir=args.run_dir,
        keysize=args.keysize,
        ramp_rate=args.ramp_rate,
        auth_concurrency=args.auth_concurrency,
        timing=timing,
        replay_file=args.replay_file,
        replay_first=args.replay_first,
        startup_pillar=args.startup_pillar,
        state_count=args.state_count,
        package_count=args.package_count,
        request_timeout=args.request_timeout,
        request_tries=args.request_tries,
        status_interval=args.status_interval,
        log_level=args.log_level,
        seed=args.seed,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from evil_minions.supervisor import FleetSupervisor

    cfg = config_from_args(args)
    return FleetSupervisor(
        cfg, seed_master_pki=args.seed_master, duration=args.duration
    ).run()


def _cmd_keys(args: argparse.Namespace) -> int:
    from evil_minions import keys

    ids = minion_ids(args.prefix, args.count, args.start_index, args.id_width)

    def progress(done: int, total: int) -> None:
        print(
            f"\rkeys: {done}/{total} ready",
            end="\n" if done == total else "",
            file=sys.stderr,
            flush=True,
        )

    keys.ensure_keys(args.keys_dir, ids, progress=progress, keysize=args.keysize)
    if args.seed_master:
        written = keys.seed_master(args.keys_dir, args.seed_master, ids)
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
