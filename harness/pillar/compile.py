"""Compile a minion's pillar in-process, as the master would, for a given set
of master options (pillar_roots, ext_pillar)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from harness.master import in_process_opts
from harness.postgres import ConnectionInfo


class PillarCompiler:
    """Salt's own ``salt.pillar.Pillar`` over one set of master options.

    The module loader is built once and shared by every compile.
    """

    def __init__(self, overrides: dict[str, Any], workdir: Path | None = None) -> None:
        import salt.loader

        self._tmp = tempfile.TemporaryDirectory(prefix="saltfleet-compile-")
        root = Path(self._tmp.name) if workdir is None else workdir
        self.opts = in_process_opts(root, **overrides)
        self._functions = salt.loader.minion_mods(self.opts)

    def compile(self, minion_id: str) -> dict[str, Any]:
        """The pillar ``minion_id`` gets from these master options."""
        import salt.pillar

        pillar = salt.pillar.Pillar(
            self.opts, {"id": minion_id}, minion_id, "base", functions=self._functions
        )
        return dict(pillar.compile_pillar())

    def close(self) -> None:
        """Remove the compiler's temporary directory."""
        self._tmp.cleanup()


def file_compiler(tree: Path) -> PillarCompiler:
    """A compiler over the pillar file tree ``tree`` (``pillar_roots``)."""
    return PillarCompiler({"pillar_roots": {"base": [str(tree)]}})


def database_compiler(
    info: ConnectionInfo, ext_pillar: list[dict[str, Any]]
) -> PillarCompiler:
    """A compiler over the database in ``info`` through ``ext_pillar``."""
    return PillarCompiler({"postgres": info.salt_options(), "ext_pillar": ext_pillar})
