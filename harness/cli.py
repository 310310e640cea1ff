"""``python -m harness``: bring a stack up, look at it, restart a part, take it down.

Every error a user can cause ends in one ``error:`` line (or a short block
with a log tail) and exit code 2; Ctrl-C or SIGTERM stops what was started and
exits 130 (see :mod:`harness.entrypoint`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import argtypes
from harness.entrypoint import run_harness_cli
from harness.errors import HarnessError
from harness.saltcmd import SALT_COMMANDS

if TYPE_CHECKING:
    # imported lazily at run time: `--help` and usage errors answer before Salt loads
    from harness.postgres import ConnectionInfo
    from harness.ratelimit import RateLimiting
    from harness.stack import Stack, StackSettings, StackState

#: the stack's root unless --root or $SALTFLEET_STACK_ROOT says otherwise
DEFAULT_ROOT = Path(".saltfleet") / "stack"
ROOT_ENV = "SALTFLEET_STACK_ROOT"
#: the command that runs this CLI from the README's set-up, for hints and usage
HARNESS = "nox -s harness --"


def default_root() -> Path:
    """The stack's root: ``$SALTFLEET_STACK_ROOT`` if set (tests use their
    own), else ``.saltfleet/stack``."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)


def _add_root(parser: argparse.ArgumentParser) -> None:
    root = default_root()
    parser.add_argument(
        "--root",
        type=Path,
        default=root,
        help=f"the stack's state and data (default {root}; ${ROOT_ENV} sets it)",
    )


def add_stack_options(parser: argparse.ArgumentParser) -> None:
    """The options of what a stack starts (database, ports, workers, minions):
    ``up``'s and the tour's."""
    parser.add_argument(
        "--dsn",
        help="use this external PostgreSQL (libpq DSN or URI) instead of the "
        "embedded one; default: $SALTFLEET_PG_DSN",
    )
    parser.add_argument(
        "--pg-port", type=argtypes.port, help="embedded PostgreSQL port"
    )
    parser.add_argument(
        "--publish-port", type=argtypes.port, help="master publish port"
    )
    parser.add_argument(
        "--ret-port", type=argtypes.port, help="master ret (request) port"
    )
    parser.add_argument(
        "--worker-threads",
        type=argtypes.positive,
        default=4,
        help="master MWorkers (default 4)",
    )
    parser.add_argument(
        "--no-minion", action="store_true", help="do not start the real salt-minion"
    )
    parser.add_argument(
        "--minions",
        type=argtypes.non_negative,
        default=0,
        help="simulated minions to start (evil_minions); default 0",
    )


