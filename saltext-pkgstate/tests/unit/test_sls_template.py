"""The shipped ``pkgstate/init.sls`` renders, through Salt's own jinja
renderer, exactly the SLS data of :func:`saltext.pkgstate.render.render_sls`:
``state.show_sls pkgstate`` must equal ``salt-run pkgstate.export``."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import salt.config
import salt.exceptions
import salt.utils.templates
import yaml

from saltext.pkgstate import SLS_ROOT
from saltext.pkgstate.model import parse_entry
from saltext.pkgstate.render import canonical, render_sls
from saltext.pkgstate.resolve import Scope, Source, StateRevision, resolve

TEMPLATE = Path(SLS_ROOT) / "pkgstate" / "init.sls"


def _render(pillar: dict) -> dict:
    opts = copy.deepcopy(salt.config.DEFAULT_MINION_OPTS)
    text = salt.utils.templates.render_jinja_tmpl(
        TEMPLATE.read_text(),
        {"opts": opts, "saltenv": None, "pillar": pillar, "grains": {}, "salt": {}},
        tmplpath=str(TEMPLATE),
    )
    return yaml.safe_load(text) or {}


def _resolved(entries: list[str], hold: bool | str | None) -> dict:
    revision = StateRevision("web", 1, {e.name: e for e in map(parse_entry, entries)})
    return resolve([Source(Scope.GROUP, "acme/web", (1, 1), revision)], hold=hold)


ENTRIES = [
    "nginx",
    "openssl>=3.0",
    "libc6:amd64=2.36-9",
    "g++<13",
    "curl@latest",
    "telnet@removed",
    "rsh@purged",
    "ftp@absent<=0.17",
    "zsh==5.9",
    "Aa-upper",
]


@pytest.mark.parametrize("hold", [True, "unsupported by pacman", None])
def test_template_renders_what_render_sls_renders(hold):
    resolved = _resolved(ENTRIES, hold)
    rendered = _render({"pkgstate": resolved})
    assert rendered == render_sls(resolved["packages"])
    assert canonical(rendered) == canonical(render_sls(resolved["packages"]))


def test_holds_follow_exact_versions_only_when_supported():
    held = _render({"pkgstate": _resolved(["zsh=5.9", "vim>=9"], True)})
    assert held["pkgstate-held-zsh"] == {
        "pkg.held": [
            {"name": "zsh"},
            {"version": "5.9"},
            {"require": [{"pkg": "pkgstate-installed-zsh"}]},
        ]
    }
    assert "pkgstate-held-vim" not in held
    unsupported = _render({"pkgstate": _resolved(["zsh=5.9"], "unsupported by apk")})
    assert list(unsupported) == ["pkgstate-installed-zsh"]


def test_no_managed_package_renders_an_empty_sls():
    assert _render({"pkgstate": resolve(())}) == {}


@pytest.mark.parametrize("pillar", [{}, {"pkgstate": None}, {"pkgstate": {"x": 1}}])
def test_a_missing_pillar_fails_the_render(pillar):
    with pytest.raises(salt.exceptions.SaltRenderError, match="pkgstate ext_pillar"):
        _render(pillar)
