"""calibration.quiet: waiting for the process's other threads (spinning ORT workers)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from calibration import quiet


def _task(tasks: Path, tid: int, state: str) -> None:
    (tasks / str(tid)).mkdir()
    # the command name may hold spaces and parentheses: the state follows the last ')'
    (tasks / str(tid) / "stat").write_text(f"{tid} (ort worker (x)) {state} 1 2 3\n")


def test_running_threads_are_counted_from_their_stat_lines(tmp_path):
    _task(tmp_path, threading.get_native_id(), "R")  # the caller itself never counts
    _task(tmp_path, 101, "R")
    _task(tmp_path, 102, "S")
    _task(tmp_path, 103, "R")
    (tmp_path / "104").mkdir()  # a thread that ended between the listing and the read
    assert quiet.other_running_threads(tmp_path) == 2


def test_waits_until_the_limit_while_another_thread_runs(tmp_path):
    _task(tmp_path, 101, "R")
    waited = quiet.wait_until_quiet(limit_s=0.05, tasks=tmp_path)
    assert 0.05 <= waited < 0.5


def test_returns_at_once_when_the_others_sleep(tmp_path):
    _task(tmp_path, 101, "S")
    assert quiet.wait_until_quiet(limit_s=1.0, tasks=tmp_path) < 0.05


def test_without_proc_a_fixed_pause_stands_in(tmp_path, monkeypatch):
    monkeypatch.setattr(quiet, "FALLBACK_S", 0.02)
    assert 0.02 <= quiet.wait_until_quiet(tasks=tmp_path / "absent") < 0.5


@pytest.mark.skipif(not quiet.TASKS.is_dir(), reason="needs Linux /proc")
def test_a_real_busy_thread_is_seen_and_a_sleeping_one_is_not():
    stop = threading.Event()

    def spin() -> None:  # numpy's matrix product runs without the GIL, as ORT's workers do
        a = np.ones((200, 200))
        while not stop.is_set():
            a @ a

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        time.sleep(0.01)
        assert quiet.wait_until_quiet(limit_s=0.05) >= 0.05
    finally:
        stop.set()
        worker.join()
    assert quiet.wait_until_quiet(limit_s=1.0) < 0.5
