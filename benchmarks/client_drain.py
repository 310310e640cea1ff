"""``client-drain`` benchmark: how far a LocalClient lags a busy master bus.

A master with two simulated minions, and beside it a thread of this process
that fires events of an unrelated tag onto the master's bus at a set rate:
they stand for the returns and events of a busy fleet, which a client
waiting for its own returns must read past. At each rate, a LocalClient of
each variant (pristine 3008.3 and the series, each in a process of its own
with its Salt tree first on ``PYTHONPATH``: the client of ``salt``, of
salt-api's ``local`` and of runners) pings one minion with ``test.sleep
DELAY``, so that its return comes DELAY seconds after the publication, as
under load, one ping after the other. The master's forwarder engine hands
every bus event to the harness's listener, which stamps its arrival: when
the return reached the bus. The client's lag is when the return reached the
client minus when it reached the bus.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from benchmarks import report
from benchmarks.client_drain_worker import DrainConfig
from benchmarks.salt_trees import extract_pristine_and_series, rotated, run_in_tree
from harness.fleet import FleetConfig
from harness.stack import fleet_stack

if TYPE_CHECKING:
    from benchmarks.plain_options import ClientDrainOptions
    from harness.events import EventListener
    from harness.stack import Stack

NAME: Final = "client-drain"
#: seconds a ping waits for its return, as the storm's presence pings
TIMEOUT: Final = 10
#: the variants, in run order of the first run: (name, Salt tree)
VARIANTS: Final = (("pristine 3008.3", "pristine"), ("series", "series"))
MINIONS: Final = 2
#: the tag of the events that stand for a busy fleet's
NOISE_TAG: Final = "saltfleet/bench/noise"
#: bytes of padding in each of them: about a small job's return
NOISE_PAD: Final = 300
#: seconds of noise before the first ping of a cell
SETTLE_S: Final = 1.0


@dataclass
class Cell:
    """One variant at one noise rate, over the runs: each run's median."""

    variant: str
    rate: int
    fired_per_s: report.Runs = field(default_factory=report.Runs)
    client_s: report.Runs = field(default_factory=report.Runs)
    bus_s: report.Runs = field(default_factory=report.Runs)
    lag_s: report.Runs = field(default_factory=report.Runs)
    pings: int = 0
    answered: int = 0  # reached the client within TIMEOUT
    never_at_client: int = 0  # on the bus, but the client gave up unread
    never_on_bus: int = 0  # a return the listener never saw: a broken run


class Noise:
    """Events of :data:`NOISE_TAG` fired onto ``stack``'s master bus at
    ``rate`` a second from a thread, while the ``with`` block runs."""

    def __init__(self, stack: Stack, rate: int) -> None:
        import salt.config
        import salt.utils.event

        assert stack.master is not None
        opts = salt.config.client_config(str(stack.master.settings.conf_file))
        self._event = salt.utils.event.get_master_event(
            opts, opts["sock_dir"], listen=False
        )
        self.rate = rate
        self.fired = 0
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fire, name="noise", daemon=True)

    def _fire(self) -> None:
        started = time.monotonic()
        pad = "x" * NOISE_PAD
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.fired < due:
                self._event.fire_event({"n": self.fired, "pad": pad}, NOISE_TAG)
                self.fired += 1
            time.sleep(0.002)
        self.seconds = time.monotonic() - started

    def __enter__(self) -> Noise:
        if self.rate:
            self._thread.start()
        time.sleep(SETTLE_S)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self.rate:
            self._thread.join()
        self._event.destroy()

    @property
    def per_second(self) -> float:
        """The rate reached: events fired per second of noise."""
        return self.fired / self.seconds if self.seconds else 0.0


def return_on_bus(listener: EventListener, jid: str, since: int) -> float | None:
    """When the master fired the first return of ``jid`` onto its bus (its
    ``_stamp``; the listener's arrival without one), on the wall clock."""
    returns = listener.matching(f"salt/job/{jid}/ret/*", since=since)
    return returns[0].fired_at_or_received if returns else None


