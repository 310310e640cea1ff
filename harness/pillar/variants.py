"""How a master gets its pillars: the configurations compared by the tests and
the pillar benchmark.

- ``files``: the pillar tree as ``pillar_roots`` (top.sls per minion);
- ``db-function``: one query, the ``salt_pillar_rows`` lookup function;
- ``db-queries``: four queries, one per scope, on the patched module;
- ``db-upstream``: the function query through upstream's unpatched module
  (connection per compile), extracted from the vendored pristine tree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.salttree import Layout, read_upstream

FUNCTION_QUERY = "SELECT pillar FROM salt_pillar_rows(%(minion_id)s)"
SCOPE_QUERIES = (
    # global: no parameter at all
    "SELECT pillar FROM salt_pillar"
    " WHERE server_id IS NULL AND group_id IS NULL AND org_id IS NULL ORDER BY category",
    "SELECT p.pillar FROM salt_pillar p JOIN server s ON p.org_id = s.org_id"
    " WHERE s.minion_id = %(minion_id)s ORDER BY p.category",
    "SELECT p.pillar FROM salt_pillar p"
    " JOIN server_group_member m ON m.group_id = p.group_id"
    " JOIN server s ON s.id = m.server_id"
    " WHERE s.minion_id = %(minion_id)s ORDER BY p.group_id, p.category",
    "SELECT p.pillar FROM salt_pillar p JOIN server s ON p.server_id = s.id"
    " WHERE s.minion_id = %(minion_id)s ORDER BY p.category",
)
UPSTREAM_MODULE = "postgres_upstream"
VARIANTS = ("files", "db-function", "db-queries", "db-upstream")


def _postgres(queries: list[str], module: str = "postgres") -> list[dict[str, Any]]:
    return [{module: [{"query": q, "as_json": True} for q in queries]}]


def db_ext_pillar() -> list[dict[str, Any]]:
    """The ``ext_pillar`` that reads a minion's rows from PostgreSQL in merge
    order with one call of ``salt_pillar_rows()`` (the README's configuration)."""
    return _postgres([FUNCTION_QUERY])


def master_opts(
    variant: str, *, pillar_tree: Path | None, extension_dir: Path
) -> dict[str, Any]:
    """Master options (beyond the stack's defaults) for ``variant``.

    ``extension_dir`` must lie under the master's ``root_dir``: Salt prefixes
    the root to an absolute path outside it.
    """
    if variant == "files":
        if pillar_tree is None:
            raise HarnessError("the files variant needs a pillar tree")
        return {"pillar_roots": {"base": [str(pillar_tree)]}}
    if variant == "db-function":
        return {"ext_pillar": db_ext_pillar()}
    if variant == "db-queries":
        return {"ext_pillar": _postgres(list(SCOPE_QUERIES))}
    if variant == "db-upstream":
        install_upstream_module(extension_dir)
        # upstream binds the minion id as the one positional parameter
        query = FUNCTION_QUERY.replace("%(minion_id)s", "%s")
        return {
            "extension_modules": str(extension_dir),
            "ext_pillar": _postgres([query], UPSTREAM_MODULE),
        }
    raise HarnessError(
        f"unknown pillar variant {variant!r}; choose one of {', '.join(VARIANTS)}"
    )


def install_upstream_module(extension_dir: Path, layout: Layout | None = None) -> Path:
    """Write upstream's pristine ``salt/pillar/postgres.py`` as ``postgres_upstream``.

    Taken at run time from the vendored tree's upstream tag, never committed.
    """
    layout = layout or Layout.of_project()
    tag = read_upstream(layout.upstream_file).tag
    proc = subprocess.run(
        ["git", "-C", str(layout.src_dir), "show", f"{tag}:salt/pillar/postgres.py"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise HarnessError(
            f"cannot read upstream's postgres ext_pillar from {layout.src_dir}: "
            f"{proc.stderr.strip()} (run `nox -s vendor`)"
        )
    target = extension_dir / "pillar" / f"{UPSTREAM_MODULE}.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(proc.stdout)
    return target
