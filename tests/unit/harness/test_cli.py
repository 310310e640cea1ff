"""The harness CLI refuses bad arguments with a message, never a traceback."""

from __future__ import annotations

import socket

import pytest

from harness.cli import main
from tests.conftest import usage_error


@pytest.mark.parametrize(
    "argv,message",
    [
        (["up", "--ret-port", "70000"], "port out of range"),
        (["up", "--publish-port", "abc"], "not a port number"),
        (["demo"], "invalid choice"),  # the tour is python -m tour now
        (["launch"], "invalid choice"),
        (["up", "--rate-limiting", "--slice-min-targets", "0"], "at least 1"),
    ],
)
def test_bad_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in usage_error(main, argv, capsys)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--slices"], "--slices needs --rate-limiting"),
        (["--slice-backlog", "2"], "--slice-backlog needs --rate-limiting"),
        (["--slice-target-delay", "1"], "--slice-target-delay needs --rate-limiting"),
        (["--slice-max-rate", "150"], "--slice-max-rate needs --rate-limiting"),
        (["--rate-limiting", "--slice-backlog", "0"], "more than 0 seconds"),
    ],
)
def test_bad_slice_options_are_refused_before_anything_starts(
    argv: list[str], message: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["up", "--root", str(tmp_path / "stack"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "stack").exists()


def test_a_slice_rate_of_zero_is_refused_by_the_parser(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--rate-limiting", "--slice-max-rate", "0"]
    with pytest.raises(SystemExit) as stopped:
        main(["up", "--root", str(tmp_path / "stack"), *argv])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--slice-max-rate: must be more than 0" in err
    assert "Traceback" not in err
    assert not (tmp_path / "stack").exists()


def test_status_without_a_stack(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--root", str(tmp_path)]) == 2
    assert "no stack is recorded" in capsys.readouterr().err


def test_taken_port_is_refused_before_anything_starts(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        code = main(["up", "--root", str(tmp_path / "stack"), "--ret-port", str(port)])
    assert code == 2
    assert f"ret port {port} on 127.0.0.1 is already in use" in capsys.readouterr().err
    assert not (tmp_path / "stack" / "postgres").exists()


def test_up_rate_limiting_keeps_salts_defaults_but_for_the_flags_given() -> None:
    from dataclasses import replace

    from harness.cli import _rate_limiting, build_parser
    from harness.ratelimit import RateLimiting

    words = ["up", "--rate-limiting", "--max-queue", "5", "--slice-min-targets", "20"]
    limiter = _rate_limiting(build_parser().parse_args(words))
    assert limiter == replace(
        RateLimiting(), max_queue=5, slices=True, slice_min_targets=20
    )
    assert _rate_limiting(build_parser().parse_args(["up"])) is None
    fixed = _rate_limiting(
        build_parser().parse_args(
            ["up", "--rate-limiting", "--slice-target-delay", "0"]
        )
    )
    assert fixed is not None
    # 0 is null in the master's configuration: a fixed budget
    assert fixed.master_options()["rate_limiting"]["slices"] == {"target_delay": None}
