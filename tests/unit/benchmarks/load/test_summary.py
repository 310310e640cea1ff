"""The load report: locust's CSVs read back, the tables rendered, the
load shape's phases and locust's command lines."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchmarks.load import summary
from benchmarks.load.run import (
    REMOTE_WORKERS_CONNECT_S,
    LocustCommand,
    LocustWorkers,
    worker_command,
)
from benchmarks.load.shape import LoadProfile

STATS_HEADER = (
    "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,"
    "Min Response Time,Max Response Time,Average Content Size,Requests/s,Failures/s,"
    "50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%\n"
)
HISTORY_HEADER = (
    "Timestamp,User Count,Type,Name,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,"
    "99%,99.9%,99.99%,100%,Total Request Count,Total Failure Count,"
    "Total Median Response Time,Total Average Response Time,Total Min Response Time,"
    "Total Max Response Time,Total Average Content Size\n"
)


def _write_locust_csvs(prefix: Path) -> None:
    Path(f"{prefix}_stats.csv").write_text(
        STATS_HEADER
        + "POST,local test.ping [presence],100,7,180,200,50,900,120,3.3,0.2,"
        "180,200,220,240,300,450,600,800,900,900,900\n"
        + "POST,local_async test.version [all],10,3,150,160,100,300,90,0.3,0.1,"
        "150,160,170,180,200,250,300,300,300,300,300\n"
        + ",Aggregated,110,10,170,190,50,900,115,3.6,0.3,"
        "170,190,210,230,290,440,590,790,900,900,900\n"
    )
    Path(f"{prefix}_failures.csv").write_text(
        "Method,Name,Error,Occurrences,First Seen,Last Seen\n"
        "POST,local test.ping [presence],CatchResponseError('incomplete: minions missing'),4,1,2\n"
        "POST,local test.ping [presence],CatchResponseError('timeout: HTTP 504'),3,1,2\n"
        "POST,local_async test.version [all],"
        "\"CatchResponseError('overloaded: HTTP 503 master overloaded, retry later')\",3,1,2\n"
    )
    Path(f"{prefix}_stats_history.csv").write_text(
        HISTORY_HEADER
        + "100,0,,Aggregated,0,0,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,0,0,0,0,0,0,0\n"
        + "101,3,POST,/login,1,0,80,80,80,80,80,80,80,80,80,80,80,3,0,80,80,80,80,200\n"
        + "101,3,,Aggregated,2.5,0.5,170,190,210,230,290,440,590,790,900,900,900,50,5,170,190,50,900,115\n"
    )


def _run(tmp_path: Path, name: str = "on") -> summary.VariantRun:
    _write_locust_csvs(tmp_path / "locust")
    return summary.VariantRun(
        name=name,
        limiter=name,
        locust=summary.read_locust(tmp_path / "locust"),
        samples=[
            summary.ResourceSample(1.0, 40.0, 900.0, 20.0, 140.0, 50.0),
            summary.ResourceSample(2.0, 80.0, 950.0, 30.0, 150.0, 150.0),
        ],
        cost=summary.ApiCost(submissions=100, api_s=15.0, local_s=2.5),
        html_report="/tmp/x/on/locust.html",
    )


def test_read_locust_sums_failures_by_kind(tmp_path):
    result = summary.read_locust(_write_and(tmp_path))
    assert [e.name for e in result.endpoints] == [
        "local test.ping [presence]",
        "local_async test.version [all]",
    ]
    assert result.total is not None and result.total.requests == 110
    assert result.failures == {"incomplete": 4, "timeout": 3, "overloaded": 3}
    assert (
        result.failures_by_endpoint[("local_async test.version [all]", "overloaded")]
        == 3
    )
    assert [(p.t, p.users, p.rps, p.p95) for p in result.history] == [
        (100.0, 0, 0.0, None),
        (101.0, 3, 2.5, 440.0),
    ]


def _write_and(tmp_path: Path) -> Path:
    _write_locust_csvs(tmp_path / "locust")
    return tmp_path / "locust"


def test_read_locust_of_a_run_that_wrote_nothing(tmp_path):
    result = summary.read_locust(tmp_path / "never")
    assert result.endpoints == [] and result.total is None and result.failures == {}


def test_render_names_the_command_and_every_section(tmp_path):
    off_dir, on_dir = tmp_path / "off", tmp_path / "on"
    off_dir.mkdir(), on_dir.mkdir()
    runs = [_run(off_dir, "off"), _run(on_dir, "on")]
    context = summary.ReportContext(
        title="Load",
        command="nox -s load -- --minions 5 --name load-5",
        environment="Measured somewhere.",
        setup=["5 simulated minions"],
        plot="load-5-timeline.png",
    )
    text = summary.render(context, runs)
    assert "Regenerate: `nox -s load -- --minions 5 --name load-5`" in text
    assert (
        "| `local test.ping [presence]` | off #1 | 100 | 3.30 | 180 | 450 | 800 | 7 |"
        in text
    )
    # failures by kind, variants side by side; kinds never seen left out
    assert "| overloaded | 3 | 3 |" in text
    assert "| timeout | 3 | 3 |" in text
    assert "server_error |" not in text
    # CPU mean / peak, RSS peak, returns/s mean / peak
    assert "| on #1 | 60 / 80 | 950 | 25 / 30 | 150 | 100.0 / 150.0 | 2 |" in text
    assert "| on #1 | 100 | 15.00 | 2.50 | 150.0 | 25.0 | 6.00 |" in text
    assert "![timeline](load-5-timeline.png)" in text
    # a path outside the checkout is shown as it is
    assert "`/tmp/x/on/locust.html`" in text


def test_a_locust_report_in_the_checkout_is_named_relative_to_it(tmp_path):
    from benchmarks.report import CHECKOUT

    run = _run(tmp_path)
    run.html_report = str(CHECKOUT / ".saltfleet/load/load-5/on-1/locust.html")
    text = summary.render(
        summary.ReportContext("Load", "nox -s load", "env", []), [run]
    )
    assert (
        "Locust's own HTML reports: `.saltfleet/load/load-5/on-1/locust.html`." in text
    )
    assert str(CHECKOUT) not in text


def test_render_without_failures_or_cost(tmp_path):
    run = _run(tmp_path)
    run.locust.failures.clear()
    run.locust.failures_by_endpoint.clear()
    run.cost = None
    context = summary.ReportContext("Load", "nox -s load", "env", [])
    text = summary.render(context, [run])
    assert "No request failed." in text
    assert "Not measured in this run." in text


def test_profile_phases_and_their_users():
    profile = LoadProfile(
        users=10, spike_users=30, ramp_s=10, steady_s=20, spike_s=5, recover_s=5
    )
    assert profile.duration_s == 40
    ramp = profile.at(0)
    assert ramp is not None and (ramp.name, ramp.users, ramp.spawn_rate) == (
        "ramp",
        10,
        1.0,
    )
    assert profile.at(15).name == "steady"  # type: ignore[union-attr]
    spike = profile.at(31)
    assert spike is not None and (spike.name, spike.users) == ("spike", 30)
    assert spike.spawn_rate == 10.0  # 20 more users within SPIKE_ARRIVAL_S
    assert profile.at(36).users == 10  # type: ignore[union-attr]
    assert profile.at(40) is None


def test_phases_of_zero_seconds_are_left_out():
    profile = LoadProfile(
        users=3, spike_users=3, ramp_s=0, steady_s=5, spike_s=0, recover_s=0
    )
    assert [p.name for p in profile.phases()] == ["steady"]
    assert profile.describe() == "steady 5 s to 3 users"


def test_locust_command_lines(tmp_path):
    command = LocustCommand(
        host="http://127.0.0.1:8000",
        profile=LoadProfile(
            users=3, spike_users=5, ramp_s=1, steady_s=5, spike_s=2, recover_s=0
        ),
        out_prefix=tmp_path / "locust",
    )
    alone = command.headless()
    assert "--headless" in alone and "--csv-full-history" in alone
    assert ["--csv", str(tmp_path / "locust")] == alone[
        alone.index("--csv") : alone.index("--csv") + 2
    ]
    assert "--run-time=18s" in alone  # the shape's 8 s and a margin
    assert "--load-spike-users=5" in alone
    assert not any(a.startswith("--master") for a in alone)
    master = command.headless(
        LocustWorkers(local=1, remote=2, bind_host="0.0.0.0"), 5599
    )
    assert "--master" in master and "--expect-workers=3" in master
    assert (
        "--master-bind-port=5599" in master and "--master-bind-host=0.0.0.0" in master
    )
    # someone starts the remote workers by hand: the master waits longer
    assert f"--expect-workers-max-wait={REMOTE_WORKERS_CONNECT_S}" in master
    worker = worker_command("10.0.0.5", 5599)
    assert "--worker" in worker and "--master-host=10.0.0.5" in worker
    assert "--headless" not in worker
    # a console on pristine Salt does not poll the series' ratelimit runner
    assert "--salt-without-ratelimit" not in alone
    pristine = LocustCommand(
        host="http://127.0.0.1:8000",
        profile=command.profile,
        out_prefix=tmp_path / "locust",
        ratelimit_runner=False,
    )
    assert "--salt-without-ratelimit" in pristine.headless()


def test_where_the_locust_master_listens():
    assert LocustWorkers().describe() == "one process"
    assert (
        LocustWorkers(remote=2).master_port() == 5557
    )  # what workers elsewhere expect
    assert LocustWorkers(local=2, port=6000).master_port() == 6000
    assert LocustWorkers(local=1, remote=2).describe() == (
        "a locust master and 1 worker(s) on loopback and 2 on other machines"
    )


def _goal_run(
    name: str, p99: float, failures: dict[str, int], presence_failed: int = 0
) -> summary.VariantRun:
    from benchmarks.load.summary import PRESENCE, EndpointStats, LocustResult

    presence = EndpointStats(
        "POST", PRESENCE, 1000, presence_failed, 1.0, p99 / 2, p99, p99, 0.0
    )
    by_endpoint = {(PRESENCE, kind): count for kind, count in failures.items()}
    return summary.VariantRun(
        name, name, LocustResult([presence], None, failures, by_endpoint, [])
    )


def test_goals_are_the_limiter_on_runs_with_off_beside_them() -> None:
    from benchmarks.load.summary import goal_lines

    met = goal_lines(
        [
            _goal_run("off", 30000, {"timeout": 40}, presence_failed=40),
            _goal_run("on", 2000, {"overloaded": 50, "timeout": 5}, presence_failed=5),
        ]
    )
    assert met[0] == (
        "- failures other than the limiter's own 503 (of all requests) with the "
        "limiter on: 0.50 %, goal <= 1 %: met (off 4.00 %)"
    )
    assert met[1] == (
        "- presence checks answered in full within their timeout with the "
        "limiter on: 99.50 %, goal >= 99 %: met (off 96.00 %)"
    )
    assert met[3] == (
        "  - on #1: 5 of 1000 requests failed other than 503 (timeout 5); presence "
        "995 of 1000 answered (every presence request p50 / p99 1000 / 2000 ms)"
    )
    assert "x off" not in "\n".join(met)  # no ratio over a capped time
    missed = goal_lines(
        [_goal_run("on", 9000, {"timeout": 20, "incomplete": 3}, presence_failed=23)]
    )
    assert missed[0].endswith("goal <= 1 %: missed by 1.30 points")
    assert missed[1].endswith("goal >= 99 %: missed by 1.30 points")
    assert goal_lines([_goal_run("off", 1, {})]) == [
        "- the goals are the limiter-on run's: run it (--variants on or both)"
    ]


def test_over_runs_the_goals_are_judged_on_the_median() -> None:
    from benchmarks.load.summary import goal_lines

    runs = []
    # presence answered 99.5 %, 97 % and 99.2 %: the median run meets 99 %
    for number, failed in enumerate((5, 30, 8), start=1):
        run = _goal_run("on", 2000, {"timeout": failed}, presence_failed=failed)
        run.run = number
        runs.append(run)
    lines = goal_lines(runs)
    assert lines[1] == (
        "- presence checks answered in full within their timeout with the "
        "limiter on: median 99.20 % (97.00-99.50 %, 3 runs), goal >= 99 %: met"
    )
    assert [line.split(":")[0] for line in lines[2:]] == [
        "  - on #1",
        "  - on #2",
        "  - on #3",
    ]


def test_a_cost_the_master_did_not_answer_is_reported_not_lost(tmp_path):
    # the pools master did not answer salt-api's login within 120 s after the
    # load: the run's other numbers stand and the report says why
    failed = _run(tmp_path)
    failed.cost = None
    failed.cost_error = "POST http://127.0.0.1:1/login: timed out"
    context = summary.ReportContext("Load", "nox -s load", "env", [])
    text = summary.render(context, [failed])
    assert (
        "| on #1 | not measured: POST http://127.0.0.1:1/login: timed out "
        "| - | - | - | - | - |" in text
    )
    assert "Not measured in this run." not in text


def test_the_limiter_section_shows_its_budget_and_counts_unanswered_samples(
    tmp_path,
):
    from harness.ratelimit import NO_ANSWER, LimiterState

    on = _run(tmp_path)
    on.samples = [
        summary.ResourceSample(1.0, 40.0, 900.0, 20.0, 140.0, 50.0, limiter=state)
        for state in (
            LimiterState(queued=0, points=80, budget=100),
            LimiterState(queued=3, points=300, budget=310, cuts=0, delay=0.4),
            NO_ANSWER,  # the queue manager was too busy to answer this second
            LimiterState(queued=1, points=140, budget=155, cuts=1, delay=2.6),
        )
    ]
    context = summary.ReportContext("Load", "nox -s load", "env", [])
    text = summary.render(context, [on])
    assert "## The limiter" in text
    assert "| on #1 | 100 / 155 / 310 | 140 / 300 | 3 | 1 | 1.50 / 2.60 | 3 of 4 |" in (
        text
    )
    # a run without the limiter has no such section
    on.samples = [replace(s, limiter=None) for s in on.samples]
    assert "## The limiter" not in summary.render(context, [on])


def test_the_box_probe_is_shown_beside_each_run_and_a_dash_when_not_taken(
    tmp_path,
):
    probed = _run(tmp_path, "on")
    probed.cpu_probe_before_ms, probed.cpu_probe_after_ms = 31.24, 35.06
    older = _run(tmp_path, "off")  # a run recorded before the probe existed
    text = summary.resources_table([probed, older])
    assert "box probe ms before / after" in text
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()[2:]}
    assert rows["on #1"].rstrip(" |").endswith("31.2 / 35.1")
    assert rows["off #1"].rstrip(" |").endswith("-")
