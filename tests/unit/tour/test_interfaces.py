"""The module-interfaces section: the answers of a minion with
``module_interfaces`` on and off become a table, and a section whose "on"
answer is no clear error fails instead of showing it."""

from __future__ import annotations

import pytest

from tour.interfaces import probe_lines, provider_rows
from tour.registry import ScenarioFailed

NOT_SUPPORTED = (
    "'pkg.list_locks' is not supported on this platform: the 'pkg' interface "
    "supports it where os_family is Suse (this minion: os_family='Debian')."
)
NOT_AVAILABLE = "'pkg.list_locks' is not available."


def test_probe_table_shows_both_answers() -> None:
    lines = probe_lines(
        {
            "True": {"in __salt__": False, "message": NOT_SUPPORTED},
            "False": {"in __salt__": False, "message": NOT_AVAILABLE},
        }
    )
    assert f"| True | {NOT_SUPPORTED} |" in lines
    assert f"| False (default) | {NOT_AVAILABLE} |" in lines


@pytest.mark.parametrize(
    ("on", "reason"),
    [
        ({"in __salt__": False, "message": NOT_AVAILABLE}, "gave no clear error"),
        ({"in __salt__": True, "message": NOT_SUPPORTED}, "counts as a function"),
    ],
)
def test_probe_without_the_feature_fails(on: dict[str, object], reason: str) -> None:
    with pytest.raises(ScenarioFailed, match=reason):
        probe_lines(
            {"True": on, "False": {"in __salt__": False, "message": NOT_AVAILABLE}}
        )


def test_provider_rows_count_statuses_and_extras() -> None:
    report = {
        "functions": ["hold", "list_locks", "list_pkgs"],
        "providers": [
            {
                "platform": "Debian",
                "provider": "aptpkg",
                "declares_interface": True,
                "functions": {
                    "list_pkgs": {"status": "implemented"},
                    "hold": {"status": "implemented"},
                    "list_locks": {"status": "not supported"},
                    "show": {"status": "extra"},
                },
            }
        ],
    }
    rows = provider_rows(report)
    assert rows[0].endswith("| not supported | signature mismatch | extras |")
    assert rows[2] == "| Debian | `aptpkg` | yes | 2 | 0 | 1 | 0 | 1 |"
