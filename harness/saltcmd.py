"""Salt's own commands against a stack that ``python -m harness up`` left running.

``python -m harness salt '*' test.ping`` runs the patched Salt's ``salt``
console script with the stack's master configuration (``-c``), so nobody has
to activate a virtualenv or know where the configuration lives; the same for
``salt-run`` and ``salt-key``. ``salt-call`` uses the real salt-minion's
configuration. The command's exit code is passed through.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError

#: the commands that run against the master's configuration
MASTER_COMMANDS = ("salt", "salt-run", "salt-key")
#: every command ``python -m harness`` passes through
SALT_COMMANDS = (*MASTER_COMMANDS, "salt-call")
#: where a stack puts its real salt-minion's configuration, below its root
MINION_CONF = Path("minion") / "etc" / "salt"


def salt_argv(command: str, root: Path, args: Sequence[str]) -> list[str]:
    """The command line of ``command`` with ``args`` against the stack in ``root``."""
    from harness.master import salt_script
    from harness.stack import StackState

    if command not in SALT_COMMANDS:
        raise HarnessError(
            f"unknown Salt command {command!r}: choose from {', '.join(SALT_COMMANDS)}"
        )
    state = StackState.load(root)
    if command in MASTER_COMMANDS:
        conf_dir = Path(state.master_conf_dir)
    else:
        conf_dir = Path(state.root) / MINION_CONF
        if not (conf_dir / "minion").is_file():
            raise HarnessError(
                f"the stack in {state.root} has no real salt-minion (it was started "
                "with --no-minion): salt-call needs one"
            )
    return [salt_script(command), "-c", str(conf_dir), *args]


def run_salt(command: str, root: Path, args: Sequence[str]) -> int:
    """Run ``command`` against the stack in ``root``; return its exit code."""
    argv = salt_argv(command, root, args)
    try:
        return subprocess.run(argv, check=False).returncode
    except OSError as exc:
        raise HarnessError(f"cannot run {argv[0]}: {exc}") from None
