"""Response shapes of the simulated functions: what the master stores and the
CLI prints must look like a real 3008 minion's returns, including errors."""

from __future__ import annotations

import asyncio
import time

from evil_minions.functions import FUNCTIONS, JobOutcome, execute
from evil_minions.replay import ReplayEntry, ReplayStore

from .fakes import FakeMinion, publication, runtime


def run(minion, load, rt=None) -> JobOutcome:
    return asyncio.run(execute(minion, rt or runtime(), load))


def test_every_required_function_is_modelled():
    required = {
        "test.ping", "test.sleep", "grains.items", "grains.item", "grains.get",
        "pillar.items", "pillar.get", "saltutil.running", "saltutil.find_job",
        "state.apply", "state.highstate", "state.sls", "pkg.list_pkgs", "cmd.run",
    }  # fmt: skip
    assert required <= set(FUNCTIONS)


def test_ping():
    outcome = run(FakeMinion(), publication("test.ping"))
    assert outcome == JobOutcome(True, 0, None)
    assert outcome.success


def test_unavailable_function_answers_like_a_real_minion():
    outcome = run(FakeMinion(), publication("foo.bar"))
    assert outcome.ret == "'foo.bar' is not available."
    assert outcome.retcode == 1
    assert not outcome.success
    assert outcome.out == "nested"


def test_invalid_keyword_argument_is_salts_error():
    outcome = run(
        FakeMinion(), publication("test.ping", [{"bogus": 1, "__kwarg__": True}])
    )
    assert (
        outcome.ret
        == "ERROR executing 'test.ping': The following keyword arguments are not valid: bogus=1"
    )
    assert outcome.retcode == 1


def test_missing_positional_argument():
    outcome = run(FakeMinion(), publication("test.sleep"))
    # the first line as a real minion's (the rest is the docstring)
    assert outcome.ret.splitlines()[0] == (
        "Passed invalid arguments to test.sleep: sleep() missing 1 required "
        "positional argument: 'length'"
    )
    assert outcome.retcode == 1


def test_sleep_sleeps():
    start = time.monotonic()
    assert run(FakeMinion(), publication("test.sleep", [0.2])).ret is True
    assert time.monotonic() - start >= 0.2


def test_grains():
    minion = FakeMinion()
    assert run(minion, publication("grains.items")).ret == minion.grains
    assert run(minion, publication("grains.item", ["os", "nope"])).ret == {
        "os": minion.grains["os"],
        "nope": "",
    }
    assert (
        run(minion, publication("grains.get", ["ip4_interfaces:eth0"])).ret
        == minion.grains["ip4_interfaces"]["eth0"]
    )
    assert (
        run(minion, publication("grains.get", ["nope", "fallback"])).ret == "fallback"
    )


def test_pillar_items_always_asks_the_master():
    minion = FakeMinion(pillar={"a": 1})
    assert run(minion, publication("pillar.items", ["unmask=True"])).ret == {"a": 1}
    assert run(minion, publication("pillar.items", ["unmask=True"])).ret == {"a": 1}
    assert len(minion.pillar_fetches) == 2


def test_pillar_get_uses_the_in_memory_pillar():
    minion = FakeMinion(pillar={"nested": {"key": "v"}})
    get = publication("pillar.get", ["nested:key", "unmask=True"])
    assert run(minion, get).ret == "v"
    default = publication("pillar.get", ["nested:missing", "d", "unmask=True"])
    assert run(minion, default).ret == "d"
    assert len(minion.pillar_fetches) == 1


def test_pillar_values_are_masked_unless_unmasked_as_in_salt_3008():
    minion = FakeMinion(pillar={"a": "secret", "n": {"k": 1, "empty": ""}})
    masked = {"a": "**********", "n": {"k": "**********", "empty": ""}}
    assert run(minion, publication("pillar.items")).ret == masked
    assert run(minion, publication("pillar.item", ["a"])).ret == {"a": "**********"}
    assert run(minion, publication("pillar.get", ["n:k"])).ret == "**********"


def test_saltutil_running_and_find_job_report_in_flight_jobs():
    minion = FakeMinion()
    sleeping = publication("test.sleep", [5], jid="20260101000000000001")
    minion.jobs.start(sleeping)
    running = run(
        minion, publication("saltutil.running", jid="20260101000000000002")
    ).ret
    assert [job["jid"] for job in running] == ["20260101000000000001"]
    assert running[0]["fun"] == "test.sleep" and "pid" in running[0]
    found = run(minion, publication("saltutil.find_job", ["20260101000000000001"])).ret
    assert found["arg"] == [5]
    assert (
        run(minion, publication("saltutil.find_job", ["20990101000000000000"])).ret
        == {}
    )


