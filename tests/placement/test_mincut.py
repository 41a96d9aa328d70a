"""min_cut (DADS): the sequential cost model by hand, exactness against brute force,
never worse than the best chain split, forced sides, ties, constraints, determinism."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simulator.placement.split  # noqa: F401  (registers split_point and min_cut)
from simulator.errors import PlacementError
from simulator.graph import Edge, ModelGraph, Op
from simulator.graph.zoo import build_zoo_model
from simulator.placement import Placement, compile_plan, estimate
from simulator.placement.mincut import min_cut, sequential_cost
from simulator.placement.objectives import Objective
from simulator.platform import CostOracle
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12
EXAMPLE = (
    Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "neurosurgeon_alexnet.yaml"
)


def oracle_of(document: dict) -> CostOracle:
    return CostOracle(parse_scenario(document).platform)


# -- the sequential model by hand ----------------------------------------------------------
def diamond() -> ModelGraph:
    """a -> (b, c) -> d; a's edges carry 1 kB and 5 kB, b and c write 10 kB and 2 kB."""
    ops = [
        Op("a", "conv", flops=1e6, output_elems=1250),
        Op("b", "conv", flops=2e6, output_elems=2500),
        Op("c", "conv", flops=3e6, output_elems=500),
        Op("d", "conv", flops=1e6, output_elems=10),
    ]
    edges = [Edge("a", "b", 1000), Edge("a", "c", 5000), Edge("b", "d", 10_000)]
    return ModelGraph("diamond", ops, [*edges, Edge("c", "d", 2000)])


def test_sequential_cost_of_a_diamond_by_hand(phone_cloud):
    # phone cpu 1 GFLOP/s (1 W), cloud gpu 1 TFLOP/s (50 W); 20 ms, 10 up / 20 down Mbit/s;
    # radio tx 2 W, rx 1 W.
    oracle = oracle_of(phone_cloud)
    graph = diamond()
    split = {"a": "phone.cpu", "b": "cloud.gpu", "c": "cloud.gpu", "d": "phone.cpu"}
    up_s = 5000 * 8 / 10e6  # a's output goes up once, at its largest edge (5 kB), not twice
    down_s = (10_000 + 2000) * 8 / 20e6  # b's and c's outputs come back separately
    latency = 1e-3 + (up_s + 0.02) + 2e-6 + 3e-6 + (down_s + 2 * 0.02) + 1e-3
    assert sequential_cost(graph, split, oracle, "phone") == pytest.approx(latency, rel=EXACT)
    device_j = 1.0 * 2e-3 + 2.0 * up_s + 1.0 * down_s
    assert sequential_cost(graph, split, oracle, "phone", "device_energy") == pytest.approx(
        device_j, rel=EXACT
    )
    total_j = device_j + 50 * 5e-6
    assert sequential_cost(graph, split, oracle, "phone", "total_energy") == pytest.approx(
        total_j, rel=EXACT
    )
    weighted = Objective("weighted", {"latency": 2.0, "total_energy": 0.5})
    assert sequential_cost(graph, split, oracle, "phone", weighted) == pytest.approx(
        2 * latency + 0.5 * total_j, rel=EXACT
    )
    # the whole model in the cloud: input (0 bytes: latency only) up, d's 40 B back
    cloud = dict.fromkeys(graph.order, "cloud.gpu")
    assert sequential_cost(graph, cloud, oracle, "phone") == pytest.approx(
        0.02 + 7e-6 + 40 * 8 / 20e6 + 0.02, rel=EXACT
    )
    int8 = graph.with_ops([Op("a", "conv", flops=1e6, output_elems=1250, dtype="int8")])
    assert sequential_cost(int8, split, oracle, "phone") == math.inf  # no int8 on the cpu


