"""The job-cache benchmark: its options, its medians, ratio and goal, the
report it writes, the worker's check of the job cache, and one small real
job through the worker."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import job_cache, job_cache_worker, report
from benchmarks.hostspeed import Probe
from benchmarks.job_cache import JobRun
from benchmarks.job_cache_worker import JobCacheConfig
from benchmarks.plain_options import JobCacheOptions, job_sizes

PRISTINE, SERIES = (v.name for v in job_cache.VARIANTS)


def test_the_reproduce_line_names_only_changed_settings() -> None:
    assert JobCacheOptions().minions == (100, 1000)
    assert JobCacheOptions().reproduce_command() == "nox -s bench -- job-cache"
    assert JobCacheOptions(minions=(20, 5000), runs=4).reproduce_command() == (
        "nox -s bench -- job-cache --minions 20,5000 --runs 4"
    )


def test_job_sizes_keep_their_order() -> None:
    assert job_sizes("1000,100") == (1000, 100)
    assert job_sizes("7") == (7,)


def _jobs(ms: dict[tuple[str, int], list[float]]) -> list[JobRun]:
    """One job per value: ``ms[(variant, minions)]`` in run order; the last
    tenth costs twice the mean."""
    return [
        JobRun(run, minions, variant, value, 2 * value, Probe(30.0 + run, 31.0 + run))
        for (variant, minions), values in ms.items()
        for run, value in enumerate(values, 1)
    ]


def test_a_result_is_ms_per_return_over_all_and_the_last_tenth() -> None:
    job = job_cache.of_result(
        2,
        1000,
        SERIES,
        {"cpu_s": 1.3, "returns": 1000, "last_cpu_s": 0.2, "last_returns": 100},
        Probe(30.0, 31.0),
    )
    assert job.ms_per_return == pytest.approx(1.3)
    assert job.last_ms_per_return == pytest.approx(2.0)
    assert (job.run, job.minions, job.variant) == (2, 1000, SERIES)


def test_the_ratio_is_of_the_medians_over_runs() -> None:
    jobs = _jobs(
        {
            (PRISTINE, 1000): [1.2, 1.3, 9.0],  # one disturbed run
            (SERIES, 1000): [0.3, 0.26, 0.2],
            (PRISTINE, 100): [0.4, 0.4, 0.4],
        }
    )
    assert job_cache.runs_of(jobs, PRISTINE, 1000).median == 1.3
    assert job_cache.runs_of(jobs, SERIES, 1000, last=True) == [0.6, 0.52, 0.4]
    assert job_cache.ratio(jobs, 1000) == pytest.approx(0.2)
    assert job_cache.ratio(jobs, 100) is None  # the series has no such job


@pytest.mark.parametrize(
    ("series_ms", "verdict"),
    [
        (0.5, "0.50x, goal <= 0.5x: met"),
        (0.2, "0.20x, goal <= 0.5x: met"),
        (0.8, "0.80x, goal <= 0.5x: missed by 0.30x"),
    ],
)
def test_the_goal_is_met_at_half_pristine_and_says_by_how_much_it_is_missed(
    series_ms: float, verdict: str
) -> None:
    jobs = _jobs({(PRISTINE, 1000): [1.0], (SERIES, 1000): [series_ms]})
    line = job_cache.goal_line(jobs)
    assert line.startswith("- series / pristine CPU per return at 1000 minions")
    assert line.endswith(verdict)


def test_the_goal_is_not_decided_without_a_job_of_1000_minions() -> None:
    jobs = _jobs({(PRISTINE, 20): [1.0], (SERIES, 20): [0.1]})
    assert job_cache.goal_line(jobs).endswith(
        "not decided, no job of 1000 minions measured (job sizes: 20)"
    )


def test_the_report_shows_each_size_variant_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    jobs = _jobs(
        {
            (PRISTINE, 100): [0.40, 0.42, 0.44],
            (SERIES, 100): [0.30, 0.30, 0.31],
            (PRISTINE, 1000): [1.30, 1.20, 1.40],
            (SERIES, 1000): [0.78, 0.80, 0.90],
        }
    )
    opts = JobCacheOptions(minions=(1000, 100), output_name="job-cache-test")
    path = job_cache.write_report(jobs, opts, commits="`HEAD` = abc series")
    text = path.read_text()
    assert path == tmp_path / "job-cache-test.md"
    assert "Regenerate: `nox -s bench -- job-cache --minions 1000,100 " in text
    assert "--output-name job-cache-test`" in text
    assert "Salt trees measured: `HEAD` = abc series." in text
    # sizes ascending whatever the order given; x pristine of the medians
    assert text.index("| 100 | pristine 3008.3 |") < text.index("| 1000 |")
    assert "| 1000 | pristine 3008.3 | 1.30 | 1.20-1.40 | 1.000 | 2.60 | 1.30 |" in (
        text
    )
    assert "| 1000 | series | 0.80 | 0.78-0.90 | 0.615 | 1.60 | 0.80 |" in text
    assert "0.62x, goal <= 0.5x: missed by 0.12x" in text
    assert "| 3 | 1000 | series | 0.90 | 1.80 | 33.0 / 34.0 |" in text
    assert "Box probe:" in text
    assert "![CPU per return by job size](job-cache-test.png)" in text
    assert (tmp_path / "job-cache-test.png").stat().st_size > 0
    data = json.loads((tmp_path / "job-cache-test.json").read_text())
    assert len(data["jobs"]) == 12
    assert data["jobs"][0]["probe"] == {"before_ms": 31.0, "after_ms": 32.0}
    assert report.from_plain(JobRun, data["jobs"][0]) == jobs[0]


def _stored(ids: list[str]) -> dict[str, dict[str, object]]:
    return {m: {"return": True, "retcode": 0, "success": True} for m in ids}


def _load(jid: str, ids: list[str]) -> dict[str, object]:
    return {**job_cache_worker.publish_load(jid), "Minions": sorted(ids)}


def test_a_whole_job_has_no_problems() -> None:
    ids = ["evil-2", "evil-1"]
    assert job_cache_worker.problems("1", ids, _stored(ids), _load("1", ids)) == []


def test_a_lost_return_and_an_overwritten_load_are_problems() -> None:
    ids = ["evil-1", "evil-2", "evil-3"]
    stored = _stored(ids[:1])
    stored["evil-2"] = {"return": False}
    # the return's load saved over the publication's: no target, no minions
    load = job_cache_worker.return_load("7", "evil-3")
    assert job_cache_worker.problems("7", ids, stored, load) == [
        "job 7: 1 of 3 returns missing from get_jid (first evil-3)",
        "job 7: 1 of 3 returns are not True (first evil-2)",
        "job 7: get_load tgt is None, the publication's '*'",
        "job 7: get_load tgt_type is None, the publication's 'glob'",
        "job 7: get_load arg is None, the publication's [1]",
        "job 7: get_load lists 0 minions, not the 3 published to",
    ]


def test_the_last_tenth_is_at_least_one_return() -> None:
    assert [job_cache_worker.last_count(n) for n in (1, 9, 10, 1000)] == [1, 1, 1, 100]


def test_a_small_job_through_the_worker_process(tmp_path: Path) -> None:
    """The worker, in a process of its own over the Salt this test imports,
    stores a job of 20 returns and leaves nothing of its master cache."""
    import salt
    from benchmarks.salt_trees import run_in_tree

    salt_tree = Path(salt.__file__).parent.parent
    where = tmp_path / "job"
    config = JobCacheConfig(workdir=str(where), minions=20, warmup=3)
    result = run_in_tree(
        "benchmarks.job_cache_worker", asdict(config), salt_tree, where
    )
    assert (result["returns"], result["last_returns"]) == (20, 2)
    assert 0 < result["last_cpu_s"] < result["cpu_s"]
    assert sorted(p.name for p in where.iterdir()) == ["config.json", "result.json"]


def test_a_worker_whose_cache_lost_the_returns_fails_and_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import salt.utils.job

    monkeypatch.setattr(salt.utils.job, "store_job", lambda *a, **k: None)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"workdir": str(tmp_path), "minions": 4, "warmup": 1}))
    assert job_cache_worker.main([str(config), str(tmp_path / "result.json")]) == 1
    assert capsys.readouterr().err.startswith(
        "job-cache worker: the job cache lost data: job "
    )
    assert not (tmp_path / "result.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
