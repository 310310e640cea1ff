"""ManagedProcess start-up is not interrupted half-way by Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from harness.processes import remove_tree, signals_deferred


def test_ctrl_c_during_a_start_arrives_after_it() -> None:
    finished = False
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # a handler would have run by now
        finished = True
    assert finished
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_stack_directory_made_again_after_its_removal_is_removed_and_named(
    tmp_path,
) -> None:
    root = tmp_path / "saltfleet-load-x"
    (root / "master" / "cache" / "master").mkdir(parents=True)

    def straggler() -> None:  # a process of the stopped stack, writing late
        while root.exists():
            time.sleep(0.01)
        time.sleep(0.3)
        (root / "master" / "cache" / "master").mkdir(parents=True)

    writer = threading.Thread(target=straggler)
    writer.start()
    said: list[str] = []
    remove_tree(root, said.append, settle_s=1.5)
    writer.join()

    assert not root.exists()
    assert len(said) == 1
    assert "came back after its removal (master, master/cache" in said[0]


def test_a_directory_that_stays_gone_is_removed_quietly(tmp_path) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    said: list[str] = []
    remove_tree(root, said.append, settle_s=0.3)
    assert not root.exists() and said == []
