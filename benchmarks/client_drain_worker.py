"""One variant's pings of the ``client-drain`` benchmark, in its own process.

``python -m benchmarks.client_drain_worker CONFIG RESULT``: the Salt tree
under test comes first on ``PYTHONPATH`` (pristine 3008.3 or the series),
so this module imports Salt only inside :func:`measure`. One LocalClient
(the client of ``salt``, salt-api's ``local`` and runners) runs the pings
one after the other against the master named by CONFIG and writes when
each was published and when its return reached the client to RESULT.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DrainConfig:
    """Whom to ping, with what, how often."""

    conf_file: str
    target: str
    delay: float  # seconds the minion takes to answer (test.sleep)
    pings: int
    timeout: int


@dataclass
class Pinged:
    """One ping: its jid, when it was sent and when its return reached the
    client (wall clock), None if it never did."""

    jid: str
    began: float
    answered: float | None = None


@dataclass
class DrainResult:
    """The worker's pings, and the Salt it imported."""

    salt_file: str
    pings: list[Pinged] = field(default_factory=list)


def measure(config: DrainConfig) -> DrainResult:
    """Ping ``config.target`` ``config.pings`` times through one LocalClient."""
    import salt.client
    import salt.config

    import salt

    opts = salt.config.client_config(config.conf_file)
    result = DrainResult(salt_file=str(salt.__file__))
    with salt.client.LocalClient(mopts=opts) as client:
        for _ in range(config.pings):
            ping = Pinged("", time.time())
            for item in client.cmd_iter(
                [config.target],
                "test.sleep",
                [config.delay],
                tgt_type="list",
                timeout=config.timeout,
                yield_pub_data=True,
            ):
                if item and "jid" in item and "minions" in item:
                    ping.jid = str(item["jid"])
                elif item and config.target in item and ping.answered is None:
                    ping.answered = time.time()
            result.pings.append(ping)
    return result


def main(argv: list[str]) -> int:
    """Run one worker: ``CONFIG RESULT`` (JSON files)."""
    config = DrainConfig(**json.loads(Path(argv[0]).read_text()))
    result: dict[str, Any] = asdict(measure(config))
    Path(argv[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