def measure_cell(
    cell: Cell,
    result: dict[str, Any],
    listener: EventListener,
    since: int,
    fired_per_s: float,
) -> str:
    """Add one run's pings (the worker's ``result``) to ``cell``; one line
    of progress."""
    client, bus, lag = [], [], []
    in_time = 0
    for ping in result["pings"]:
        cell.pings += 1
        on_bus = return_on_bus(listener, ping["jid"], since) if ping["jid"] else None
        answered = ping["answered"]
        if on_bus is None:
            cell.never_on_bus += 1
            continue
        bus.append(on_bus - ping["began"])
        if answered is None:
            # the client gave up without reading it: it reached the client
            # no sooner than the timeout, so it counts there, a lower bound
            cell.never_at_client += 1
            answered = ping["began"] + TIMEOUT
        elif answered - ping["began"] <= TIMEOUT:
            in_time += 1
        client.append(answered - ping["began"])
        lag.append(answered - on_bus)
    cell.answered += in_time
    cell.fired_per_s.append(fired_per_s)
    cell.client_s.append(report.median(client) if client else float("nan"))
    cell.bus_s.append(report.median(bus) if bus else float("nan"))
    cell.lag_s.append(report.median(lag) if lag else float("nan"))
    return (
        f"    {cell.variant} at {cell.rate}/s ({fired_per_s:.0f}/s fired): "
        f"on the bus after {cell.bus_s[-1]:.2f} s, at the client after "
        f"{cell.client_s[-1]:.2f} s, {in_time} of {len(result['pings'])} "
        f"within {TIMEOUT} s"
        + (f", {cell.never_at_client} never so far" if cell.never_at_client else "")
    )


