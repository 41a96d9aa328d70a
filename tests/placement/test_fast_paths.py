"""The fast paths of the placement policies against the plain computations they replace.

``prefix_cut_estimates`` against compiling and estimating each cut, ``Timeline``
against the plain slot scan, ``min_cut_sink_side`` against networkx. Equality is exact
(floats bit for bit, rationals and cuts identical).
"""

from __future__ import annotations

import bisect
import random
from fractions import Fraction
from pathlib import Path

import pytest
from frozen_decisions import random_dag

from simulator.placement.base import Placement
from simulator.placement.estimate import estimate
from simulator.placement.maxflow import min_cut_sink_side, scale_to_integers
from simulator.placement.mincut import preflow_cut
from simulator.placement.plan import compile_plan
from simulator.placement.splitcurve import prefix_cut_estimates
from simulator.placement.timeline import BLOCK, Timeline, plain_earliest_start
from simulator.platform import CostOracle
from simulator.spec import load_scenario

ROOT = Path(__file__).resolve().parents[2]


def oracle_of(name: str) -> CostOracle:
    return CostOracle(load_scenario(ROOT / "scenarios" / "examples" / name).platform)


def fields(e) -> tuple:
    return (e.latency_s, e.op_energy_j, e.device_op_energy_j, e.radio_energy_j, e.bytes_sent)


@pytest.mark.parametrize(
    ("scenario", "device", "remote", "seed"),
    [
        ("neurosurgeon_alexnet.yaml", "phone.cpu_big", "cloud.gpu", 1),  # over a network
        ("neurosurgeon_alexnet.yaml", "cloud.gpu", "phone.gpu", 2),  # device unit remote
        ("pipeline_npu_gpu.yaml", "phone.gpu", "phone.cpu_big", 3),  # on chip
    ],
)
def test_prefix_cut_estimates_equal_each_cuts_own_plan(scenario, device, remote, seed):
    oracle = oracle_of(scenario)
    graph = random_dag(45, seed)
    n = len(graph)
    rng = random.Random(seed)
    for lo, hi in ((0, n), (rng.randint(0, 20), rng.randint(25, n))):
        fast = prefix_cut_estimates(graph, oracle, "phone", device, remote, lo, hi)
        assert fast is not None and len(fast) == hi - lo + 1
        for k in range(lo, hi + 1):
            cut = {name: device if i < k else remote for i, name in enumerate(graph.order)}
            plan = compile_plan(graph, Placement(cut, graph.order, "cut", "phone"), oracle)
            assert fields(fast[k - lo]) == fields(estimate(plan, oracle)), k


@pytest.mark.parametrize(
    ("device", "remote"), [("phone.cpu_big", "cloud.gpu"), ("phone.cpu_big", "phone.gpu")]
)
def test_prefix_cut_estimates_replay_the_device_governor(tmp_path, device, remote):
    """A schedutil device unit: its levels follow its own timeline, the same for every cut."""
    text = (ROOT / "scenarios" / "examples" / "neurosurgeon_alexnet.yaml").read_text()
    text = text.replace("../devices/", f"{ROOT / 'scenarios' / 'devices'}/")
    text = text.replace(
        "cpu_big: {dvfs: {governor: {name: performance}}}",
        "cpu_big: {dvfs: {governor: {name: schedutil}}}",
    )
    (tmp_path / "s.yaml").write_text(text)
    oracle = CostOracle(load_scenario(tmp_path / "s.yaml").platform)
    graph = random_dag(45, 4)
    n = len(graph)
    fast = prefix_cut_estimates(graph, oracle, "phone", device, remote, 0, n)
    assert fast is not None
    slower = 0
    for k in range(n + 1):
        cut = {name: device if i < k else remote for i, name in enumerate(graph.order)}
        plan = compile_plan(graph, Placement(cut, graph.order, "cut", "phone"), oracle)
        predicted = estimate(plan, oracle)
        assert fields(fast[k]) == fields(predicted), k
        slower += predicted.latency_s > estimate(plan, oracle, levels="top").latency_s
    assert slower == n  # every cut with an op on the device runs it below the top clock
    # a remote unit whose governor's level depends on history: no fast path
    assert prefix_cut_estimates(graph, oracle, "phone", remote, device, 0, n) is None


