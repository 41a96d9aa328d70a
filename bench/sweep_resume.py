"""A large sweep killed part-way and resumed: no row lost or duplicated, and the table
equals the one of an uninterrupted run.

Run ``python bench/sweep_resume.py`` (one command; ``--points N`` (a square number,
default 10,000), ``--workers W`` (default 2), ``--kill-at F`` (fraction of rows
journaled before the kill, default 0.4)). Steps, each timed:

1. write a cheap scenario (a phone with two units, a 3-op inline model, one request per
   point) whose ``sweep:`` section is a √N × √N grid over the two units' speeds;
2. run ``socsim sweep`` to the end (the reference), executor ``processes``;
3. run the same command into a fresh folder in its own process group, and SIGKILL the
   whole group (parent and workers) once the journal holds ``F × N`` rows;
4. run the same command again (it resumes), to the end;
5. check the journal (every (point, replicate) exactly once; the resume drops the one
   line a kill may cut short) and compare the table with the reference, column by column.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent


def write_scenario(folder: Path, points: int) -> Path:
    """The cheap scenario with a √points × √points grid sweep; returns its path."""
    side = math.isqrt(points)
    if side * side != points:
        raise SystemExit(f"--points must be a square number, got {points}")
    document = {
        "name": "sweep_resume",
        "seed": 7,
        "nodes": {
            "phone": {
                "role": "device",
                # compute-bound units and free copies, said (no assumption warning for them)
                "shared_memory_bandwidth_gb_s": "unbounded",
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "peak_gflops": {"fp32": 5},
                        "memory_bandwidth_gb_s": "unbounded",
                        "idle_w": 0.1,
                        "active_w": 1,
                    },
                    "gpu": {
                        "kind": "gpu",
                        "peak_gflops": {"fp32": 20},
                        "memory_bandwidth_gb_s": "unbounded",
                        "idle_w": 0.2,
                        "active_w": 2,
                    },
                },
            }
        },
        "models": {
            "m": {
                "ops": [
                    {"name": "a", "kind": "conv", "flops": 2e6, "output_elems": 1000},
                    {"name": "b", "kind": "conv", "flops": 4e6, "output_elems": 1000},
                    {"name": "c", "kind": "fc", "flops": 1e6, "output_elems": 10},
                ],
                "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "poisson", "rate_hz": 100},
                "count": 2,
            }
        ],
        "placement": {"policy": "greedy_eft"},
        "sweep": {
            "parameters": {
                "nodes.phone.units.cpu.peak_gflops.fp32": {"start": 1, "stop": 50, "num": side},
                "nodes.phone.units.gpu.peak_gflops.fp32": {"start": 2, "stop": 200, "num": side},
            }
        },
    }
    path = folder / "sweep_resume.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def sweep_command(scenario: Path, out: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "simulator.cli",
        "sweep",
        str(scenario),
        "-o",
        str(out),
        "--executor",
        "processes",
        "--workers",
        str(workers),
        "-q",
    ]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def journal_lines(out: Path) -> int:
    path = out / "rows.jsonl"
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def run_and_kill(command: list[str], out: Path, kill_at_rows: int, timeout_s: float) -> int:
    """Start ``command`` in its own process group; SIGKILL the group once the journal
    has ``kill_at_rows`` lines. Returns the lines seen at the kill."""
    process = subprocess.Popen(
        command,
        env=_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout_s
    try:
        while journal_lines(out) < kill_at_rows:
            if process.poll() is not None:
                raise RuntimeError("the sweep finished before it could be killed")
            if time.monotonic() > deadline:
                raise RuntimeError("the sweep did not reach the kill point in time")
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)  # the parent and every worker
    finally:
        process.wait()
    return journal_lines(out)


def check_journal(out: Path, points: int) -> dict:
    """Every (point, replicate) exactly once in the journal (a cut line is not a row)."""
    keys, cut = [], 0
    with (out / "rows.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)["row"]  # {fingerprint, hash, row}: journal.py
            except json.JSONDecodeError:
                cut += 1
                continue
            keys.append((row["point"], row["replicate"]))
    return {
        "rows": len(keys),
        "distinct": len(set(keys)),
        "cut_lines": cut,
        "complete": set(keys) == {(p, 0) for p in range(points)},
    }


def kill_and_resume(folder: Path, points: int, workers: int, kill_at: float) -> dict:
    """The whole experiment in ``folder``; returns its figures and checks."""
    scenario = write_scenario(folder, points)
    figures: dict = {"points": points, "workers": workers}
    start = time.perf_counter()
    subprocess.run(
        sweep_command(scenario, folder / "reference", workers),
        env=_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    figures["uninterrupted_s"] = round(time.perf_counter() - start, 2)
    out = folder / "killed"
    command = sweep_command(scenario, out, workers)
    start = time.perf_counter()
    figures["rows_at_kill"] = run_and_kill(
        command, out, int(points * kill_at), timeout_s=10 * figures["uninterrupted_s"] + 60
    )
    figures["until_kill_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    subprocess.run(command, env=_env(), check=True, stdout=subprocess.DEVNULL)
    figures["resume_s"] = round(time.perf_counter() - start, 2)
    figures["journal"] = check_journal(out, points)
    reference = pd.read_csv(folder / "reference" / "sweep.csv")
    resumed = pd.read_csv(out / "sweep.csv")
    pd.testing.assert_frame_equal(reference, resumed, check_exact=True)
    figures["tables_equal"] = True
    figures["ok_rows"] = int((resumed["status"] == "ok").sum())
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-at", type=float, default=0.4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        figures = kill_and_resume(Path(tmp), args.points, args.workers, args.kill_at)
    journal = figures["journal"]
    print(f"sweep of {args.points:,} points, processes executor, {args.workers} workers")
    print(f"  uninterrupted run            {figures['uninterrupted_s']:>9.2f} s")
    print(
        f"  killed (SIGKILL to the group) {figures['until_kill_s']:>8.2f} s after start, "
        f"{figures['rows_at_kill']:,} journal lines"
    )
    print(f"  resume to the end            {figures['resume_s']:>9.2f} s")
    print(
        f"  journal: {journal['rows']:,} rows, {journal['distinct']:,} distinct, "
        f"{journal['cut_lines']} cut line(s), every point once: {journal['complete']}"
    )
    print(f"  table equals the uninterrupted one: {figures['tables_equal']}")
    print(json.dumps({"bench": "sweep_resume", **figures}))
    ok = journal["complete"] and journal["rows"] == journal["distinct"] == args.points
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