def run(opts: ClientDrainOptions) -> Path:
    """Run the benchmark; return the report's path."""
    cells = {(v, r): Cell(v, r) for r in opts.rates for v, _ in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="saltfleet-client-drain-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        trees, commits = extract_pristine_and_series(work)
        fleet = FleetConfig(processes=1, startup_pillar=False)
        with fleet_stack(MINIONS, root=work / "stack", fleet=fleet) as stack:
            assert stack.master is not None and stack.fleet is not None
            assert stack.listener is not None
            stack.cmd("*", "test.ping", timeout=60)  # warm the master up
            config = DrainConfig(
                conf_file=str(stack.master.settings.conf_file),
                target=sorted(stack.fleet.ids)[0],
                delay=opts.delay,
                pings=opts.pings,
                timeout=TIMEOUT,
            )
            for run_no in range(opts.runs):
                for rate in opts.rates:
                    for variant, tree in rotated(VARIANTS, run_no):
                        print(
                            f"run {run_no + 1} of {opts.runs}: {variant}, "
                            f"{rate} events/s beside {opts.pings} pings",
                            flush=True,
                        )
                        with Noise(stack, rate) as noise:
                            since = stack.listener.mark()
                            result = run_in_tree(
                                "benchmarks.client_drain_worker",
                                asdict(config),
                                trees[tree],
                                work / f"{run_no}-{rate}-{tree}",
                            )
                        line = measure_cell(
                            cells[(variant, rate)],
                            result,
                            stack.listener,
                            since,
                            noise.per_second,
                        )
                        print(line, flush=True)
    return write_report(list(cells.values()), opts, commits=commits)


def _lag(seconds: float) -> str:
    """A lag to the hundredth; a lag of a few milliseconds below zero (the
    listener's clock against the client's, both this machine's) is 0.00,
    not -0.00."""
    text = f"{seconds:.2f}"
    return "0.00" if text == "-0.00" else text


def write_report(cells: list[Cell], opts: ClientDrainOptions, *, commits: str) -> Path:
    """Write ``results/client-drain.md`` (+ .json, .png); return its path."""
    rows = []
    for cell in sorted(cells, key=lambda c: (c.rate, c.variant != VARIANTS[0][0])):
        rows.append(
            (
                cell.rate,
                f"{cell.fired_per_s.median:.0f}",
                cell.variant,
                f"{cell.bus_s.median:.2f}",
                f"{cell.client_s.median:.2f}",
                _lag(cell.lag_s.median),
                f"{_lag(min(cell.lag_s))} to {_lag(max(cell.lag_s))}",
                f"{cell.answered} of {cell.pings}"
                + (f" ({cell.never_at_client} never)" if cell.never_at_client else ""),
            )
        )
    broken = [c for c in cells if c.never_on_bus]
    lines = [
        *report.trees_header(
            "A LocalClient on a busy master bus",
            NAME,
            opts.reproduce_command(),
            commits,
        ),
        "## Method",
        "",
        f"One master (the series) with {MINIONS} simulated minions. Beside it, "
        "a thread of the benchmark fires events of an unrelated tag "
        f"(`{NOISE_TAG}`, about {NOISE_PAD} bytes each, the size of a small "
        "job's return) onto the master's bus at each rate: they stand for "
        "the returns of a busy fleet, which every client waiting for its own "
        "returns must read past. At each rate a LocalClient of each variant, "
        "in a process of its own with its Salt tree first on `PYTHONPATH`, "
        f"runs {opts.pings} pings one after the other: `test.sleep "
        f"{opts.delay:g}` to one minion with a {TIMEOUT} s timeout, so each "
        f"return comes {opts.delay:g} s after its publication, as under load. "
        "The master's forwarder engine hands every bus event to the "
        "harness's listener; the return's `_stamp`, set when the master "
        "fired it onto its bus, says when it reached the bus. The lag is "
        "when the return reached the client minus that (a return the client "
        f"gave up without reading counts as reaching it at the {TIMEOUT} s "
        "timeout, a lower bound, and is not answered). Each run takes every "
        "rate once, "
        "the variants in a rotated order; the table gives medians over the "
        f"{opts.runs} runs of each run's median, and the range of the lag.",
        "",
        "`pristine 3008.3` is the unpatched sdist's client, which reads one "
        "event per poll and sleeps 10 ms after each that is not its own; "
        "`series` is the client of the whole series, whose non-blocking "
        "`get_event` reads past the events of other tags already received "
        "(patch `Read past the events of other tags in a non-blocking "
        "get_event`).",
        "",
        report.table(
            [
                "noise asked/s",
                "fired/s",
                "client",
                "return on the bus, s",
                "at the client, s",
                "lag, s",
                "lag range over runs",
                f"answered within {TIMEOUT} s",
            ],
            rows,
        ),
        "",
    ]
    if broken:
        lines += [
            "Returns the listener never saw (the run is not trustworthy): "
            + "; ".join(f"{c.variant} at {c.rate}/s: {c.never_on_bus}" for c in broken),
            "",
        ]
    plot = lag_plot(cells, opts)
    lines += [f"![client lag by bus rate]({plot.name})"]
    report.write_data(NAME, {"cells": cells})
    return report.write(NAME, "\n".join(lines))


def lag_plot(cells: list[Cell], opts: ClientDrainOptions) -> Path:
    """The median lag of each variant against the rate fired."""
    plt = report.pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for variant, _ in VARIANTS:
        mine = sorted((c for c in cells if c.variant == variant), key=lambda c: c.rate)
        ax.plot(
            [c.fired_per_s.median for c in mine],
            [c.lag_s.median for c in mine],
            marker="o",
            label=variant,
        )
    ax.axhline(
        TIMEOUT - opts.delay,
        linestyle=":",
        color="grey",
        label=f"a lag past the {TIMEOUT} s timeout",
    )
    ax.set_xlabel("other events on the bus per second")
    ax.set_ylabel("return at the client minus on the bus, s")
    ax.set_title(f"LocalClient lag (median of {opts.runs} runs)")
    ax.legend()
    return report.save_figure(fig, NAME)
