"""A master's paths are one value: the rendered config, in-process options and
callers all take them from MasterLayout, and every one lies under its root."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.master import (
    Master,
    MasterLayout,
    MasterSettings,
    in_process_opts,
    render_config,
    write_config,
)


def _settings(root: Path, **kwargs: object) -> MasterSettings:
    return MasterSettings(root=root, publish_port=14505, ret_port=14506, **kwargs)  # type: ignore[arg-type]


def test_rendered_paths_are_the_layouts_and_lie_under_the_root(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    opts = render_config(settings, None)
    assert opts["pki_dir"] == str(settings.pki_dir)
    assert opts["sock_dir"] == str(settings.sock_dir)
    assert opts["extension_modules"] == str(settings.extension_modules)
    assert opts["pillar_roots"] == {"base": [str(settings.pillar_root)]}
    for key, value in MasterLayout(tmp_path).path_options().items():
        paths = value["base"] if isinstance(value, dict) else [value]
        assert all(Path(p).is_relative_to(tmp_path) for p in paths), key


def test_pillar_files_are_written_into_the_pillar_root(tmp_path: Path) -> None:
    settings = _settings(tmp_path, pillar_files={"top.sls": "base: {}\n"})
    write_config(settings, None)
    assert (settings.pillar_root / "top.sls").read_text() == "base: {}\n"
    outside = _settings(tmp_path, pillar_files={"../escape.sls": "x: 1\n"})
    with pytest.raises(HarnessError, match="outside the pillar root"):
        write_config(outside, None)


def test_effective_opts_are_the_written_file_with_salts_defaults(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, extra={"hash_type": "sha512"})
    write_config(settings, None)
    opts = Master(settings, None).effective_opts()  # type: ignore[arg-type]
    # what the file says, and what only Salt's defaults say
    assert opts["hash_type"] == "sha512"
    assert opts["cachedir"] == str(settings.cachedir)
    assert opts["keep_jobs_seconds"] == 86400


def test_in_process_opts_lay_paths_out_like_a_rendered_master(tmp_path: Path) -> None:
    layout = MasterLayout(tmp_path)
    opts = in_process_opts(tmp_path, pillar_roots={"base": [str(tmp_path / "tree")]})
    assert opts["cachedir"] == str(layout.cachedir)
    assert opts["extension_modules"] == str(layout.extension_modules)
    assert opts["pillar_roots"] == {"base": [str(tmp_path / "tree")]}
    assert layout.pillar_root.is_dir()


def test_pkgstates_add_the_sls_root_the_database_and_the_modules(
    tmp_path: Path,
) -> None:
    from saltext.pkgstate import SLS_ROOT

    from harness.postgres import ConnectionInfo

    pg = ConnectionInfo("127.0.0.1", 5999, "postgres", "", "saltfleet")
    settings = _settings(
        tmp_path, postgres=pg, pkgstates=True, ext_pillar=[{"postgres": []}]
    )
    opts = render_config(settings, None)
    assert opts["file_roots"] == {"base": [str(settings.file_root), SLS_ROOT]}
    assert opts["pkgstate"] == {"dsn": pg.dsn}
    assert opts["ext_pillar"] == [{"postgres": []}, {"pkgstate": {}}]
    assert opts["master_tops"] == {"pkgstate": {}}
    assert opts["engines"] == [{"pkgstate": {}}]
    assert "pkgstate" not in render_config(_settings(tmp_path, postgres=pg), None)
    with pytest.raises(HarnessError, match="PostgreSQL"):
        render_config(_settings(tmp_path, pkgstates=True), None)


def test_master_keeps_its_ext_pillar_connections(tmp_path: Path) -> None:
    """The patched postgres ext_pillar connects per compile unless the
    ``postgres`` block sets ``pool_size``; the harness's masters keep theirs."""
    from harness.postgres import ConnectionInfo

    pg = ConnectionInfo("127.0.0.1", 5999, "postgres", "", "saltfleet")
    opts = render_config(_settings(tmp_path, postgres=pg), None)
    assert opts["postgres"]["pool_size"] == 1
    assert opts["postgres"]["db"] == "saltfleet"


def test_a_salt_tree_is_what_the_masters_python_imports(tmp_path: Path) -> None:
    import subprocess
    import sys

    tree = tmp_path / "pristine"
    (tree / "salt").mkdir(parents=True)
    (tree / "salt" / "__init__.py").write_text("TREE = 'pristine'\n")
    settings = _settings(tmp_path / "m", salt_tree=tree)
    env = settings.environment()
    assert env is not None
    imported = subprocess.run(
        [sys.executable, "-c", "import salt; print(salt.TREE)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.strip() == "pristine"
    assert _settings(tmp_path / "m").environment() is None  # the installed Salt
