"""Sweep throughput: points per second, serial vs local processes, on one 200-point sweep.

Run: ``python bench/sweep.py [--workers N] [--rounds R] [--bandwidths B] [--json]`` (it
times the checkout it lies in; ``--bandwidths`` narrows the sweep, for a smoke run).

The sweep is the shipped Neurosurgeon map (``scenarios/sweeps/neurosurgeon_map.yaml``:
AlexNet, ``split_point`` between a phone and a cloud GPU, one request per point) widened to
25 uplink bandwidths x 8 one-way latencies = 200 points. In one run it times:

* ``prepare``: expansion and the validation of every swept value (done once, in the
  parent, whatever the executor; each point's scenario is made where it runs);
* the 200 points run into the table with the engine and with the fast path (``--fast``:
  the analytic estimate instead of the engine), each ``serial`` and ``processes``
  (``--workers``, default every core); and ``serial --fast`` once more with the caches
  off (every point builds AlexNet again), to show what the caches save;
* making the 200 point scenarios alone (CPU ms per point), with and without the caches.

Each run writes into a fresh folder, so nothing is resumed. The runs are interleaved in
``--rounds`` rounds (default 2) and each keeps its best time: on a shared machine the load
changes between runs, and the best of a few is the figure least disturbed by it. The
load average is printed before and after, and each run's CPU seconds (this process and
the workers): on a loaded machine the wall-clock ratio says little, the CPU seconds say
what the workers cost beyond the serial run. The script checks that every table of one mode
is identical (serial, processes, caches off) and that the fast path's latency and decision
columns equal the engine's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform as host
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # time this checkout, not whichever socsim is installed

import pandas as pd  # noqa: E402

from simulator.spec.modelcache import MODEL_CACHE  # noqa: E402
from simulator.sweep import prepare_sweep, run_prepared  # noqa: E402
from simulator.sweep.execute import PLAN_CACHE, no_caches  # noqa: E402
from simulator.sweep.executors import default_workers  # noqa: E402

SCENARIO = ROOT / "scenarios" / "sweeps" / "neurosurgeon_map.yaml"
LATENCIES_MS = [0.25, 0.5, 1, 1.5, 2, 3, 5, 10]


def load_average() -> str:
    if not hasattr(os, "getloadavg"):
        return "unknown"
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the pool's workers)."""
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def timed(prepared, folder: Path, cached: bool = True) -> tuple[pd.DataFrame, float, float]:
    """The table, wall seconds and CPU seconds (all processes) of one run."""
    switch = contextlib.nullcontext() if cached else no_caches()
    MODEL_CACHE.clear()  # every run starts cold: no plan or model of an earlier run
    PLAN_CACHE.clear()
    start, start_cpu = time.perf_counter(), cpu_s()
    with switch:
        table = run_prepared(prepared, folder, quiet=True)
    return table, time.perf_counter() - start, cpu_s() - start_cpu


def making_ms(prepared, cached: bool = True) -> float:
    """CPU milliseconds per point to make every point's scenario (what a worker does
    before it runs a point), in this process."""
    MODEL_CACHE.clear()
    PLAN_CACHE.clear()
    with contextlib.nullcontext() if cached else no_caches():
        start = time.process_time()
        for point, values in enumerate(prepared.points):
            prepared.resolver.scenario(values, prepared.seeds[point])
        return (time.process_time() - start) / len(prepared.points) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (best kept)")
    parser.add_argument("--bandwidths", type=int, default=25, help="swept bandwidths (25)")
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()
    bandwidths = {"start": 10, "stop": 10000, "num": args.bandwidths, "log": True}
    parameters = {
        "links.uplink.bandwidth_mbps": bandwidths,
        "links.uplink.latency_ms": LATENCIES_MS,
    }

    load_before = load_average()
    start = time.perf_counter()
    prepared = prepare_sweep(SCENARIO, parameters, executor="serial")
    prepare_s = time.perf_counter() - start
    n = len(prepared.tasks)
    spec = prepared.spec
    parallel = replace(spec, executor="processes", executor_options={"workers": args.workers})
    runs = {  # label -> (prepared sweep, caches on); tasks follow the spec
        "serial": (prepared, True),
        "processes": (replace(prepared, spec=parallel), True),
        "serial --fast": (replace(prepared, spec=replace(spec, fast=True)), True),
        "processes --fast": (replace(prepared, spec=replace(parallel, fast=True)), True),
        "serial --fast, no caches": (replace(prepared, spec=replace(spec, fast=True)), False),
    }
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}  # CPU seconds of the best run
    tables: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for index, (label, (sweep, cached)) in enumerate(runs.items()):
                table, seconds, used = timed(sweep, Path(tmp) / f"{round_}-{index}", cached)
                tables.setdefault(label, table)
                if seconds < best.get(label, math.inf):
                    best[label], cpu[label] = seconds, used
    for label in ("processes",):
        pd.testing.assert_frame_equal(tables[label], tables["serial"])
    for label in ("processes --fast", "serial --fast, no caches"):
        pd.testing.assert_frame_equal(tables[label], tables["serial --fast"])
    for column in ("decision", "latency_mean_s", "throughput_rps"):
        pd.testing.assert_series_equal(tables["serial --fast"][column], tables["serial"][column])
    making = {  # CPU ms per point scenario (making only, no run), best of the rounds
        "cached": min(making_ms(prepared) for _ in range(args.rounds)),
        "no caches": min(making_ms(prepared, cached=False) for _ in range(args.rounds)),
    }
    load_after = load_average()

    ratios = {
        "processes / serial": best["serial"] / best["processes"],
        "fast processes / fast serial": best["serial --fast"] / best["processes --fast"],
        "fast serial / serial": best["serial"] / best["serial --fast"],
        "caches (fast serial)": best["serial --fast, no caches"] / best["serial --fast"],
    }
    print(f"sweep of {n} points: {SCENARIO.name} ({args.bandwidths} bandwidths x 8 latencies)")
    print(f"machine: {host.python_implementation()} {host.python_version()}, {host.machine()}")
    print(f"load average before: {load_before}; after: {load_after}")
    print(f"best of {args.rounds} interleaved round(s); processes with {args.workers} workers")
    print(f"  {'':<31} {'wall':>8}    {'points/s':>8}  {'CPU (all processes)':>20}")
    print(f"  {'prepare (expand + validate)':<31} {prepare_s:8.2f} s  {n / prepare_s:8.1f}")
    for label, seconds in best.items():
        print(f"  {label:<31} {seconds:8.2f} s  {n / seconds:8.1f}  {cpu[label]:18.2f} s")
    for label, ms in making.items():
        print(f"  making a point's scenario, {label:<10} {ms:6.2f} ms CPU")
    for label, ratio in ratios.items():
        print(f"  speed-up {label:<30} {ratio:6.2f} x")
    print("  tables: processes == serial (and without the caches); fast == engine")
    if args.json:
        print(
            json.dumps(
                {
                    "points": n,
                    "workers": args.workers,
                    "rounds": args.rounds,
                    "load_before": load_before,
                    "load_after": load_after,
                    "prepare_s": prepare_s,
                    "seconds": best,
                    "cpu_seconds": cpu,
                    "making_ms": making,
                    "ratios": ratios,
                }
            )
        )


if __name__ == "__main__":
    main()
