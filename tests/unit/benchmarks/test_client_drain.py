"""The client-drain benchmark's accounting: when a return reached the bus
and the client, what counts as answered, and the report it writes."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks import client_drain, report
from benchmarks.plain_options import ClientDrainOptions
from harness.events import Event


class _Listener:
    """The events a listener stamped, and the matching it offers."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def matching(self, pattern: str, since: int = 0) -> list[Event]:
        import fnmatch

        return [e for e in self.events[since:] if fnmatch.fnmatchcase(e.tag, pattern)]


def _ping(jid: str, began: float, answered: float | None) -> dict[str, Any]:
    return {"jid": jid, "began": began, "answered": answered}


def test_a_cell_measures_each_return_from_the_bus_to_the_client() -> None:
    listener = _Listener(
        [
            Event("salt/job/1/ret/evil-0001", {}, 102.0),
            Event("saltfleet/bench/noise", {}, 102.5),
            Event("salt/job/2/ret/evil-0001", {}, 202.0),
            Event("salt/job/3/ret/evil-0001", {}, 302.0),
        ]
    )
    cell = client_drain.Cell("pristine 3008.3", 200)
    pings = [
        _ping("1", 100.0, 104.0),  # 2 s on the bus, 4 s at the client
        _ping("2", 200.0, 211.0),  # at the client past the timeout
        _ping("3", 300.0, None),  # never reached the client
        _ping("4", 400.0, None),  # never reached the bus
    ]
    line = client_drain.measure_cell(
        cell,
        {"pings": pings},
        listener,
        0,
        199.0,  # type: ignore[arg-type]
    )
    assert cell.pings == 4
    assert cell.answered == 1
    assert (cell.never_on_bus, cell.never_at_client) == (1, 1)
    assert cell.bus_s == [2.0]
    # 4, 11 and the timeout for the one the client never read
    assert cell.client_s == [10.0]
    assert cell.lag_s == [8.0]  # 2, 9 and at least 8
    assert cell.fired_per_s == [199.0]
    assert "1 of 4 within 10 s, 1 never so far" in line


def test_the_bus_time_is_when_the_master_fired_the_return() -> None:
    # fired 2 s after the ping, forwarded to the listener 1.5 s later
    fired = datetime.datetime.fromtimestamp(1_700_000_002.0, datetime.UTC)
    stamp = fired.replace(tzinfo=None).isoformat()
    listener = _Listener(
        [Event("salt/job/1/ret/evil-0001", {"_stamp": stamp}, 1_700_000_003.5)]
    )
    cell = client_drain.Cell("series", 400)
    client_drain.measure_cell(
        cell,
        {"pings": [_ping("1", 1_700_000_000.0, 1_700_000_002.01)]},
        listener,  # type: ignore[arg-type]
        0,
        400.0,
    )
    assert cell.bus_s == [pytest.approx(2.0)]
    assert cell.lag_s == [pytest.approx(0.01)]


def test_a_cell_whose_client_saw_nothing_counts_the_timeout() -> None:
    listener = _Listener([Event("salt/job/1/ret/evil-0001", {}, 102.0)])
    cell = client_drain.Cell("pristine 3008.3", 400)
    client_drain.measure_cell(
        cell,
        {"pings": [_ping("1", 100.0, None)]},
        listener,  # type: ignore[arg-type]
        0,
        400.0,
    )
    assert (cell.answered, cell.never_at_client) == (0, 1)
    assert cell.lag_s == [client_drain.TIMEOUT - 2.0]


def test_the_report_shows_each_variant_at_each_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    cells = []
    for rate, lag in ((0, 0.0), (200, 2.4)):
        for variant, _ in client_drain.VARIANTS:
            cell = client_drain.Cell(variant, rate, pings=12, answered=12)
            for _ in range(3):
                cell.fired_per_s.append(float(rate))
                cell.bus_s.append(2.1)
                cell.lag_s.append(lag if variant.startswith("pristine") else 0.0)
                cell.client_s.append(2.1 + cell.lag_s[-1])
            cells.append(cell)
    path = client_drain.write_report(cells, ClientDrainOptions(), commits="c")
    text = path.read_text()
    assert (
        "| 200 | 200 | pristine 3008.3 | 2.10 | 4.50 | 2.40 | 2.40 to 2.40 | 12 of 12 |"
        in text
    )
    assert (
        "| 200 | 200 | series | 2.10 | 2.10 | 0.00 | 0.00 to 0.00 | 12 of 12 |" in text
    )
    assert "Regenerate: `nox -s bench -- client-drain`" in text
    assert (tmp_path / "client-drain.png").exists()
    assert (tmp_path / "client-drain.json").exists()


def test_a_lag_of_a_clock_hair_below_zero_reads_as_zero() -> None:
    # the listener's and the client's clocks differ by a millisecond or two
    assert client_drain._lag(-0.001) == "0.00"
    assert client_drain._lag(-0.02) == "-0.02"  # a real negative shows
    assert client_drain._lag(6.886) == "6.89"
