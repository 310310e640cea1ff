"""The fleet section: the real minion and every simulated one answer."""

from __future__ import annotations

import time

from tour.context import TourContext
from tour.registry import Finding, Registry, ScenarioFailed

SECTION = "Fleet"
PING_TIMEOUT = 120


def every_minion_answers(ctx: TourContext) -> Finding:
    """``test.ping`` to ``*`` returns True from every minion, real and simulated."""
    expected = ctx.all_minions()
    started = time.monotonic()
    returns = ctx.stack.cmd("*", "test.ping", timeout=PING_TIMEOUT)
    seconds = time.monotonic() - started
    missing = sorted(set(expected) - set(returns))
    wrong = sorted(m for m, value in returns.items() if value is not True)
    if missing or wrong:
        raise ScenarioFailed(
            f"test.ping to '*': {len(missing)} of {len(expected)} minions did not "
            f"return (first: {', '.join(missing[:5]) or '-'}), "
            f"{len(wrong)} returned something else than True"
        )
    status = ctx.stack.fleet.status() if ctx.stack.fleet else None
    body = [
        f"`salt '*' test.ping` returned True from all {len(expected)} minions "
        f"in {seconds:.1f}s ({'one real salt-minion and ' if ctx.real_minion else ''}"
        f"{len(ctx.fleet_ids)} simulated ones)."
    ]
    if status:
        rss_kb = status.get("rss_kb", 0)
        rss = (rss_kb if isinstance(rss_kb, int) else 0) / 1024
        body.append(
            f"The simulated minions run in {status.get('processes')} process(es) "
            f"using {rss:.0f} MiB RSS, each with its own key and a real "
            "`_pillar` request at start-up."
        )
    return Finding(f"{len(expected)} of {len(expected)} minions answered", body)


def register(registry: Registry) -> None:
    """Add the fleet section's scenarios to ``registry``."""
    registry.add_section(
        SECTION,
        {
            "every minion answers test.ping": every_minion_answers,
        },
    )
