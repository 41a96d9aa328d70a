"""Shared DRAM per node: hand-computed stretches, the bandwidth invariant, the CoDL fc6 floor."""

from __future__ import annotations

from dataclasses import replace

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import Engine, plan_replicas, simulate
from simulator.engine.dram import DramChannel
from simulator.graph.model import Op
from simulator.platform import CostOracle
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12


def two_units(x_bytes: int, y_bytes: int, y_dispatch_us: float = 0.0) -> dict:
    """A node whose DRAM gives B = 1 GB/s; cpu and gpu each pull 0.75 GB/s alone.

    Entry ops x (cpu) and y (gpu) are independent, so both start at t = 0; they are
    memory-bound (1e3 FLOP at 1 GFLOP/s = 1 us of compute).
    """
    unit = {"peak_gflops": {"fp32": 1}, "memory_bandwidth_gb_s": 0.75, "active_w": 1.0}
    return {
        "name": "dram",
        "nodes": {
            "phone": {
                "dram_bandwidth_gb_s": 1,
                "units": {
                    "cpu": {"kind": "cpu", **unit},
                    "gpu": {"kind": "gpu", **unit, "active_w": 2.0, "dispatch_us": y_dispatch_us},
                },
            }
        },
        "models": {
            "pair": {
                "ops": [  # bytes moved = 4 x params (fp32 weights)
                    {"name": "x", "kind": "fc", "flops": 1e3, "params": x_bytes // 4},
                    {"name": "y", "kind": "fc", "flops": 1e3, "params": y_bytes // 4},
                ],
                "edges": [],
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "pair",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 100},
                "count": 1,
            }
        ],
        "placement": {"policy": "manual", "rules": [{"ops": "y", "unit": "gpu"}], "default": "cpu"},
    }


def ops_of(doc):
    return simulate(parse_scenario(doc)).ops.set_index("op")


def test_two_equal_demands_each_get_half_and_stretch_by_one_and_a_half():
    # each demands 0.75 B for 1 ms; together 1.5 B > B: B / 2 each, speed 2/3 -> 1.5 ms
    ops = ops_of(two_units(750_000, 750_000))
    assert ops.loc["x", "end_s"] == pytest.approx(1.5e-3, rel=EXACT)
    assert ops.loc["y", "end_s"] == pytest.approx(1.5e-3, rel=EXACT)
    assert ops.loc["x", "memory_stall_s"] == pytest.approx(0.5e-3, rel=1e-9)
    # a stalled unit stays busy at active power: 1 W x 1.5 ms, 2 W x 1.5 ms
    assert ops.loc["x", "energy_j"] == pytest.approx(1.5e-3, rel=EXACT)
    assert ops.loc["y", "energy_j"] == pytest.approx(3.0e-3, rel=EXACT)


def test_when_one_ends_the_other_speeds_up():
    # y: 0.5 ms alone; at speed 2/3 it ends at 0.75 ms, when x has done 0.5 of its 1 ms;
    # x then runs alone at full speed: 0.75 + 0.5 = 1.25 ms
    result = simulate(parse_scenario(two_units(750_000, 375_000)))
    ops = result.ops.set_index("op")
    assert ops.loc["y", "end_s"] == pytest.approx(0.75e-3, rel=EXACT)
    assert ops.loc["x", "end_s"] == pytest.approx(1.25e-3, rel=EXACT)
    assert ops.loc["y", "memory_stall_s"] == pytest.approx(0.25e-3, rel=1e-9)
    assert ops.loc["x", "memory_stall_s"] == pytest.approx(0.25e-3, rel=1e-9)
    units = result.units.set_index("unit")
    assert units.loc["phone.cpu", "busy_s"] == pytest.approx(1.25e-3, rel=EXACT)
    assert units.loc["phone.cpu", "memory_stall_s"] == pytest.approx(0.25e-3, rel=1e-9)


def test_the_fixed_part_pulls_no_dram():
    # y's body starts after 0.25 ms of dispatch: x runs alone until then (0.75 ms left),
    # both at 2/3 from 0.25 ms: y's 0.5 ms body ends at 1.0 ms, x has 0.25 ms left -> 1.25
    ops = ops_of(two_units(750_000, 375_000, y_dispatch_us=250))
    assert ops.loc["y", "end_s"] == pytest.approx(1.0e-3, rel=EXACT)
    assert ops.loc["x", "end_s"] == pytest.approx(1.25e-3, rel=EXACT)


def test_ops_within_the_bandwidth_do_not_stall():
    doc = two_units(750_000, 750_000)
    doc["nodes"]["phone"]["dram_bandwidth_gb_s"] = 1.5
    ops = ops_of(doc)
    assert ops["end_s"].tolist() == pytest.approx([1e-3, 1e-3], rel=EXACT)
    assert ops["memory_stall_s"].tolist() == [0.0, 0.0]


def test_default_dram_bandwidth_is_the_largest_units():
    doc = two_units(750_000, 750_000)
    del doc["nodes"]["phone"]["dram_bandwidth_gb_s"]
    assert parse_scenario(doc).platform.nodes["phone"].dram_bps == 0.75e9
    ops = ops_of(doc)  # 1.5 x 0.75 GB/s demanded of 0.75: speed 1/2 -> 2 ms
    assert ops["end_s"].tolist() == pytest.approx([2e-3, 2e-3], rel=EXACT)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 5.0),  # start (s)
            st.floats(0.0, 0.5),  # fixed part (s)
            st.floats(0.01, 3.0),  # body (s)
            st.floats(0.1, 20.0),  # bytes (demand = bytes / body)
        ),
        min_size=1,
        max_size=8,
    ),
    st.floats(0.5, 10.0),
)
def test_summed_dram_rates_never_exceed_the_bandwidth(ops, bandwidth):
    """Through the channel the engine uses: every re-share is recorded; between two
    re-shares the rates are constant, so checking each one checks every instant."""
    env = simpy.Environment()
    shares = []
    channel = DramChannel(
        env, "n", bandwidth, on_share=lambda now, s: shares.append((now, [(x, x.speed) for x in s]))
    )
    ended = {}

    def run(k, start_s, fixed_s, body_s, nbytes):
        yield env.timeout(start_s)
        stream = channel.begin(env.now, fixed_s + body_s, fixed_s, nbytes)
        yield env.timeout(stream.duration_s)
        wait = channel.end(stream, env.now)
        if wait is not None:
            yield wait
        ended[k] = (start_s, env.now)

    for k, op in enumerate(ops):
        env.process(run(k, *op))
    env.run()
    assert len(ended) == len(ops)
    for now, streams in shares:
        pulled = sum(s.demand_bps * speed for s, speed in streams if s.body_from_s <= now)
        assert pulled <= bandwidth * (1 + 1e-9)
    for k, (_, fixed_s, body_s, nbytes) in enumerate(ops):
        began, end = ended[k]
        # never faster than alone, nor than its bytes over the whole bandwidth
        assert end - began >= (fixed_s + body_s) * (1 - 1e-9)
        assert end - began >= (fixed_s + nbytes / bandwidth) * (1 - 1e-9)
    # the work is conserved: all bytes are through no sooner than at full bandwidth
    first = min(op[0] + op[1] for op in ops)
    assert (
        max(e for _, e in ended.values()) - first
        >= sum(op[3] for op in ops) / bandwidth * (1 - 1e-9)
        or len(ops) == 1
    )


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_the_engine_never_pulls_more_than_a_nodes_dram_bandwidth(doc):
    """Random scenarios through the engine, every re-share of every node's DRAM recorded."""
    doc["workload"][0]["arrival"] = {"process": "poisson", "rate_hz": 2000}  # overlap
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    engine = Engine(scenario, plan_replicas(scenario, oracle), oracle)
    shares = []
    for channel in set(engine.dram.values()):
        channel.on_share = lambda now, s, c=channel: shares.append(
            (c, now, [x.speed for x in s], s)
        )
    record = engine.run()
    for channel, now, speeds, streams in shares:
        pulled = sum(
            s.demand_bps * v for s, v in zip(streams, speeds, strict=True) if s.body_from_s <= now
        )
        assert pulled <= channel.bandwidth_bps * (1 + 1e-9)
    ops = record.ledger.op_table()
    assert (ops["memory_stall_s"] >= 0).all()
    assert (ops["end_s"] - ops["start_s"] >= ops["memory_stall_s"]).all()


