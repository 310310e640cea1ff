"""JobTracker: job slots and the in-flight records behind saltutil.running."""

from __future__ import annotations

import asyncio

from evil_minions.jobs import JobTracker


def test_records_and_lookup():
    jobs = JobTracker()
    record = jobs.start({"jid": "1", "fun": "state.apply", "arg": []})
    assert record["pid"] > 0
    jobs.start({"jid": "2", "fun": "test.sleep", "arg": [1]})
    assert [j["jid"] for j in jobs.running()] == ["1", "2"]
    assert jobs.find("2")["fun"] == "test.sleep"
    assert [j["jid"] for j in jobs.running_states(exclude_jid="3")] == ["1"]
    assert jobs.running_states(exclude_jid="1") == []
    jobs.finish("1")
    assert jobs.find("1") == {} and len(jobs) == 1


def test_slots_limit_concurrency_and_exempt_jobs_skip_the_queue():
    async def scenario():
        jobs = JobTracker(max_concurrent=2)
        active = 0
        peak = 0

        async def job():
            nonlocal active, peak
            async with jobs.slot():
                active += 1
                peak = max(peak, active)
                await asyncio.sleep(0.05)
                active -= 1

        tasks = [asyncio.create_task(job()) for _ in range(5)]
        await asyncio.sleep(0.01)
        waiting = jobs.waiting
        async with jobs.slot(exempt=True):
            exempt_ran = True
        await asyncio.gather(*tasks)
        return peak, waiting, exempt_ran

    peak, waiting, exempt_ran = asyncio.run(scenario())
    assert peak == 2 and waiting == 3 and exempt_ran


def test_peak_counts_waiting_and_running_jobs_but_not_exempt_ones() -> None:
    async def scenario() -> tuple[int, int]:
        tracker = JobTracker(max_concurrent=1)
        release = asyncio.Event()

        async def job(exempt: bool = False) -> None:
            async with tracker.slot(exempt=exempt):
                await release.wait()

        tasks = [asyncio.ensure_future(job()) for _ in range(3)]
        tasks.append(asyncio.ensure_future(job(exempt=True)))
        await asyncio.sleep(0.01)
        during = tracker.in_flight
        release.set()
        await asyncio.gather(*tasks)
        return during, tracker.peak

    during, peak = asyncio.run(scenario())
    assert (
        during == 3
    )  # one running, two waiting for the slot; the exempt one not counted
    assert peak == 3
