"""Seeded kill points: a sweep stopped anywhere resumes to the table of an uninterrupted
run, with no row lost, repeated or mixed in; killed workers do not outlive their parent."""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from bench_loader import load_bench
from faults.sweep_helpers import CrashError, crash_after, env, small_sweep

from simulator.sweep import run_sweep
from simulator.sweep.journal import Shape, scan
from simulator.sweep.store import JOURNAL, SweepStore, _read_meta

sweep_resume = load_bench("sweep_resume")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    path = small_sweep(folder)
    return path, run_sweep(path, folder / "out", quiet=True)


def journal_scan(out: Path):
    meta = _read_meta(out / "sweep.json", out)
    return scan(out / JOURNAL, Shape(meta["fingerprint"], meta["points"], meta["replicates"]))


@pytest.mark.parametrize("seed", range(24))
def test_a_sweep_crashed_at_a_seeded_point_resumes_to_the_uninterrupted_table(
    reference, tmp_path, seed
):
    path, expected = reference
    rng = random.Random(seed)
    out = tmp_path / "out"
    notes: list[str] = []
    for _ in range(rng.choice([1, 2])):  # one crash, or two in a row
        batch = rng.choice([1, 2, 3])
        writes = rng.randrange(0, math.ceil(8 / batch))
        torn = rng.choice([None, rng.uniform(0.05, 0.95)])
        with pytest.MonkeyPatch.context() as patch:
            crash_after(patch, writes, torn)
            with contextlib.suppress(CrashError):  # no crash when `writes` is past the end
                run_sweep(path, out, quiet=True, batch_size=batch, notify=notes.append)
    table = run_sweep(path, out, quiet=True, notify=notes.append)
    pd.testing.assert_frame_equal(table, expected)
    found = journal_scan(out)
    assert not found.bad and found.torn_at is None and len(found.done) == 8
    assert all("torn last line" in note for note in notes)


def _children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(condition, limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG")
@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_of_the_parent_alone_reaps_its_workers_and_the_sweep_resumes(tmp_path, seed):
    points = 64
    scenario = sweep_resume.write_scenario(tmp_path, points)
    reference = run_sweep(scenario, tmp_path / "reference", quiet=True, executor="serial")
    out = tmp_path / "killed"
    command = sweep_resume.sweep_command(scenario, out, workers=2)
    process = subprocess.Popen(
        command, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    kill_at = random.Random(seed).randrange(1, points // 2)
    try:
        assert _wait_for(
            lambda: sweep_resume.journal_lines(out) >= kill_at or process.poll() is not None, 120
        )
        workers = _children(process.pid)
        os.kill(process.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
    finally:
        process.wait()
    assert workers  # the processes executor had started its workers
    # the kernel kills them with their parent (a generous bound: the machine may be loaded)
    assert _wait_for(lambda: not any(_alive(w) for w in workers), 30)
    # the dead parent's lock is released: the resume takes it
    subprocess.run(command, env=env(), check=True, stdout=subprocess.DEVNULL)
    resumed = pd.read_csv(out / "sweep.csv")
    pd.testing.assert_frame_equal(resumed, pd.read_csv(tmp_path / "reference" / "sweep.csv"))
    assert len(reference) == points and journal_scan(out).done == {(p, 0) for p in range(points)}


def test_the_store_lock_outlives_nothing_but_its_process(tmp_path):
    store = SweepStore(tmp_path)
    store.lock()
    store.close()
    SweepStore(tmp_path).lock()  # released: a new taker gets it