def test_codl_fc6_takes_at_least_its_weights_over_dram_bandwidth():
    scenario = load_scenario("scenarios/examples/codl_cpu_gpu_vgg16.yaml")
    result = simulate(scenario)
    ops = result.ops
    fc6 = ops[ops["op"].str.startswith("fc6")]
    node = scenario.platform.nodes[fc6["node"].iloc[0]]
    weights = 4096 * 25088 * 4  # fp32 fc6 weights: 411 MB
    assert node.dram_bps == 76.8e9
    # fc6 (however split) runs from its first part's start to its last part's end
    for _, parts in fc6.groupby("request_id"):
        assert parts["end_s"].max() - parts["start_s"].min() >= weights / node.dram_bps
    assert weights / node.dram_bps == pytest.approx(5.35e-3, abs=0.005e-3)


def with_reshape_y(doc: dict, **attrs: int):
    """``two_units`` with y a reshape of 375,000 B in and out (fp32), marked ``attrs``."""
    scenario = parse_scenario(doc)
    graph = scenario.models["pair"]
    y = Op("y", "reshape", input_elems=93_750, output_elems=93_750, attrs=attrs)
    return replace(scenario, models={"pair": graph.with_ops([y])})


def test_a_view_beside_a_memory_bound_op_does_not_slow_it():
    # as a copy, y's body moves 750 KB at 0.75 GB/s (1 ms) after 10 us of dispatch: x runs
    # alone for 10 us, then both at 2/3 speed: x's last 0.99 ms take 1.485 ms -> 1.495 ms
    copy = simulate(with_reshape_y(two_units(750_000, 0, y_dispatch_us=10))).ops.set_index("op")
    assert copy.loc["x", "end_s"] == pytest.approx(1.495e-3, rel=EXACT)
    # as a view it copies nothing: y takes its 10 us dispatch, x its uncontended 1 ms
    scenario = with_reshape_y(two_units(750_000, 0, y_dispatch_us=10), view=1)
    ops = simulate(scenario).ops.set_index("op")
    assert ops.loc["y", "end_s"] == pytest.approx(10e-6, rel=EXACT)
    assert ops.loc["x", "end_s"] == pytest.approx(1e-3, rel=EXACT)
    assert ops["memory_stall_s"].tolist() == [0.0, 0.0]
