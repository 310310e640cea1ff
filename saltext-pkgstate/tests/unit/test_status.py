"""Status of managed packages from the resolved state, the inventory and the
last applied record, without the database."""

from __future__ import annotations

from datetime import UTC, datetime

from saltext.pkgstate.applied import Applied
from saltext.pkgstate.inventory import Inventory
from saltext.pkgstate.model import validate_revision
from saltext.pkgstate.resolve import Scope, Source, StateRevision, resolve
from saltext.pkgstate.status import status_report

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _resolved(*entries: str) -> dict:
    revision = StateRevision("base", 1, {e.name: e for e in validate_revision(entries)})
    return resolve([Source(Scope.ORG, "acme", (1,), revision)])


def test_never_applied_is_pending_and_applied_follows_the_inventory() -> None:
    resolved = _resolved("nginx>=1.20", "telnet@removed", "curl@latest")
    assert status_report("m1", resolved, None, None)["counts"] == {"pending": 3}
    inventory = Inventory(
        "m1",
        {"nginx": ["1.18"], "curl": ["8.0"]},
        {"curl": ["8.0"]},
        AT,
    )
    applied = Applied("m1", resolved["digest"], None, "j1", AT)
    report = status_report("m1", resolved, inventory, applied)
    assert {n: p["status"] for n, p in report["packages"].items()} == {
        "curl": "consistent",
        "nginx": "inconsistent",
        "telnet": "consistent",
    }
    assert report["applied_at"] == AT.isoformat()
    assert report["packages"]["nginx"]["installed"] == ["1.18"]


def test_without_an_inventory_an_applied_package_is_unknown() -> None:
    resolved = _resolved("nginx")
    applied = Applied("m1", resolved["digest"], None, None, AT)
    report = status_report("m1", resolved, None, applied)
    assert report["packages"]["nginx"]["status"] == "unknown"
    assert report["inventory_at"] is None