def _add_capability_options(parser: argparse.ArgumentParser) -> None:
    """What ``up`` can switch on beyond the plain stack."""
    parser.add_argument(
        "--ext-pillar",
        choices=["db"],
        help="db: pillars from PostgreSQL through the patched postgres ext_pillar "
        "(salt_pillar_rows()), with example rows for every minion at each scope",
    )
    parser.add_argument(
        "--rate-limiting",
        action="store_true",
        help="turn on the master's rate limiting (Salt's defaults unless the "
        "options below say otherwise)",
    )
    parser.add_argument("--max-master-jobs", type=argtypes.positive, metavar="N")
    parser.add_argument("--max-minion-jobs", type=argtypes.positive, metavar="N")
    parser.add_argument("--max-queue", type=argtypes.positive, metavar="N")
    parser.add_argument(
        "--slices",
        action="store_true",
        help="publish big jobs in slices under one jid as returns free capacity "
        "(rate_limiting:slices)",
    )
    parser.add_argument(
        "--slice-min-targets",
        type=argtypes.positive,
        metavar="N",
        help="smallest slice (slices:min_targets; implies --slices)",
    )
    parser.add_argument(
        "--slice-backlog",
        type=argtypes.seconds,
        metavar="SECONDS",
        help="size the budget of returns in flight from the measured return rate "
        "times SECONDS (slices:backlog; implies --slices)",
    )
    parser.add_argument(
        "--slice-target-delay",
        type=argtypes.seconds,
        metavar="SECONDS",
        help="size the budget for returns waiting SECONDS (slices:target_delay, "
        "Salt's default 2); 0: null, a fixed budget of max_master_jobs (implies "
        "--slices)",
    )
    parser.add_argument(
        "--slice-max-rate",
        type=argtypes.positive_number,
        metavar="N",
        help="slices go out to at most N minions a second, whatever the budget: "
        "the bound for an event consumer that must keep up (slices:max_rate; "
        "implies --slices)",
    )
    parser.add_argument(
        "--master-opts",
        type=Path,
        metavar="FILE",
        help="YAML mapping of extra master options (applied last)",
    )
    parser.add_argument(
        "--pkgstates",
        action="store_true",
        help="package states: the pkgstate runner, ext_pillar, master_tops and "
        "engine (saltext.pkgstate) on the stack's PostgreSQL",
    )
    parser.add_argument(
        "--api",
        action="store_true",
        help="also start salt-api (rest_cherrypy, no TLS) on loopback",
    )
    parser.add_argument(
        "--api-port", type=argtypes.port, help="salt-api port (implies --api)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m harness`` and all its sub-commands."""
    parser = argparse.ArgumentParser(prog=HARNESS, description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("up", help="start a stack and leave it running")
    _add_root(p)
    add_stack_options(p)
    _add_capability_options(p)
    p = sub.add_parser("status", help="show the recorded stack")
    _add_root(p)
    p = sub.add_parser(
        "down",
        help="stop the recorded stack; its data stays for the next `up` unless --purge",
    )
    _add_root(p)
    p.add_argument(
        "--purge",
        action="store_true",
        help="also remove the stack's data (database, keys, job cache, logs): "
        "the next `up` starts fresh",
    )

    p = sub.add_parser(
        "restart",
        help="restart a part of the running stack, recording its new pid",
    )
    p.add_argument("part", choices=["master"], help="what to restart")
    _add_root(p)
    p.add_argument(
        "--master-opts",
        type=Path,
        metavar="FILE",
        help="YAML mapping of master options to set before the restart",
    )
    for command in SALT_COMMANDS:
        p = sub.add_parser(
            command,
            help=f"run Salt's {command} against the running stack "
            f"({HARNESS} {command} [--root DIR] ARGS...)",
            add_help=False,
        )
    p = sub.add_parser(
        "sql", help="run one SQL statement on the running stack's PostgreSQL"
    )
    p.add_argument("statement", help='e.g. "SELECT count(*) FROM salt_pillar"')
    _add_root(p)

    pillar = sub.add_parser("pillar", help="pillars in PostgreSQL: generate, import")
    psub = pillar.add_subparsers(dest="pillar_command", required=True, metavar="ACTION")
    p = psub.add_parser(
        "generate", help="write a synthetic fleet's pillars as a file tree"
    )
    p.add_argument("tree", type=Path, help="directory to write (must not exist)")
    p.add_argument("--minions", type=argtypes.positive, default=1000)
    p.add_argument("--prefix", default="evil", help="minion ids are PREFIX-NNNN")
    p = psub.add_parser("import", help="import a pillar file tree into PostgreSQL")
    p.add_argument("tree", type=Path)
    p.add_argument(
        "--dsn",
        help="target database; default $SALTFLEET_PG_DSN or the stack in --root",
    )
    _add_root(p)
    p.add_argument(
        "--dry-run", action="store_true", help="show what would change, write nothing"
    )
    p.add_argument(
        "--no-verify", action="store_true", help="skip compiling every pillar both ways"
    )
    return parser


def stack_settings(args: argparse.Namespace, **extra: object) -> StackSettings:
    """The :class:`StackSettings` of :func:`add_stack_options`' options, plus ``extra``."""
    from harness.errors import simulator_errors
    from harness.fleet import FleetConfig
    from harness.stack import StackSettings

    with simulator_errors():
        fleet = FleetConfig(count=args.minions) if args.minions else None
    return StackSettings.from_env(
        dsn=args.dsn or os.environ.get("SALTFLEET_PG_DSN") or None,
        pg_port=args.pg_port,
        publish_port=args.publish_port,
        ret_port=args.ret_port,
        worker_threads=args.worker_threads,
        real_minion=not args.no_minion,
        fleet=fleet,
        **extra,
    )


def cmd_up(args: argparse.Namespace) -> int:
    """``up``: start a stack in ``--root`` and leave it running."""
    from harness.stack import STACK_PARTS, STATE_FILE, Stack, StackState

    root = args.root.resolve()
    if (root / STATE_FILE).exists():
        state = StackState.load(root)
        if any(p.process() is not None for p in state.processes):
            raise HarnessError(
                f"a stack is already running in {root}; run `{HARNESS} down` first"
            )
        state.stop()
    stack = Stack(stack_settings(args, root=root, **_capabilities(args)), say=_say)
    reused = any((root / part).exists() for part in STACK_PARTS)
    print(
        f"starting stack in {root}"
        + (" (its data from the last `up` is reused)" if reused else "")
        + " ...",
        flush=True,
    )
    stack.start()
    if args.ext_pillar == "db":
        _say("pillars: storing example rows, then every minion refreshes ...")
    notes = _load_example_pillars(stack) if args.ext_pillar == "db" else []
    credentials = stack.api.credentials if stack.api is not None else None
    state = stack.detach()
    print(_describe(state))
    for note in notes:
        print(note)
    print(
        "\nuse Salt against it: nox -s harness -- salt '*' test.ping"
        "   (also salt-run, salt-key, salt-call)"
    )
    if credentials is not None:
        print(
            f"salt-api: {credentials.url}  user {credentials.user}  "
            f"password {credentials.password}  eauth {credentials.eauth}\n"
            f"  curl -sS {credentials.url}/login -H 'Accept: application/json' "
            f"-d username={credentials.user} -d password={credentials.password} "
            f"-d eauth={credentials.eauth}"
        )
    return 0


def _capabilities(args: argparse.Namespace) -> dict[str, object]:
    """StackSettings fields for ``up``'s --ext-pillar, --rate-limiting,
    --master-opts, --api and --pkgstates; rate-limit limits without --rate-limiting are
    refused."""
    from harness.pillar.variants import db_ext_pillar
    from harness.restart import load_options
    from harness.saltapi import ApiSettings

    options: dict[str, object] = {}
    limiter = _rate_limiting(args)
    if limiter is not None:
        options.update(limiter.master_options(args.worker_threads))
    if args.master_opts:
        options.update(load_options(args.master_opts))
    extra: dict[str, object] = {"master_opts": options}
    if args.ext_pillar == "db":
        extra["ext_pillar"] = db_ext_pillar()
    if args.api or args.api_port is not None:
        extra["api"] = ApiSettings(port=args.api_port)
    if args.pkgstates:
        extra["pkgstates"] = True
    return extra


#: ``up``'s flags that set a ``rate_limiting`` setting, by RateLimiting field
_LIMIT_FLAGS = (
    "max_master_jobs",
    "max_minion_jobs",
    "max_queue",
    "slice_min_targets",
    "slice_backlog",
    "slice_target_delay",
    "slice_max_rate",
)


def _rate_limiting(args: argparse.Namespace) -> RateLimiting | None:
    """``up``'s limiter: None without --rate-limiting (its limits alone are
    refused); Salt's defaults where no flag says otherwise."""
    from harness.ratelimit import RateLimiting

    given = [name for name in _LIMIT_FLAGS if getattr(args, name) is not None]
    given += ["slices"] if args.slices else []
    if given and not args.rate_limiting:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        verb = "needs" if len(given) == 1 else "need"
        raise HarnessError(f"{flags} {verb} --rate-limiting")
    if args.slice_backlog == 0:
        raise HarnessError("--slice-backlog must be more than 0 seconds")
    if not args.rate_limiting:
        return None
    salt = RateLimiting()
    # the limits are whole numbers >= 1 (argparse), so "or" only fills in None
    return RateLimiting(
        max_master_jobs=args.max_master_jobs or salt.max_master_jobs,
        max_minion_jobs=args.max_minion_jobs or salt.max_minion_jobs,
        max_queue=args.max_queue or salt.max_queue,
        slices=args.slices
        or args.slice_min_targets is not None
        or args.slice_backlog is not None
        or args.slice_target_delay is not None
        or args.slice_max_rate is not None,
        slice_min_targets=args.slice_min_targets,
        slice_backlog=args.slice_backlog,
        slice_target_delay=args.slice_target_delay,
        slice_max_rate=args.slice_max_rate,
    )


def _load_example_pillars(stack: Stack) -> list[str]:
    """Store example pillar rows for every minion of ``stack`` and have the
    minions fetch them; return what to tell the user."""
    from harness.pillar.generate import FleetShape, generate
    from harness.pillar.store import store_fleet

    assert stack.pg is not None, "the stack is started"
    ids = ([stack.minion.minion_id] if stack.minion else []) + (
        list(stack.fleet.ids) if stack.fleet else []
    )
    if not ids:
        return ["pillars: no minions, no example rows loaded"]
    pillars = generate(ids, FleetShape(orgs=2, groups_per_org=3))
    store_fleet(stack.pg, pillars)
    stack.cmd("*", "saltutil.refresh_pillar", timeout=120)
    return [
        f"pillars: example rows for {len(ids)} minions in {len(pillars.orgs)} orgs "
        f"and {len(pillars.groups)} groups ({len(pillars.rows)} rows); read one with",
        f"  nox -s harness -- salt {ids[0]} pillar.items unmask=True",
    ]


def _describe(state: StackState) -> str:
    lines = [
        f"stack in {state.root}",
        f"  master: publish {state.publish_port}, ret {state.ret_port}",
    ]
    lines.append(f"  postgres: {state.postgres_dsn}")
    if state.api_url:
        lines.append(f"  salt-api: {state.api_url}")
    for rec in state.processes:
        alive = "running" if rec.process() is not None else "NOT RUNNING"
        lines.append(f"  {rec.name:<28} pid {rec.pid:<8} {alive}  (log {rec.log_path})")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    """``status``: describe the recorded stack; exit 1 if a process is gone."""
    from harness.restart import adopt_restarted_master
    from harness.stack import StackState

    state = StackState.load(args.root.resolve())
    note = adopt_restarted_master(state)
    if note:
        print(f"note: {note}")
    print(_describe(state))
    return 0 if all(p.process() is not None for p in state.processes) else 1


def cmd_down(args: argparse.Namespace) -> int:
    """``down``: stop every process of the recorded stack; ``--purge`` also
    removes its data."""
    from harness.restart import adopt_restarted_master
    from harness.stack import STATE_FILE, StackState, purge_root

    root = args.root.resolve()
    if args.purge and not (root / STATE_FILE).exists():
        # nothing runs: the data of an earlier stack can still go
        purge_root(root)
        print(f"removed the stack's data in {root}")
        return 0
    state = StackState.load(root)
    adopt_restarted_master(state)
    running = [p.name for p in state.processes if p.process() is not None]
    gone = [p.name for p in state.processes if p.name not in running]
    state.stop(say=_say)
    if not running:
        print(f"nothing was running in {state.root}; its record is removed")
    else:
        print(f"stopped {len(running)} processes of the stack in {state.root}")
    if running and gone:
        print(f"  (already gone: {', '.join(gone)})")
    if args.purge:
        purge_root(root)
        print(f"removed the stack's data in {root}: the next `up` starts fresh")
    else:
        print(
            f"its data (database, keys, job cache, logs) stays in {root} for the "
            f"next `up`; `{HARNESS} down --purge` removes it"
        )
    return 0


def _say(line: str) -> None:
    print(line, flush=True)


def cmd_restart(args: argparse.Namespace) -> int:
    """``restart master``: stop the master by pid, start it again (with new
    options if given) and record the new pid for ``status`` and ``down``."""
    from harness.restart import load_options, restart_master
    from harness.stack import StackState

    options = load_options(args.master_opts) if args.master_opts else None
    state = StackState.load(args.root.resolve())
    # Stopping, starting and the minions' signing in again take 20 s or more.
    print(
        "restarting salt-master: stop, start, then wait until every accepted "
        "minion answers a ping again ...",
        flush=True,
    )
    pid, silent = restart_master(state, options, say=_say)
    changed = f" with {', '.join(sorted(options))} set" if options else ""
    print(f"salt-master restarted{changed}: pid {pid}")
    if silent:
        print(f"warning: {len(silent)} minions do not answer yet: {', '.join(silent)}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    """``sql``: one statement in its own transaction on the stack's database;
    rows are printed tab-separated, an error is one line and exit 2."""
    import psycopg2

    from harness.postgres import connection_from_dsn
    from harness.stack import StackState

    info = connection_from_dsn(StackState.load(args.root.resolve()).postgres_dsn)
    try:
        conn = info.connect()
    except psycopg2.Error as exc:
        raise HarnessError(f"cannot reach the stack's PostgreSQL: {exc}") from None
    try:
        with conn, conn.cursor() as cur:
            cur.execute(args.statement)
            rows = cur.fetchall() if cur.description else []
            done = cur.statusmessage
    except psycopg2.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc
        raise HarnessError(f"SQL failed, nothing was changed: {first}") from None
    finally:
        conn.close()
    for row in rows:
        print("\t".join("" if v is None else _sql_text(v) for v in row))
    print(done, file=sys.stderr)
    return 0


def _sql_text(value: object) -> str:
    import json

    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def cmd_pillar(args: argparse.Namespace) -> int:
    """``pillar generate`` / ``pillar import``: synthetic pillars, files to database."""
    from harness.fleet import minion_ids
    from harness.pillar import generate, migrate
    from harness.pillar.files import write_tree

    if args.pillar_command == "generate":
        if args.tree.exists():
            raise HarnessError(f"{args.tree} exists; choose a new directory")
        ids = minion_ids(args.prefix, args.minions)
        write_tree(generate.generate(ids), args.tree)
        print(f"wrote pillars of {len(ids)} minions to {args.tree}")
        return 0
    info = _pillar_database(args)
    import psycopg2

    try:
        fleet, changes = migrate.import_tree(info, args.tree, dry_run=args.dry_run)
    except psycopg2.Error as exc:
        raise HarnessError(
            f"import failed and nothing was written: {str(exc).strip()}"
        ) from None
    print(changes.render())
    if args.dry_run:
        print("dry run: nothing was written")
        return 0
    if args.no_verify:
        return 0
    differences = migrate.verify(info, args.tree, fleet, progress=migrate.progress_line)
    for diff in differences[:20]:
        print(
            f"DIFFERENT {diff.minion_id}:\n  files:    {diff.files}\n  database: {diff.database}"
        )
    print(
        f"{len(fleet.minions) - len(differences)} of {len(fleet.minions)} minions compile "
        "to the same pillar from files and from the database"
    )
    return 1 if differences else 0


def _pillar_database(args: argparse.Namespace) -> ConnectionInfo:
    from harness.postgres import check_reachable, connection_from_dsn
    from harness.stack import STATE_FILE, StackState

    dsn = args.dsn or os.environ.get("SALTFLEET_PG_DSN")
    if not dsn:
        if not (args.root / STATE_FILE).exists():
            raise HarnessError(
                "no database given: pass --dsn, set SALTFLEET_PG_DSN, or start a stack "
                f"with `{HARNESS} up`"
            )
        dsn = StackState.load(args.root.resolve()).postgres_dsn
    info = connection_from_dsn(dsn)
    check_reachable(info)
    from harness import migrations

    migrations.apply(info)
    return info


def _salt_command(command: str, words: list[str]) -> int:
    """``salt`` / ``salt-run`` / ``salt-key`` / ``salt-call``: Salt's own command
    against the running stack; ``--root DIR`` first picks another stack."""
    from harness import saltcmd

    root = default_root()
    if words[:1] == ["--root"]:
        if len(words) < 2:
            raise HarnessError(f"{command}: --root needs a directory")
        root, words = Path(words[1]), words[2:]
    return saltcmd.run_salt(command, root.resolve(), words)


COMMANDS = {
    "up": cmd_up,
    "status": cmd_status,
    "down": cmd_down,
    "restart": cmd_restart,
    "sql": cmd_sql,
    "pillar": cmd_pillar,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m harness``; returns the exit code."""
    return run_harness_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0] in SALT_COMMANDS:
        # Salt parses its own options: pass everything through untouched.
        return _salt_command(words[0], words[1:])
    args = build_parser().parse_args(words)
    return COMMANDS[args.command](args)
