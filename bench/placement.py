"""Runtime of placement policies on random layered DAGs of 100, 1,000 and 10,000 ops.

Run: ``python bench/placement.py [--sizes 100 1000 10000] [--repeat 3] [--cpu] [--json]
[--online-requests 1000]``

The run-time schedulers (``met``, ``eft``, ``etf``, ``stf``, ``etf_lb``: each op's unit
decided in the engine as it becomes ready) are timed apart, inside a simulated run:
:data:`RUNTIME_REQUESTS` requests of a :data:`RUNTIME_OPS`-op DAG of the same kind on the
same platform, arriving together so every decision sees a loaded platform. It prints
µs per decision: the engine's whole decision (snapshot, rule, booking), the rule alone
(replayed on the snapshots the run gave it), and the run's time per op against the same
run with the provisional static plan (each op on its fastest unit). The first figure
is the one the limit of 20 µs applies to: the snapshot (per candidate unit, when the
inputs would be there; per unit, when it is free) and the rule; moving the inputs
after the decision is what a static plan's run does too.

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
from dataclasses import replace

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


RUNTIME_RULES_TIMED = ("met", "eft", "etf", "stf", "etf_lb")
RUNTIME_OPS = 200
RUNTIME_REQUESTS = 30


def runtime_document(graph: ModelGraph, policy: str, requests: int) -> dict:
    """The bench platform and ``graph`` as a scenario document (``requests`` at t = 0)."""

    def unit(kind, gflops, cores=1):
        return {
            "kind": kind,
            "peak_gflops": {"fp32": gflops},
            "efficiency": {"default": 0.5},
            "memory_bandwidth_gb_s": 30,
            "dispatch_us": 10,
            "cores": cores,
            "idle_w": 0.05,
            "active_w": 2.0,
        }

    ops = [
        {
            "name": op.name,
            "kind": op.kind,
            "flops": op.flops,
            "input_elems": op.input_elems,
            "output_elems": op.output_elems,
            "params": op.params,
            "parallel_fraction": op.parallel_fraction,
        }
        for op in graph
    ]
    edges = [{"src": e.src, "dst": e.dst} for e in graph.edges()]
    phone = {
        "cpu_big": unit("cpu", 30, 4),
        "cpu_little": unit("cpu", 10, 4),
        "gpu": unit("gpu", 500),
        "dsp": unit("dsp", 300),
        "npu": unit("npu", 2000),
    }
    return {
        "name": "bench_runtime",
        "seed": 0,
        "nodes": {
            "phone": {
                "role": "device",
                "sync_us": 100,
                "shared_memory_bandwidth_gb_s": 20,
                "units": phone,
            },
            "edge": {"role": "edge", "units": {"gpu": unit("gpu", 8000)}},
        },
        "links": {"wlan": {"ends": ["phone", "edge"], "latency_ms": 2, "bandwidth_mbps": 50}},
        "models": {"m": {"ops": ops, "edges": edges}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0] * requests},
            }
        ],
        "placement": {"policy": policy},
    }


def time_decisions(scenario, plans, clock) -> tuple[int, float, float, list]:
    """One run of ``scenario``: (decisions, µs per decision building snapshots and in the
    rule over the run, the same over its second half (the transfer times the snapshots
    read are computed on first use), the (rule, ready, view) the rule was given)."""
    from simulator.engine import runtime as hook
    from simulator.engine import simulate

    seen: list = []
    spent: list[float] = []
    original = hook.RuntimeDataflow._decide_batch

    def decide(self, rule, batch):
        now = self.env._now
        start = clock()
        ready, view = self._snapshot(batch, now)
        decisions = rule(ready, view)
        spent.append(clock() - start)
        seen.append((rule, ready, view))
        for decision in decisions:
            request, i = batch[decision.key]
            self._assign(request, i, decision.unit, decision.finish_s, now)

    hook.RuntimeDataflow._decide_batch = decide
    try:
        simulate(scenario, trace="none", plans=plans)
    finally:
        hook.RuntimeDataflow._decide_batch = original
    sizes = [len(ready) for _, ready, _ in seen]
    half = len(sizes) // 2
    return (
        sum(sizes),
        sum(spent) / sum(sizes) * 1e6,
        sum(spent[half:]) / sum(sizes[half:]) * 1e6,
        seen,
    )


def static_plans(plans: dict) -> dict:
    """``plans`` with their provisional placements run as static ones."""
    from simulator.placement.base import Placement

    def static(plan):
        placement = plan.placement
        return replace(
            plan,
            placement=Placement(placement.assignment, placement.order, "manual", plan.source),
        )

    return {app: tuple(static(plan) for plan in mine) for app, mine in plans.items()}


def bench_runtime(n_ops: int, requests: int, repeat: int, clock) -> dict[str, dict]:
    """Per run-time rule: µs per decision (engine, rule alone) and per op of the run."""
    from simulator.engine import plan_replicas, simulate
    from simulator.spec import parse_scenario

    graph = random_dag(n_ops)
    figures = {}
    for name in RUNTIME_RULES_TIMED:
        scenario = parse_scenario(runtime_document(graph, name, requests))
        plans = plan_replicas(scenario)
        runs = [time_decisions(scenario, plans, clock) for _ in range(repeat)]
        decisions, _, _, seen = runs[0]

        def replay(seen=seen):
            for rule, ready, view in seen:
                rule(ready, view)

        def run(scenario=scenario, plans=plans):
            simulate(scenario, trace="none", plans=plans)

        fixed = static_plans(plans)

        def run_static(scenario=scenario, plans=fixed):
            simulate(scenario, trace="none", plans=plans)

        figures[name] = {
            "decisions": decisions,
            "decision_us": statistics.median(run[1] for run in runs),
            "decision_warm_us": statistics.median(run[2] for run in runs),
            "rule_us": median_of(repeat, replay, clock) / decisions * 1e6,
            "run_us_per_op": median_of(repeat, run, clock) / decisions * 1e6,
            "static_us_per_op": median_of(repeat, run_static, clock) / decisions * 1e6,
        }
    return figures


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
    n_ops = min(RUNTIME_OPS, max(args.sizes))
    runtime = bench_runtime(n_ops, RUNTIME_REQUESTS, args.repeat, clock)
    print(
        f"\nrun-time rules: {RUNTIME_REQUESTS} requests of a {n_ops}-op DAG at t = 0, "
        "µs per decision (limit 20)"
    )
    print(
        f"{'rule':<10}{'decisions':>10}{'overhead':>10}{'decision':>10}{'2nd half':>10}"
        f"{'rule':>8}{'run/op':>9}{'static/op':>11}{'ratio':>7}"
    )
    for name, row in runtime.items():
        ratio = row["run_us_per_op"] / row["static_us_per_op"]
        overhead = row["run_us_per_op"] - row["static_us_per_op"]
        row["overhead_us"] = overhead
        print(
            f"{name:<10}{row['decisions']:>10}{overhead:>10.1f}{row['decision_us']:>10.1f}"
            f"{row['decision_warm_us']:>10.1f}{row['rule_us']:>8.1f}"
            f"{row['run_us_per_op']:>9.1f}{row['static_us_per_op']:>11.1f}{ratio:>7.2f}"
        )
    print(
        "(overhead: run/op - static/op, what deciding at run time adds per op, moves and "
        "the decision events included; decision: the engine's snapshot + the rule, timed "
        "in the run (two clock reads per instant included); 2nd half: the same over the "
        "run's second half, transfer times computed; rule: the pure rule alone; run/op, "
        "static/op: the whole run per op, the rule vs its provisional plan run as a static "
        "placement; ratio: run/op / static/op)"
    )
    if args.json:
        print(json.dumps({"seconds": results, "online_heft": online, "runtime_us": runtime}))


if __name__ == "__main__":
    main()
