"""ManagedProcess start-up is not interrupted half-way by Ctrl-C."""

from __future__ import annotations

import os
import signal
import time

import pytest

from harness.processes import signals_deferred


def test_ctrl_c_during_a_start_arrives_after_it() -> None:
    finished = False
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # a handler would have run by now
        finished = True
    assert finished
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
