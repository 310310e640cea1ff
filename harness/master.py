"""A salt-master from the patched install, in a root directory of its own."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.events import EventListener
from harness.ports import LOOPBACK, is_listening
from harness.postgres import ConnectionInfo
from harness.processes import ManagedProcess

MASTER_ID = "saltfleet-master"
START_TIMEOUT = 120.0
KEY_SIZE = 2048


def salt_script(name: str) -> str:
    """The console script ``name`` of the Salt installed beside this Python."""
    return str(Path(sys.executable).parent / name)


@dataclass
class MasterSettings:
    """Everything the harness decides about the master it renders."""

    root: Path
    publish_port: int
    ret_port: int
    worker_threads: int = 4
    postgres: ConnectionInfo | None = None
    ext_pillar: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def conf_dir(self) -> Path:
        return self.root / "etc" / "salt"

    @property
    def conf_file(self) -> Path:
        return self.conf_dir / "master"

    @property
    def pki_dir(self) -> Path:
        return self.root / "pki" / "master"

    @property
    def log_file(self) -> Path:
        return self.root / "log" / "master.log"

    @property
    def file_root(self) -> Path:
        return self.root / "srv" / "salt"

    @property
    def pillar_root(self) -> Path:
        return self.root / "srv" / "pillar"


def render_config(
    settings: MasterSettings, listener: EventListener | None
) -> dict[str, Any]:
    """The master configuration as a dict (written as YAML by :func:`write_config`)."""
    root = settings.root
    opts: dict[str, Any] = {
        "id": MASTER_ID,
        "root_dir": str(root),
        "user": getpass.getuser(),
        "interface": LOOPBACK,
        "publish_port": settings.publish_port,
        "ret_port": settings.ret_port,
        "worker_threads": settings.worker_threads,
        "pki_dir": str(settings.pki_dir),
        "cachedir": str(root / "cache" / "master"),
        "sock_dir": str(root / "run" / "master"),
        "pidfile": str(root / "run" / "salt-master.pid"),
        "log_file": str(settings.log_file),
        "key_logfile": str(root / "log" / "key.log"),
        "log_level_logfile": "info",
        "keysize": KEY_SIZE,
        "open_mode": False,
        "auto_accept": False,
        "file_roots": {"base": [str(settings.file_root)]},
        "pillar_roots": {"base": [str(settings.pillar_root)]},
        "enable_fqdns_grains": False,
    }
    if listener is not None:
        opts.update(listener.engine_config())
    if settings.postgres is not None:
        opts["postgres"] = settings.postgres.salt_options()
    if settings.ext_pillar:
        opts["ext_pillar"] = settings.ext_pillar
    opts.update(settings.extra)
    return opts


def write_config(settings: MasterSettings, listener: EventListener | None) -> Path:
    for path in (
        settings.conf_dir,
        settings.pki_dir / "minions",
        settings.file_root,
        settings.pillar_root,
    ):
        path.mkdir(parents=True, exist_ok=True)
    settings.conf_file.write_text(
        yaml.safe_dump(render_config(settings, listener), default_flow_style=False)
    )
    return settings.conf_file


def wait_for_start_event(
    process: ManagedProcess,
    listener: EventListener,
    tag: str,
    *,
    since: int,
    daemon_log: Path,
    timeout: float = START_TIMEOUT,
) -> None:
    """Wait for a daemon's start event; fail with its log tails if none comes."""
    if listener.wait_for(tag, timeout=timeout, since=since, alive=process.running):
        return
    if not process.running():
        raise process.fail(
            f"exited with code {process.returncode()} before {tag}", daemon_log
        )
    raise process.fail(f"sent no {tag} event within {timeout:.0f}s", daemon_log)


class Master:
    """One salt-master process, confirmed up by its start event."""

    def __init__(self, settings: MasterSettings, listener: EventListener) -> None:
        self.settings = settings
        self.listener = listener
        self.process = ManagedProcess(
            "salt-master",
            [salt_script("salt-master"), "-c", str(settings.conf_dir), "-l", "warning"],
            settings.root / "log" / "salt-master.stdout.log",
        )

    def start(self) -> None:
        write_config(self.settings, self.listener)
        since = self.listener.mark()
        self.process.start()
        wait_for_start_event(
            self.process,
            self.listener,
            f"salt/master/{MASTER_ID}/start",
            since=since,
            daemon_log=self.settings.log_file,
        )
        self.process.wait_until(
            lambda: is_listening(self.settings.ret_port),
            timeout=30,
            what=f"listening on ret_port {self.settings.ret_port}",
        )
        self.process.remember_descendants()

    def stop(self) -> None:
        self.process.stop()

    def run_cli(
        self, script: str, *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the Salt CLI ``script`` (``salt``, ``salt-run`` ...) against this master.

        Warnings are silenced (they would mix with the output tests read);
        PATH keeps the system's directories because loading grains runs
        commands such as ``dpkg``.
        """
        return subprocess.run(
            [salt_script(script), "-c", str(self.settings.conf_dir), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            env={
                "PYTHONWARNINGS": "ignore",
                "PATH": f"{Path(sys.executable).parent}:"
                f"{os.environ.get('PATH', '/usr/bin:/bin')}",
            },
        )

    def accept_key(self, minion_id: str, public_pem: str) -> None:
        """Pre-seed a minion's public key as accepted (no acceptance wait)."""
        (self.settings.pki_dir / "minions" / minion_id).write_text(public_pem)