def test_state_apply_returns_highstate_format():
    outcome = run(FakeMinion(), publication("state.apply", ["web"]))
    assert outcome.retcode == 0 and outcome.out == "highstate"
    assert len(outcome.ret) == 4
    for key, chunk in outcome.ret.items():
        assert key.count("_|-") == 3
        assert chunk["result"] is True
        assert chunk["__sls__"] == "web"
        assert {
            "name",
            "changes",
            "comment",
            "duration",
            "start_time",
            "__run_num__",
            "__id__",
        } <= set(chunk)
    assert sorted(c["__run_num__"] for c in outcome.ret.values()) == [0, 1, 2, 3]


def test_state_test_mode_has_no_results():
    outcome = run(
        FakeMinion(),
        publication("state.highstate", [{"test": True, "__kwarg__": True}]),
    )
    assert all(chunk["result"] is None for chunk in outcome.ret.values())


def test_a_second_state_run_is_refused_while_one_runs():
    minion = FakeMinion()
    minion.jobs.start(publication("state.apply", jid="20260101000000000001"))
    outcome = run(minion, publication("state.sls", ["web"], jid="20260101000000000002"))
    assert outcome.retcode == 1
    assert outcome.ret[0].startswith('The function "state.apply" is running as PID')
    assert outcome.ret[0].endswith("with jid 20260101000000000001")


def test_pkg_list_pkgs():
    minion = FakeMinion()
    assert run(minion, publication("pkg.list_pkgs")).ret == minion.packages.list_pkgs()


def test_cmd_run():
    minion = FakeMinion()
    assert (
        run(minion, publication("cmd.run", ["echo hello world"])).ret == "hello world"
    )
    assert (
        run(minion, publication("cmd.run", ["hostname"])).ret == minion.grains["host"]
    )
    assert run(minion, publication("cmd.run", ["false"])).retcode == 1
    exited = run(minion, publication("cmd.run", ["exit 3"]))
    assert (exited.ret, exited.retcode, exited.success) == ("", 3, False)


def _store() -> ReplayStore:
    return ReplayStore(
        "real-1",
        [
            ReplayEntry(
                "network.interfaces",
                [],
                {},
                {"eth0": {"hwaddr": "x", "host": "real-1"}},
            ),
            ReplayEntry("test.ping", [], {}, "replayed"),
        ],
    )


def test_replay_answers_unmodelled_functions_with_own_id():
    rt = runtime()
    rt.replay = _store()
    outcome = run(FakeMinion("evil-0009"), publication("network.interfaces"), rt)
    assert outcome.ret == {"eth0": {"hwaddr": "x", "host": "evil-0009"}}
    assert outcome.retcode == 0


def test_modelled_functions_win_over_replay_unless_replay_first():
    rt = runtime()
    rt.replay = _store()
    assert run(FakeMinion(), publication("test.ping"), rt).ret is True
    rt.replay_first = True
    assert run(FakeMinion(), publication("test.ping"), rt).ret == "replayed"


# -- failures as a real 3008 minion reports them -------------------------------------


def _kwarg(**kwargs):
    return [dict(kwargs, __kwarg__=True)]


def test_pillar_errors_refuse_every_state_run_with_retcode_5():
    errors = ["Rendering SLS 'broken' failed, render error: boom"]
    for load in (
        publication("state.apply"),
        publication("state.highstate"),
        publication("state.sls", ["web"]),
        publication("state.apply", ["web", *_kwarg(test=True)]),
    ):
        outcome = run(FakeMinion(pillar={"_errors": errors}), load)
        assert outcome.ret == [
            "Pillar failed to render with the following messages:",
            *errors,
        ]
        assert outcome.retcode == 5 and not outcome.success
        assert outcome.out == "highstate"


def test_force_runs_states_despite_pillar_errors():
    minion = FakeMinion(pillar={"_errors": ["boom"]})
    outcome = run(minion, publication("state.apply", _kwarg(force=True)))
    assert outcome.retcode == 0 and isinstance(outcome.ret, dict)


def test_a_pillar_override_that_is_no_dict_is_salts_invocation_error():
    outcome = run(FakeMinion(), publication("state.apply", _kwarg(pillar="a=b")))
    assert outcome.ret == (
        "ERROR executing 'state.apply': Pillar data must be formatted as a "
        "dictionary, unless pillar_enc is specified."
    )
    assert (outcome.retcode, outcome.success, outcome.out) == (1, False, "nested")
