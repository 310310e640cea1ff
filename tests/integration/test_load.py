"""Load runs through salt-api end to end: a short headless locust run
against a stack of simulated minions writes its CSVs and the report, and
in distributed mode a locust worker connects to the locust master and its
users' requests are reported."""

from __future__ import annotations

import pytest

from benchmarks import report
from benchmarks.load import run
from benchmarks.load.shape import LoadProfile

pytestmark = pytest.mark.integration

MINIONS = 5
#: 10 s in all, 3 users (one of them the event follower), a spike to 4 that
#: lasts long enough for its user to log in while another test file loads the
#: machine (CI runs two at once)
SHORT = LoadProfile(
    users=3, spike_users=4, ramp_s=1, steady_s=4, spike_s=4, recover_s=1
)


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path / "results")
    return tmp_path / "results"


def _settings(tmp_path, **overrides) -> run.LoadSettings:
    settings = {
        "minions": MINIONS,
        "processes": 1,
        "profile": SHORT,
        "variants": ("off",),
        "submissions": 5,
        "group_size": 3,
        "presence_targets": 3,
        "name": "load-test",
        "workdir": tmp_path / "work",
        "command": "nox -s load -- --minions 5 --name load-test",
    }
    return run.LoadSettings(**{**settings, **overrides})


def test_a_short_headless_run_writes_csv_and_report(tmp_path, results):
    path = run.run(_settings(tmp_path))
    out = tmp_path / "work" / "off"
    for suffix in ("_stats.csv", "_failures.csv", "_stats_history.csv", ".html"):
        assert (out / f"locust{suffix}").is_file(), suffix
    locust = run.read_locust(out / "locust")
    assert locust.total is not None and locust.total.requests > 0
    # every console user logged in once, and nothing failed on 5 idle minions
    logins = [e.requests for e in locust.endpoints if e.name == "/login"]
    assert logins == [SHORT.spike_users], (out / "locust.log").read_text()
    assert locust.failures == {}, (out / "locust_failures.csv").read_text()
    text = path.read_text()
    assert path == results / "load-test.md"
    assert "Regenerate: `nox -s load -- --minions 5 --name load-test`" in text
    # the per-endpoint table; which console tasks ran in 10 s is random
    # (weighted), the one login per user is not
    assert f"| `/login` | off #1 | {SHORT.spike_users} |" in text
    assert "| off #1 | 5 |" in text  # the salt-api vs LocalClient submissions
    assert (results / "load-test-timeline.png").is_file()
    assert (out / "logs" / "master" / "log" / "api.log").exists()


def test_distributed_mode_one_worker_connects_and_reports(tmp_path, results):
    path = run.run(
        _settings(
            tmp_path,
            workers=run.LocustWorkers(local=1),
            submissions=0,
            variants=("on",),
        )
    )
    out = tmp_path / "work" / "on"
    master_log = (out / "locust.log").read_text()
    assert "1 workers connected" in master_log
    assert (out / "locust-worker-1.log").is_file()
    locust = run.read_locust(out / "locust")
    # the master runs no users itself: every request came from the worker,
    # which got salt-api's password from the master (no auth failures)
    assert locust.total is not None and locust.total.requests > 0
    assert locust.failures == {}
    assert "| on #1 |" in path.read_text()


def test_a_locust_that_cannot_start_is_reported_with_its_log(tmp_path):
    command = run.LocustCommand(
        host="http://127.0.0.1:9",  # nothing listens on the discard port
        profile=LoadProfile(
            users=1, spike_users=1, ramp_s=0, steady_s=2, spike_s=0, recover_s=0
        ),
        out_prefix=tmp_path / "locust",
        extra=["--no-such-option"],
    )
    with pytest.raises(run.HarnessError, match="locust exited with code") as failed:
        run.run_locust(command, "secret", run.LocustWorkers(local=1), tmp_path)
    assert "no-such-option" in str(failed.value)


def test_workers_only_serve_a_locust_master_elsewhere(tmp_path):
    """``--master-host``: workers alone, for a locust master started apart
    (here on loopback, against a salt-api that is not there: every request
    fails, and is counted as a connection failure)."""
    import subprocess
    import sys

    from harness.ports import free_port
    from harness.processes import ManagedProcess
    from tests.conftest import PROJECT_ROOT

    port = free_port()
    command = run.LocustCommand(
        host="http://127.0.0.1:9",
        profile=LoadProfile(
            users=2, spike_users=2, ramp_s=0, steady_s=3, spike_s=0, recover_s=0
        ),
        out_prefix=tmp_path / "locust",
    )
    master = ManagedProcess(
        "locust",
        command.headless(run.LocustWorkers(remote=1, port=port), port),
        tmp_path / "locust.log",
        cwd=PROJECT_ROOT,
    )
    master.start()
    try:
        workers = subprocess.run(
            [
                *(sys.executable, "-m", "benchmarks.load"),
                *("--master-host", "127.0.0.1", "--master-port", str(port)),
                # one run of one variant, as many as the locust master runs:
                # workers serve --variants times --runs runs
                *("--variants", "off", "--runs", "1"),
                *("--workdir", str(tmp_path / "workers")),
            ],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        master.wait_until(lambda: not master.running(), timeout=60, what="its end")
    except Exception:
        master.stop()
        raise
    assert workers.returncode == 0, workers.stdout + workers.stderr
    assert "run 1/1: 1 locust worker(s)" in workers.stdout
    locust = run.read_locust(tmp_path / "locust")
    assert locust.total is not None and locust.total.failures > 0
    assert set(locust.failures) == {"connection"}