# -- a DAG where the minimum cut beats every prefix cut ----------------------------------
def branches() -> ModelGraph:
    """s -> (x, y) -> z with time tables (ms): x is slow on the phone, y runs only there.

    The order is s, x, y, z, so prefix cuts keep x on the phone whenever y is.
    """
    ms = 1e-3
    ops = [
        Op("s", "conv", time_s={"cpu": 1 * ms, "gpu": 1 * ms}),
        Op("x", "conv", time_s={"cpu": 100 * ms, "gpu": 1 * ms}, params=1000),
        Op("y", "conv", time_s={"cpu": 1 * ms}),
        Op("z", "conv", time_s={"cpu": 1 * ms, "gpu": 1 * ms}),
    ]
    edges = [Edge("s", "x", 1250), Edge("s", "y", 1250), Edge("x", "z", 1250), Edge("y", "z", 1250)]
    return ModelGraph("branches", ops, edges)


def test_min_cut_beats_every_prefix_cut_on_a_branching_dag(phone_cloud):
    oracle = oracle_of(phone_cloud)
    graph = branches()
    placement = min_cut(graph, oracle, "phone", {"node": "cloud"})
    assert dict(placement.assignment) == {
        "s": "phone.cpu",
        "x": "cloud.gpu",
        "y": "phone.cpu",
        "z": "phone.cpu",
    }
    assert placement.order == graph.order
    assert placement.label(oracle) == "mixed"
    notes = placement.notes
    # s 1 + s->x up (1 + 20) + x 1 + x->z down (0.5 + 20) + y 1 + z 1 = 45.5 ms
    assert notes["cut_value"] == pytest.approx(45.5e-3, rel=EXACT)
    assert notes["model"] == "sequential"
    # prefix cuts: y (3rd) must stay on the phone, so x does too: all on the phone, 103 ms
    assert notes["best_chain_cost"] == pytest.approx(103e-3, rel=EXACT)
    assert notes["best_chain_cut_after"] == "z"
    assert notes["cut_tensors"] == (
        {"tensor": "s", "from": "phone.cpu", "to": "cloud.gpu", "consumers": ("x",), "bytes": 1250},
        {"tensor": "x", "from": "cloud.gpu", "to": "phone.cpu", "consumers": ("z",), "bytes": 1250},
    )
    # the engine's overlapping schedule is shorter than the sequential sum: y runs meanwhile
    predicted = estimate(compile_plan(graph, placement, oracle), oracle)
    assert predicted.latency_s == pytest.approx(44.5e-3, rel=EXACT)


def test_min_cut_forces_ops_a_side_cannot_run_to_the_other(phone_cloud):
    oracle = oracle_of(phone_cloud)
    ms = 1e-3
    graph = ModelGraph(
        "forced",
        [
            Op("p", "conv", time_s={"cpu": 1 * ms, "gpu": 5 * ms}),
            Op("q", "conv", time_s={"gpu": 500 * ms}),  # only in the cloud, however slow
            Op("r", "conv", time_s={"cpu": 1 * ms}),  # only on the phone
        ],
        [Edge("p", "q", 10), Edge("q", "r", 10)],
    )
    placement = min_cut(graph, oracle, "phone", {"node": "cloud"})
    assert [placement.assignment[op] for op in graph.order] == [
        "phone.cpu",
        "cloud.gpu",
        "phone.cpu",
    ]
    assert placement.notes["best_chain_cost"] is None  # no prefix cut can run r
    both = ModelGraph("none", [Op("n", "conv", time_s={"npu": 1.0})], [])
    with pytest.raises(PlacementError) as info:
        min_cut(both, oracle, "phone", {"device": "cpu", "remote": "cloud.gpu"})
    assert info.value.op == "n" and "neither 'phone.cpu' nor 'cloud.gpu'" in str(info.value)


