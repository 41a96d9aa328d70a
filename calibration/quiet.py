"""Waiting for the process's other threads to stop running before a timed run.

onnxruntime gives each session its own intra-op thread pool, whose workers keep spinning
for tens of milliseconds after the session's last run. ``calibrate`` keeps every model
open and visits them in turn, so at two threads the previous model's spinning worker held
one of this 2-vCPU host's cores while the next model was timed: the reference model
(``calibration.reference``) ran at its one-thread speed in 19 of 20 rounds timed right
after three other sessions' runs, and at two-core speed in 19 of 20 after a 100 ms pause
(2026-12-07, docs/calibration.md "Our own spinning workers"). :func:`wait_until_quiet`
waits until no other thread of the process is runnable, which took 40 ms (median, at most
63) there; a user's deployment runs one session, whose workers are its own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

#: Where Linux lists the process's threads; elsewhere a fixed pause stands in.
TASKS = Path("/proc/self/task")
#: The longest wait (s): past it, timing goes on (a thread of the caller's own that runs).
LIMIT_S = 0.3
#: The pause (s) without ``/proc``: longer than the measured spinning.
FALLBACK_S = 0.1


def other_running_threads(tasks: Path = TASKS) -> int:
    """How many of the process's threads other than the caller's are running or runnable
    (state ``R`` in ``/proc/self/task/<tid>/stat``)."""
    me = threading.get_native_id()
    count = 0
    for entry in tasks.iterdir():
        if entry.name == str(me):
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        if stat[stat.rindex(")") + 2] == "R":
            count += 1
    return count


def wait_until_quiet(limit_s: float = LIMIT_S, tasks: Path = TASKS) -> float:
    """Sleep in 1 ms steps until no other thread of the process runs (at most
    ``limit_s``); the seconds waited."""
    begin = time.perf_counter()
    if not tasks.is_dir():
        time.sleep(FALLBACK_S)
        return time.perf_counter() - begin
    while other_running_threads(tasks) and time.perf_counter() - begin < limit_s:
        time.sleep(0.001)
    return time.perf_counter() - begin
