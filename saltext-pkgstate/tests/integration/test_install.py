"""``pip install ./saltext-pkgstate`` on stock Salt stands alone.

A fresh virtual environment gets the released ``salt==3008.3`` from the
package index (pip's cache serves what it has) and the extension, nothing of
the saltfleet checkout. With only the master configuration its README gives,
on a database that has no table at all, ``salt-run pkgstate.migrate`` creates
the schema, the runner saves and assigns a state, and Salt's own
``pillar.show_pillar`` compiles it through the ``pkgstate`` ext_pillar.
"""

from __future__ import annotations

import getpass
import json
import shutil
import subprocess
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

EXTENSION = Path(__file__).resolve().parents[2]
STOCK_SALT = "salt==3008.3"


@pytest.fixture(scope="module")
def stock_master() -> Iterator[Path]:
    """A venv with stock Salt and the extension installed from its directory."""
    root = Path(tempfile.mkdtemp(prefix="saltext-pkgstate-venv-"))
    try:
        # a copy: building from the checkout would leave build/ in it
        source = root / "saltext-pkgstate"
        shutil.copytree(
            EXTENSION,
            source,
            ignore=shutil.ignore_patterns(
                "build", "*.egg-info", "__pycache__", ".*_cache", "tests"
            ),
        )
        venv.EnvBuilder(with_pip=True).create(root / "venv")
        python = root / "venv" / "bin" / "python"
        installed = subprocess.run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--progress-bar",
                "off",
                STOCK_SALT,
                str(source),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _readme_master_config() -> dict[str, Any]:
    """The master configuration block of the extension's README."""
    text = (EXTENSION / "README.md").read_text()
    block = text.split("Then, in the master configuration:", 1)[1]
    body = block.split("```yaml", 1)[1].split("```", 1)[0]
    config: dict[str, Any] = yaml.safe_load(body)
    return config


def _master_config(root: Path, dsn: str) -> Path:
    sls_root = subprocess.run(
        [
            root / "venv" / "bin" / "python",
            "-c",
            "import saltext.pkgstate as p; print(p.SLS_ROOT)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    config = _readme_master_config()
    # the README's placeholders, filled in as its comments say
    config["file_roots"]["base"] = [str(root / "srv"), sls_root]
    config["pkgstate"]["dsn"] = dsn
    # a master of the test's own, not the machine's /etc/salt and /var
    config.update(root_dir=str(root / "master"), user=getpass.getuser())
    # what the master's first start creates, and salt-run writes into
    (root / "master" / "var" / "cache" / "salt" / "master" / "proc").mkdir(
        parents=True, exist_ok=True
    )
    conf_dir = root / "conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "master").write_text(yaml.safe_dump(config))
    return conf_dir


def _salt_run(root: Path, conf_dir: Path, *args: str) -> Any:
    done = subprocess.run(
        [root / "venv" / "bin" / "salt-run", "-c", conf_dir, "--out", "json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


# the fixture pip-installs Salt and its dependencies: 5-8 minutes on a busy
# 2-core machine, near the project's 10-minute default per test
@pytest.mark.timeout(1800)
def test_the_readme_configuration_works_on_stock_salt(
    stock_master, empty_database
) -> None:
    version = subprocess.run(
        [stock_master / "venv" / "bin" / "salt-run", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert version.split()[:2] == ["salt-run", "3008.3"]
    conf_dir = _master_config(stock_master, empty_database.dsn)

    migrated = _salt_run(stock_master, conf_dir, "pkgstate.migrate")
    assert migrated["applied"] == ["0001_directory.sql", "0002_package_states.sql"]
    assert _salt_run(stock_master, conf_dir, "pkgstate.migrate")["applied"] == []

    _salt_run(stock_master, conf_dir, "pkgstate.set", "base", "nginx", "curl@latest")
    _salt_run(stock_master, conf_dir, "pkgstate.assign", "base", "minions=web1")
    pillar = _salt_run(stock_master, conf_dir, "pillar.show_pillar", "web1")
    packages = pillar["pkgstate"]["packages"]
    assert packages == {
        "curl": {"policy": "latest", "decided_by": "base"},
        "nginx": {"policy": "installed", "decided_by": "base"},
    }
