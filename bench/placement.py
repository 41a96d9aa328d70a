"""Runtime of placement policies on random layered DAGs of 100, 1,000 and 10,000 ops.

Run: ``python bench/placement.py [--sizes 100 1000 10000] [--repeat 3] [--cpu] [--json]
[--online-requests 1000]``

Each policy is timed on the same DAGs in one run (median of ``--repeat``), on a platform
of a phone with five units plus an edge server over a Wi-Fi-like link. Every timed call
gets a fresh cost oracle, so it pays for costing every (op, unit) as a first placement
does (an oracle remembers op times). ``--cpu`` times CPU (``time.process_time``), which a
shared machine distorts less than wall time. Besides seconds,
it prints µs per op and the growth ratio between consecutive sizes (10x ops), which is
what says whether a policy scales: ~10 is linear, ~100 quadratic.

Online HEFT (``{policy: heft, online: true}``) plans every request at its arrival: it
prints the cost of one such plan on the smallest DAG, for ``--online-requests``
requests arriving every half of a lone request's makespan (so about two overlap), as
the median µs per request over the first and the last tenth of them (whether planning
slows as reservations pile up) and per op.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import statistics
import time

import numpy as np

from simulator.graph import Edge, ModelGraph, Op
from simulator.hardware import ComputeUnit, Node
from simulator.network import Link
from simulator.placement import POLICIES
from simulator.placement.online import OnlineHeft
from simulator.platform import CostOracle, Platform

#: policies too slow for the largest DAGs (none since split_point evaluates all cuts in
#: one pass)
MAX_OPS: dict[str, int] = {}

POLICY_OPTIONS = {
    "heft": {},
    "cpop": {},
    "peft": {},
    "greedy_eft": {},
    "min_cut": {"device": "phone.gpu", "remote": "edge.gpu"},
    "split_point": {"device": "phone.gpu", "remote": "edge.gpu"},
}


def random_dag(n_ops: int, seed: int = 0, fan_in: int = 2, window: int = 20) -> ModelGraph:
    """A DAG where op j reads up to ``fan_in`` of the ``window`` ops before it."""
    rng = np.random.default_rng(seed)
    ops = [
        Op(
            f"op{i}",
            "conv",
            flops=float(rng.uniform(1e5, 5e7)),
            input_elems=int(rng.integers(1_000, 50_000)),
            output_elems=int(rng.integers(1_000, 50_000)),
            params=int(rng.integers(0, 100_000)),
            parallel_fraction=0.9,
        )
        for i in range(n_ops)
    ]
    edges = []
    for j in range(1, n_ops):
        for i in sorted(set(rng.integers(max(0, j - window), j, size=fan_in).tolist())):
            edges.append(Edge(f"op{i}", f"op{j}", ops[i].output_bytes))
    return ModelGraph(f"dag{n_ops}", ops, edges)


def bench_platform() -> Platform:
    def unit(name, kind, gflops, cores=1):
        return ComputeUnit(
            name,
            kind,
            peak_flops={"fp32": gflops * 1e9},
            efficiency={"default": 0.5},
            memory_bandwidth_bytes_per_s=30e9,
            dispatch_s=10e-6,
            cores=cores,
            idle_w=0.05,
            active_w=2.0,
        )

    phone = Node(
        "phone",
        "device",
        (
            unit("cpu_big", "cpu", 30, 4),
            unit("cpu_little", "cpu", 10, 4),
            unit("gpu", "gpu", 500),
            unit("dsp", "dsp", 300),
            unit("npu", "npu", 2000),
        ),
        sync_s=100e-6,
        shared_memory_bandwidth_bytes_per_s=20e9,
    )
    edge = Node("edge", "edge", (unit("gpu", "gpu", 8000),))
    return Platform([phone, edge], [Link("wlan", "phone", "edge", 2e-3, 50e6, 50e6)])


def median_of(repeat: int, run, clock=time.perf_counter) -> float:
    """Median time of ``repeat`` runs (s): steadier than the best on a shared machine."""
    times = []
    for _ in range(repeat):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times)


def online_plan_times(graph: ModelGraph, platform: Platform, requests: int, clock) -> list:
    """Seconds each of ``requests`` online HEFT plans took (arrivals every half makespan)."""
    heft = OnlineHeft({"app": (graph, "phone", {})}, CostOracle(platform))
    gap_s = OnlineHeft({"app": (graph, "phone", {})}, CostOracle(platform)).plan("app", 0.0)
    gap_s = gap_s.finish_s / 2
    times = []
    for k in range(requests):
        start = clock()
        heft.plan("app", k * gap_s)
        times.append(clock() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", action="store_true", help="CPU time instead of wall time")
    parser.add_argument("--json", action="store_true", help="print one JSON line as well")
    parser.add_argument(
        "--online-requests", type=int, default=1000, help="requests online HEFT plans"
    )
    args = parser.parse_args()
    platform = bench_platform()
    clock = time.process_time if args.cpu else time.perf_counter
    graphs = {n: random_dag(n) for n in args.sizes}
    policies = [p for p in POLICY_OPTIONS if p in POLICIES]
    load = f"; load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    kind = "CPU" if args.cpu else "wall"
    print(
        f"python {host.python_version()} on {host.machine()}; {kind} time, median of "
        f"{args.repeat}{load}"
    )
    print(f"{'policy':<12}" + "".join(f"{n:>16,} ops" for n in args.sizes) + "   growth per 10x")
    results = {}
    for name in policies:
        function = POLICIES.get(name).function
        row = {}
        for n, graph in graphs.items():
            if n > MAX_OPS.get(name, n):
                row[n] = float("nan")
                continue
            repeat = args.repeat if n <= 1000 else 1
            options = POLICY_OPTIONS[name]
            row[n] = median_of(
                repeat,
                lambda f=function, g=graph, o=options: f(g, CostOracle(platform), "phone", o),
                clock,
            )
        results[name] = row
        cells = "".join(
            f"{'skipped':>19}"
            if row[n] != row[n]
            else f"{row[n]:>11.3f} s {row[n] / n * 1e6:>5.0f}µ"
            for n in args.sizes
        )
        growth = ", ".join(
            f"{row[b] / row[a]:.1f}x"
            for a, b in zip(args.sizes, args.sizes[1:], strict=False)
            if row[a] == row[a] and row[b] == row[b]
        )
        print(f"{name:<12}{cells}   {growth}")
    print("(cells: seconds per placement, and µs per op)")
    n = min(args.sizes)
    times = online_plan_times(graphs[n], platform, args.online_requests, clock)
    tenth = max(len(times) // 10, 1)
    first, last = statistics.median(times[:tenth]), statistics.median(times[-tenth:])
    print(
        f"online heft, {n:,}-op DAG, {len(times):,} requests: {first * 1e6:,.0f} µs per "
        f"request planned over the first tenth, {last * 1e6:,.0f} µs over the last "
        f"({last / n * 1e6:.1f} µs per op; {last / first:.2f}x)"
    )
    online = {"ops": n, "requests": len(times), "first_s": first, "last_s": last}
    if args.json:
        print(json.dumps({"seconds": results, "online_heft": online}))


if __name__ == "__main__":
    main()
