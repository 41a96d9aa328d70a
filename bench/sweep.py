"""Sweep throughput: points per second, serial vs local processes, on one 200-point sweep.

Run: ``python bench/sweep.py [--workers N] [--json]``

The sweep is the shipped Neurosurgeon map (``scenarios/sweeps/neurosurgeon_map.yaml``:
AlexNet, ``split_point`` between a phone and a cloud GPU, one request per point) widened to
25 uplink bandwidths x 8 one-way latencies = 200 points. In one run it times:

* ``prepare``: expansion and the validation of every swept value (done once, in the
  parent, whatever the executor; each point's scenario is made where it runs);
* ``serial``, ``processes`` (``--workers``, default every core) and ``serial --fast`` (the
  analytic estimate instead of the engine): running the 200 points into the table.

Each executor writes into a fresh folder, so nothing is resumed; the script checks that
serial and processes tables are identical and that the fast path's latency and decision
columns equal the engine's.
"""

from __future__ import annotations

import argparse
import json
import platform as host
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from simulator.sweep import prepare_sweep, run_prepared
from simulator.sweep.executors import default_workers

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "sweeps" / "neurosurgeon_map.yaml"
PARAMETERS = {
    "links.uplink.bandwidth_mbps": {"start": 10, "stop": 10000, "num": 25, "log": True},
    "links.uplink.latency_ms": [0.25, 0.5, 1, 1.5, 2, 3, 5, 10],
}


def timed(prepared, folder: Path, name: str) -> tuple[pd.DataFrame, float]:
    start = time.perf_counter()
    table = run_prepared(prepared, folder / name, quiet=True)
    return table, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()

    start = time.perf_counter()
    prepared = prepare_sweep(SCENARIO, PARAMETERS, executor="serial")
    prepare_s = time.perf_counter() - start
    n = len(prepared.tasks)
    spec = prepared.spec
    parallel = replace(
        prepared,
        spec=replace(spec, executor="processes", executor_options={"workers": args.workers}),
    )
    fast = replace(prepared, spec=replace(spec, fast=True))  # its tasks follow the spec
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        serial_table, serial_s = timed(prepared, folder, "serial")
        process_table, process_s = timed(parallel, folder, "processes")
        fast_table, fast_s = timed(fast, folder, "fast")
    pd.testing.assert_frame_equal(process_table, serial_table)
    for column in ("decision", "latency_mean_s", "throughput_rps"):
        pd.testing.assert_series_equal(fast_table[column], serial_table[column])

    rows = [
        ("prepare (expand + validate)", prepare_s),
        ("serial", serial_s),
        (f"processes ({args.workers} workers)", process_s),
        ("serial --fast", fast_s),
    ]
    print(f"sweep of {n} points: {SCENARIO.name} widened (25 bandwidths x 8 latencies)")
    print(f"machine: {host.python_implementation()} {host.python_version()}, {host.machine()}")
    for label, seconds in rows:
        print(f"  {label:<28} {seconds:8.2f} s  {n / seconds:8.1f} points/s")
    print(f"  processes / serial speed-up  {serial_s / process_s:8.2f} x")
    print(f"  fast / serial speed-up       {serial_s / fast_s:8.2f} x")
    print("  tables: processes == serial; fast path latency and decision == engine")
    if args.json:
        print(
            json.dumps(
                {
                    "points": n,
                    "workers": args.workers,
                    "prepare_s": prepare_s,
                    "serial_s": serial_s,
                    "processes_s": process_s,
                    "fast_s": fast_s,
                }
            )
        )


if __name__ == "__main__":
    main()
