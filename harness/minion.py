"""One real salt-minion from the patched install, with a pre-seeded key."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Any

import yaml

from harness.events import EventListener
from harness.master import KEY_SIZE, Master, salt_script, wait_for_start_event
from harness.ports import LOOPBACK
from harness.processes import ManagedProcess


def generate_keypair(pki_dir: Path, name: str = "minion") -> str:
    """Write ``<name>.pem``/``<name>.pub`` into ``pki_dir`` once; return the public PEM."""
    import salt.crypt

    pub = pki_dir / f"{name}.pub"
    if not pub.exists():
        pki_dir.mkdir(parents=True, exist_ok=True)
        private_pem, public_pem = salt.crypt.gen_keys(KEY_SIZE)
        pem = pki_dir / f"{name}.pem"
        pem.write_text(private_pem)
        os.chmod(pem, 0o600)
        pub.write_text(public_pem)
    return pub.read_text()


class SaltMinion:
    """A real salt-minion, confirmed up by ``salt/minion/<id>/start``."""

    def __init__(
        self, root: Path, minion_id: str, master: Master, listener: EventListener
    ) -> None:
        self.root = root
        self.minion_id = minion_id
        self.master = master
        self.listener = listener
        self.conf_dir = root / "etc" / "salt"
        self.pki_dir = root / "pki" / "minion"
        self.log_file = root / "log" / "minion.log"
        self.process = ManagedProcess(
            f"salt-minion {minion_id}",
            [salt_script("salt-minion"), "-c", str(self.conf_dir), "-l", "warning"],
            root / "log" / "salt-minion.stdout.log",
        )

    def render_config(self) -> dict[str, Any]:
        """The minion config file's content, pointed at the stack's master."""
        settings = self.master.settings
        return {
            "id": self.minion_id,
            "root_dir": str(self.root),
            "user": getpass.getuser(),
            "master": LOOPBACK,
            "master_port": settings.ret_port,
            "publish_port": settings.publish_port,
            "pki_dir": str(self.pki_dir),
            "cachedir": str(self.root / "cache" / "minion"),
            "sock_dir": str(self.root / "run" / "minion"),
            "pidfile": str(self.root / "run" / "salt-minion.pid"),
            "log_file": str(self.log_file),
            "log_level_logfile": "info",
            "acceptance_wait_time": 1,
            "random_reauth_delay": 0,
            "enable_fqdns_grains": False,
            "file_client": "remote",
        }

    def start(self) -> None:
        """Write the config, pre-accept the key, start; return on the start event."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "minion").write_text(
            yaml.safe_dump(self.render_config(), default_flow_style=False)
        )
        self.master.accept_key(self.minion_id, generate_keypair(self.pki_dir))
        since = self.listener.mark()
        self.process.start()
        wait_for_start_event(
            self.process,
            self.listener,
            f"salt/minion/{self.minion_id}/start",
            since=since,
            daemon_log=self.log_file,
        )
        self.process.remember_descendants()

    def stop(self) -> None:
        """Stop the salt-minion and what it started."""
        self.process.stop()
