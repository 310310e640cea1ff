"""``python -m harness.pgtest``: Salt's postgres functional tests get a server."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.integration

# Connects to the server it is given, and names its data directory's parent.
PROBE = """
import os, psycopg2
conn = psycopg2.connect(os.environ["SALT_TEST_POSTGRES_DSN"])
with conn.cursor() as cur:
    cur.execute("SELECT current_setting('data_directory')")
    print(cur.fetchone()[0])
conn.close()
raise SystemExit(3)
"""


def test_command_runs_with_a_server_that_is_gone_afterwards() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness.pgtest", "--", sys.executable, "-c", PROBE],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # the command's own exit code is passed through
    assert proc.returncode == 3, proc.stderr
    data_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert data_dir.is_relative_to(tempfile.gettempdir())
    assert not data_dir.exists()