def test_prefix_cut_estimates_decline_what_they_cannot_reproduce():
    lte = oracle_of("alexnet_lossy_lte.yaml")  # a stateful radio: arrivals depend on history
    graph = random_dag(20, 5)
    assert prefix_cut_estimates(graph, lte, "phone", "phone.cpu_big", "cloud.gpu", 0, 20) is None
    timed = random_dag(20, 6, times=("p1", "p2"))  # edges with an explicit comm_s
    host = oracle_of("heft_topcuoglu.yaml")
    assert prefix_cut_estimates(timed, host, "host", "host.p1", "host.p2", 0, 20) is None


@pytest.mark.parametrize(("exact", "zeros"), [(False, False), (True, False), (False, True)])
def test_timeline_finds_the_slot_the_plain_scan_finds(exact, zeros):
    rng = random.Random(7)
    num = (lambda x: Fraction(repr(x))) if exact else (lambda x: x)
    timeline, starts, ends = Timeline(exact), [], []
    lengths = (0.1, 0.3, 0.7, 2.0) + ((0.0,) * 2 if zeros else ())
    for step in range(12 * BLOCK):
        ready = num(round(rng.uniform(0, 50), rng.choice((1, 3, 9))))
        duration = num(rng.choice((*lengths, round(rng.uniform(1e-6, 3), 9))))
        if zeros and step == 200:
            assert timeline.flat is not None  # zero-length slots put ends out of order
        start = plain_earliest_start(starts, ends, ready, duration)
        assert timeline.earliest_start(ready, duration) == start
        k = bisect.bisect_right(starts, start)
        starts.insert(k, start)
        ends.insert(k, start + duration)
        timeline.insert(start, start + duration)
        assert timeline.last_end() == ends[-1]
        if timeline.flat is None:  # blocks updated in place know what a full pass finds
            kept = (list(timeline.bound), list(timeline.firsts), list(timeline.lasts))
            for b in range(len(timeline.starts)):
                timeline._rebound(b)
            assert kept == (timeline.bound, timeline.firsts, timeline.lasts)
    flat = timeline.flat[0] if zeros else [s for block in timeline.starts for s in block]
    assert flat == starts


@pytest.mark.parametrize("exact", [False, True])
def test_timeline_slot_appended_between_blocks_rebounds_the_next_block(exact):
    num = (lambda x: Fraction(x)) if exact else float
    timeline = Timeline(exact)
    for i in range(2 * BLOCK + 1):  # splits into blocks of BLOCK and BLOCK + 1 slots
        start = i * 10 + (100 if i >= BLOCK else 0)  # the widest gap opens block 2
        timeline.insert(num(start), num(start + 1))
    assert len(timeline.starts) == 2 and timeline.bound[1] >= 109
    end_of_first = (BLOCK - 1) * 10 + 1
    timeline.insert(num(end_of_first + 4), num(BLOCK * 10 + 100 - 20))  # 20 before block 2
    assert len(timeline.starts[0]) == BLOCK + 1  # appended to the first block
    assert timeline.bound[1] < 21  # its widest gap is now 20 (10 - 1 elsewhere)
    assert timeline.earliest_start(num(end_of_first), num(30)) == num(timeline.lasts[1])


@pytest.mark.parametrize("seed", range(6))
def test_max_flow_cut_equals_networkx_on_random_networks(seed):
    rng = random.Random(seed)
    nodes = ["S", "T", *range(25)]
    arcs, seen = [], set()
    for _ in range(90):
        u, v = rng.sample(nodes, 2)
        if u == "T" or v == "S" or (u, v) in seen:
            continue
        seen.add((u, v))
        infinite = u not in ("S",) and v not in ("T",) and rng.random() < 0.1
        cap = None if infinite else Fraction(rng.randint(0, 40), rng.choice((1, 4, 10, 1000)))
        arcs.append((u, v, cap))
    caps, denominator = scale_to_integers(c for _, _, c in arcs)
    for c, (_, _, cap) in zip(caps, arcs, strict=True):
        assert c is None if cap is None else Fraction(c, denominator) == cap
    ints = [(u, v, c) for (u, v, _), c in zip(arcs, caps, strict=True)]
    flow, reach = min_cut_sink_side(ints, "S", "T")
    value, expected = preflow_cut(arcs, "S", "T")  # the old solver
    assert Fraction(flow, denominator) == value
    assert reach == expected