def test_min_cut_ties_stay_on_the_device():
    document = {
        "name": "tie",
        "nodes": {
            "soc": {
                "units": {
                    "p": {"kind": "cpu", "peak_gflops": {"fp32": 1}},
                    "q": {"kind": "cpu", "peak_gflops": {"fp32": 1}},
                }
            }
        },
        "models": {"m": {"ops": [{"name": "x", "flops": 1}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "soc",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "single", "unit": "p"},
    }
    oracle = oracle_of(document)
    graph = diamond()
    for objective in ("latency", "device_energy", "total_energy"):
        placement = min_cut(
            graph, oracle, "soc", {"device": "p", "remote": "soc.q", "objective": objective}
        )
        assert set(placement.assignment.values()) == {"soc.p"}


def test_min_cut_constraint_failures_name_the_constraint(phone_cloud):
    oracle = oracle_of(phone_cloud)
    with pytest.raises(PlacementError) as info:
        min_cut(branches(), oracle, "phone", {"node": "cloud", "deadline_s": 0.040})
    message = str(info.value)
    assert "min_cut" in message and "deadline" in message and "by 4.5 ms" in message
    tiny = copy.deepcopy(phone_cloud)
    tiny["nodes"]["cloud"]["units"]["gpu"]["memory_mb"] = 0.001  # 1000 B; x has 4000 B
    with pytest.raises(PlacementError, match=r"weights on cloud.gpu exceed its memory by 0.003 MB"):
        min_cut(branches(), oracle_of(tiny), "phone", {"node": "cloud"})
    # the same placement passes when memory is not checked
    assert min_cut(branches(), oracle_of(tiny), "phone", {"node": "cloud", "check_memory": False})


def test_min_cut_option_errors(phone_cloud):
    oracle = oracle_of(phone_cloud)
    with pytest.raises(PlacementError, match="not both"):
        min_cut(diamond(), oracle, "phone", {"node": "cloud", "remote": "cloud.gpu"})
    with pytest.raises(PlacementError, match="'exclude' lists"):
        min_cut(diamond(), oracle, "phone", {"remote": "cloud.gpu", "exclude": ["cloud.gpu"]})
    with pytest.raises(PlacementError, match=r"min_cut.*needs weights"):
        min_cut(diamond(), oracle, "phone", {"node": "cloud", "objective": "weighted"})


# -- exact against brute force on random small DAGs -------------------------------------
PLATFORM = {
    "name": "three_nodes",
    "nodes": {
        "d": {
            "role": "device",
            "sync_us": 50,
            "shared_memory_bandwidth_gb_s": 2,
            "units": {
                "cpu": {"kind": "cpu", "peak_gflops": {"fp32": 2}, "active_w": 2.0},
                "npu": {
                    "kind": "npu",
                    "peak_gflops": {"fp32": 20},
                    "active_w": 0.5,
                    "supports": ["conv", "fc"],
                },
            },
        },
        "e": {
            "role": "edge",
            "units": {
                "gpu": {
                    "kind": "gpu",
                    "peak_gflops": {"fp32": 200},
                    "active_w": 30,
                    "supports": ["conv", "fc", "softmax"],
                }
            },
        },
        "c": {
            "role": "cloud",
            "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 1000}, "active_w": 80}},
        },
    },
    "links": {
        "radio": {
            "ends": ["d", "e"],
            "latency_ms": 2,
            "bandwidth_mbps": 40,
            "reverse_bandwidth_mbps": 80,
            "radio": {"tx_w": 1.5, "rx_w": 0.8},
        },
        "wan": {"ends": ["e", "c"], "latency_ms": 10, "bandwidth_mbps": 500},
    },
    "models": {"m": {"ops": [{"name": "x", "flops": 1}]}},
    "workload": [
        {"app": "a", "model": "m", "source": "d", "arrival": {"process": "trace", "times_ms": [0]}}
    ],
    "placement": {"policy": "single", "unit": "cpu"},
}
PAIRS = (
    ("d.cpu", "c.gpu"),  # device <-> cloud, two hops
    ("d.npu", "e.gpu"),  # device accelerator <-> edge, unsupported ops on both
    ("d.cpu", "d.npu"),  # two units of one SoC: on-chip copies
    ("e.gpu", "c.gpu"),  # neither on the source node: inputs and outputs travel
)
OBJECTIVES = (
    {"objective": "latency"},
    {"objective": "device_energy"},
    {"objective": "total_energy"},
    {"objective": "weighted", "weights": {"latency": 1.0, "device_energy": 0.5}},
)


@st.composite
def small_dags(draw, max_ops: int = 8) -> ModelGraph:
    n = draw(st.integers(1, max_ops))
    ops, edges = [], []
    for j in range(n):
        ops.append(
            Op(
                f"o{j}",
                draw(st.sampled_from(("conv", "conv", "fc", "softmax", "pool"))),
                flops=draw(st.floats(1e4, 1e8)),
                input_elems=draw(st.integers(0, 100_000)),
                output_elems=draw(st.integers(0, 100_000)),
            )
        )
        if j:
            for i in sorted(draw(st.sets(st.integers(0, j - 1), max_size=3))):
                kind = draw(st.sampled_from(("output", "output", "bytes", "comm")))
                if kind == "output":
                    edges.append(Edge(f"o{i}", f"o{j}", ops[i].output_bytes))
                elif kind == "bytes":  # consumers of one tensor reading different sizes
                    edges.append(Edge(f"o{i}", f"o{j}", draw(st.integers(0, 400_000))))
                else:
                    comm = draw(st.floats(0, 0.05))
                    edges.append(Edge(f"o{i}", f"o{j}", ops[i].output_bytes, comm))
    return ModelGraph("random", ops, edges)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=small_dags(),
    pair=st.sampled_from(PAIRS),
    objective=st.sampled_from(OBJECTIVES),
)
def test_min_cut_equals_brute_force_over_all_partitions(graph, pair, objective):
    oracle = CostOracle(parse_scenario(PLATFORM).platform)
    device, remote = pair
    options = {"device": device, "remote": remote, "exact": "yes", **objective}
    ops = graph.order
    costs = {}
    for sides in itertools.product((device, remote), repeat=len(ops)):
        assignment = dict(zip(ops, sides, strict=True))
        costs[sides] = sequential_cost(graph, assignment, oracle, "d", options)
    best = min(costs.values())
    if best == math.inf:
        with pytest.raises(PlacementError, match="neither"):
            min_cut(graph, oracle, "d", options)
        return
    placement = min_cut(graph, oracle, "d", options)
    chosen = tuple(placement.assignment[op] for op in ops)
    assert costs[chosen] == best
    assert placement.notes["cut_value"] == best
    # ties: the device side holds every op that some optimal partition puts there
    on_device = {op for op, uid in zip(ops, chosen, strict=True) if uid == device}
    for sides, cost in costs.items():
        if cost == best:
            assert {op for op, uid in zip(ops, sides, strict=True) if uid == device} <= on_device
    # the best prefix cut of the order, by brute force over k
    prefixes = [costs[(device,) * k + (remote,) * (len(ops) - k)] for k in range(len(ops) + 1)]
    chain = min(prefixes)
    if chain == math.inf:
        assert placement.notes["best_chain_cost"] is None
    else:
        assert placement.notes["best_chain_cost"] == chain
        k = max(k for k, cost in enumerate(prefixes) if cost == chain)
        assert placement.notes["best_chain_cut_after"] == (ops[k - 1] if k else "<input>")
        assert best <= chain


# -- zoo models: never worse than the best chain split, equal on chains ----------------
def neurosurgeon_oracle(mbps: float) -> CostOracle:
    scenario = load_scenario(EXAMPLE)
    doc = copy.deepcopy(scenario.document)
    doc["links"]["wlan"]["bandwidth_mbps"] = mbps
    doc["links"]["wlan"]["reverse_bandwidth_mbps"] = mbps
    return CostOracle(parse_scenario(doc, base_dir=EXAMPLE.parent).platform)


BANDWIDTHS = (5.85, 130, 1000, 5000)


@pytest.mark.parametrize("mbps", BANDWIDTHS)
@pytest.mark.parametrize(("model", "dtype"), [("resnet18", "fp32"), ("resnet50", "fp16")])
@pytest.mark.parametrize("objective", ["latency", "device_energy"])
def test_min_cut_is_never_worse_than_the_best_chain_split_on_resnets(model, dtype, mbps, objective):
    oracle = neurosurgeon_oracle(mbps)
    graph = build_zoo_model(model, dtype)
    assert not graph.is_chain()
    options = {"device": "cpu_big", "node": "cloud", "objective": objective}
    placement = min_cut(graph, oracle, "phone", options)
    notes = placement.notes
    assert notes["cut_value"] <= notes["best_chain_cost"]
    assert (
        sequential_cost(graph, placement.assignment, oracle, "phone", objective)
        == notes["cut_value"]
    )


@pytest.mark.parametrize("mbps", BANDWIDTHS)
@pytest.mark.parametrize("model", ["alexnet", "vgg16"])
def test_min_cut_equals_the_best_chain_split_on_chains(model, mbps):
    oracle = neurosurgeon_oracle(mbps)
    graph = build_zoo_model(model, "fp32")
    assert graph.is_chain()
    placement = min_cut(graph, oracle, "phone", {"device": "cpu_big", "node": "cloud"})
    notes = placement.notes
    assert notes["cut_value"] == notes["best_chain_cost"]
    assert placement.label(oracle) != "mixed"
    cut_after = notes["best_chain_cut_after"]
    label = placement.label(oracle)
    assert label in ("device", "cloud") or label == f"split@{cut_after}"


def test_min_cut_chain_cost_equals_the_estimate_on_a_chain():
    # on a chain nothing overlaps, so the sequential model is the list-schedule estimate
    oracle = neurosurgeon_oracle(130)
    graph = build_zoo_model("alexnet", "fp32")
    placement = min_cut(graph, oracle, "phone", {"device": "cpu_big", "node": "cloud"})
    predicted = estimate(compile_plan(graph, placement, oracle), oracle)
    assert placement.notes["cut_value"] == pytest.approx(predicted.latency_s, rel=EXACT)
    assert placement.label(oracle) == "split@pool5"


def test_min_cut_float_mode_agrees_with_exact_mode():
    oracle = neurosurgeon_oracle(1000)
    graph = build_zoo_model("resnet18", "fp32")
    options = {"device": "cpu_big", "node": "cloud"}
    exact = min_cut(graph, oracle, "phone", {**options, "exact": "yes"})
    floats = min_cut(graph, oracle, "phone", {**options, "exact": "no"})
    assert exact.notes["exact"] is True and floats.notes["exact"] is False
    assert floats.notes["cut_value"] == pytest.approx(exact.notes["cut_value"], rel=1e-9)


def test_min_cut_is_deterministic():
    graph = build_zoo_model("resnet18", "fp32")
    options = {"device": "cpu_big", "node": "cloud"}
    first = min_cut(graph, neurosurgeon_oracle(1000), "phone", options)
    again = min_cut(graph, neurosurgeon_oracle(1000), "phone", options)
    assert first.assignment == again.assignment and first.notes == again.notes
    assert isinstance(first, Placement)


def test_min_cut_runs_from_yaml(tmp_path):
    scenario = load_scenario(EXAMPLE)
    doc = copy.deepcopy(scenario.document)
    doc["placement"] = {"policy": "min_cut", "device": "cpu_big", "node": "cloud"}
    from simulator.engine import plan_apps

    plan = plan_apps(parse_scenario(doc, base_dir=EXAMPLE.parent))["camera"]
    assert plan.label == "split@pool5"
    assert plan.placement.policy == "min_cut"
