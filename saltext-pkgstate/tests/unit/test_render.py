"""Rendering resolved entries to Salt SLS data and text."""

from __future__ import annotations

import yaml

from saltext.pkgstate.model import validate_revision
from saltext.pkgstate.render import (
    canonical,
    export_resolved,
    export_revision,
    packages_of,
    render_sls,
    to_sls_text,
)

ENTRIES = validate_revision(
    [
        "nginx>=1.20",
        "curl@latest",
        "telnet@removed",
        "rsh@purged",
        "ftp@absent<2.0",
        "vim",
        "bash=5.1-2",
    ]
)


def test_every_policy_renders_to_its_salt_state() -> None:
    data = render_sls(packages_of(ENTRIES))
    assert data == {
        "pkgstate-installed-bash": {
            "pkg.installed": [{"name": "bash"}, {"version": "5.1-2"}]
        },
        "pkgstate-latest-curl": {"pkg.latest": [{"name": "curl"}]},
        "pkgstate-absent-ftp": {"pkg.removed": [{"name": "ftp"}, {"version": "<2.0"}]},
        "pkgstate-installed-nginx": {
            "pkg.installed": [{"name": "nginx"}, {"version": ">=1.20"}]
        },
        "pkgstate-purged-rsh": {"pkg.purged": [{"name": "rsh"}]},
        "pkgstate-removed-telnet": {"pkg.removed": [{"name": "telnet"}]},
        "pkgstate-installed-vim": {"pkg.installed": [{"name": "vim"}]},
    }
    assert list(data) == sorted(data, key=lambda sid: sid.rsplit("-", 1)[1])


def test_exact_version_is_held_only_when_supported() -> None:
    packages = packages_of(validate_revision(["bash=5.1-2", "curl>=7"]))
    held = render_sls(packages, holds_supported=True)
    assert held["pkgstate-held-bash"] == {
        "pkg.held": [
            {"name": "bash"},
            {"version": "5.1-2"},
            {"require": [{"pkg": "pkgstate-installed-bash"}]},
        ]
    }
    assert "pkgstate-held-curl" not in held
    assert not any("held" in sid for sid in render_sls(packages))


def test_hold_follows_the_resolved_entry_by_default() -> None:
    packages = {
        "a": {"policy": "installed", "op": "=", "version": "1", "hold": True},
        "b": {
            "policy": "installed",
            "op": "=",
            "version": "1",
            "hold": "unsupported by apk",
        },
    }
    data = render_sls(packages)
    assert "pkgstate-held-a" in data
    assert "pkgstate-held-b" not in data


def test_sls_text_loads_back_to_the_same_data() -> None:
    data = render_sls(packages_of(ENTRIES), holds_supported=True)
    text = to_sls_text(data, header="pkgstate web revision 3")
    assert text.startswith("# pkgstate web revision 3\n")
    assert yaml.safe_load(text) == data
    # versions stay strings: 1.20 must not become the float 1.2
    assert "'>=1.20'" in text or '">=1.20"' in text


def test_export_revision_and_resolved() -> None:
    text = export_revision("web", 3, ENTRIES)
    assert yaml.safe_load(text) == render_sls(packages_of(ENTRIES))
    resolved = {
        "packages": {"vim": {"policy": "installed", "decided_by": "web"}},
        "sources": [{"state": "web", "scope": "group", "target": "a/w", "revision": 3}],
        "digest": "x",
    }
    text = export_resolved("m1", resolved)
    assert "sources: web@3" in text
    assert yaml.safe_load(text) == {
        "pkgstate-installed-vim": {"pkg.installed": [{"name": "vim"}]}
    }


def test_empty_export_is_valid_yaml_mapping() -> None:
    assert yaml.safe_load(export_revision("empty", 1, ())) == {}


def test_canonical_equates_show_sls_output_with_rendered_data() -> None:
    rendered = render_sls(
        packages_of(validate_revision(["nginx>=1.20", "curl@latest"]))
    )
    show_sls = {
        "pkgstate-installed-nginx": {
            "__sls__": "pkgstate",
            "__env__": "base",
            "pkg": [
                {"version": ">=1.20"},
                {"name": "nginx"},
                "installed",
                {"order": 10000},
            ],
        },
        "pkgstate-latest-curl": {
            "__sls__": "pkgstate",
            "__env__": "base",
            "pkg": [{"name": "curl"}, "latest", {"order": 10001}],
        },
    }
    assert canonical(show_sls) == canonical(rendered)
    show_sls["pkgstate-latest-curl"]["pkg"][1] = "installed"
    assert canonical(show_sls) != canonical(rendered)
