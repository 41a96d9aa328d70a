"""split_point (Neurosurgeon): hand-computed curve, ties, feasibility, the AlexNet shape."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import simulator.placement.split  # noqa: F401  (registers split_point and min_cut)
from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError
from simulator.graph.zoo import build_zoo_model
from simulator.placement import POLICIES
from simulator.placement.mincut import min_cut, sequential_cost
from simulator.placement.split import split_point
from simulator.platform import CostOracle
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "scenarios" / "examples" / "neurosurgeon_alexnet.yaml"


# -- a 3-op chain by hand ------------------------------------------------------------------
def chain_document(phone_cloud: dict, **placement) -> dict:
    """phone cpu 1 GFLOP/s (1 W) <-> cloud gpu 1 TFLOP/s (50 W); 20 ms, 10 up / 20 down Mbit/s.

    a: 2 MFLOP, reads 1 MB, writes 10 kB; b: 100 MFLOP, writes 100 kB; c: 2 MFLOP, 4 kB.
    """
    doc = copy.deepcopy(phone_cloud)
    doc["models"] = {
        "chain": {
            "ops": [
                {
                    "name": "a",
                    "kind": "conv",
                    "flops": 2e6,
                    "input_elems": 250_000,
                    "output_elems": 2_500,
                },
                {"name": "b", "kind": "conv", "flops": 100e6, "output_elems": 25_000},
                {"name": "c", "kind": "conv", "flops": 2e6, "output_elems": 1_000},
            ],
            "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
        }
    }
    doc["workload"][0]["model"] = "chain"
    doc["placement"] = {"policy": "split_point", "node": "cloud", **placement}
    return doc


def up_s(nbytes: int) -> float:
    return nbytes * 8 / 10e6 + 0.020


DOWN_S = 4000 * 8 / 20e6 + 0.020  # c's 4 kB output back to the phone: 21.6 ms

# k: (latency, device energy, all energy, bytes sent), computed by hand
HAND = {
    # everything in the cloud: 1 MB up, 0.104 ms of gpu, 4 kB down
    0: (up_s(1_000_000) + 0.104e-3 + DOWN_S, 2.0 * 0.8 + 1.0 * 1.6e-3, 50 * 0.104e-3, 1_004_000),
    # a on the phone (2 ms), its 10 kB up, b + c in the cloud (0.102 ms), down
    1: (2e-3 + up_s(10_000) + 0.102e-3 + DOWN_S, 2e-3 + 2.0 * 8e-3 + 1.6e-3, 50 * 0.102e-3, 14_000),
    # a + b on the phone (102 ms), b's 100 kB up, c in the cloud, down
    2: (102e-3 + up_s(100_000) + 2e-6 + DOWN_S, 102e-3 + 2.0 * 80e-3 + 1.6e-3, 50 * 2e-6, 104_000),
    # everything on the phone: 104 ms, nothing sent
    3: (104e-3, 104e-3, 0.0, 0),
}


def test_split_point_curve_of_a_three_op_chain_by_hand(phone_cloud):
    scenario = parse_scenario(chain_document(phone_cloud))
    plan = plan_apps(scenario)["app"]
    notes = plan.placement.notes
    curve = notes["candidates"]
    assert isinstance(curve, tuple) and all(type(row) is dict for row in curve)
    assert [row["k"] for row in curve] == [0, 1, 2, 3]
    assert [row["cut_after"] for row in curve] == ["<input>", "a", "b", "c"]
    for row in curve:
        latency, device_j, cloud_j, sent = HAND[row["k"]]
        assert row["feasible"] and row["reason"] == ""
        assert row["latency_s"] == pytest.approx(latency, rel=EXACT)
        assert row["device_energy_j"] == pytest.approx(device_j, rel=EXACT)
        assert row["energy_j"] == pytest.approx(device_j + cloud_j, rel=EXACT)
        assert row["bytes_sent"] == sent
        assert row["objective"] == row["latency_s"]
    # 51.702 ms after a beats 104 ms on the phone, 223.6 ms after b, 841.7 ms in the cloud
    assert notes["k"] == 1 and notes["cut_after"] == "a"
    assert plan.label == "split@a"
    assert notes["device"] == "phone.cpu" and notes["remote"] == "cloud.gpu"
    assert plan.units == ("phone.cpu", "cloud.gpu", "cloud.gpu")
    # the engine, one request, no contention: exactly the predicted figure
    result = simulate(scenario)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(HAND[1][0], rel=EXACT)


def test_split_point_objective_device_energy_picks_its_own_minimum(phone_cloud):
    scenario = parse_scenario(chain_document(phone_cloud, objective="device_energy"))
    notes = plan_apps(scenario)["app"].placement.notes
    # device joules: k=1 19.6 mJ < k=3 104 mJ < k=2 263.6 mJ < k=0 1.6 J
    assert notes["k"] == 1
    assert [r["objective"] for r in notes["candidates"]] == [
        r["device_energy_j"] for r in notes["candidates"]
    ]
    weighted = parse_scenario(
        chain_document(
            phone_cloud, objective="weighted", weights={"latency": 1.0, "total_energy": 0.0}
        )
    )
    assert plan_apps(weighted)["app"].placement.notes["k"] == 1


def test_split_point_deadline_failure_names_the_constraint_and_the_gap(phone_cloud):
    scenario = parse_scenario(chain_document(phone_cloud, deadline_ms=40))
    with pytest.raises(PlacementError) as info:
        plan_apps(scenario)
    message = str(info.value)
    assert "split_point" in message and "deadline" in message
    # the best candidate (after a, 51.702 ms) misses 40 ms by 11.7 ms
    assert "cut after 'a'" in message and "by 11.7 ms" in message


def test_split_point_deadline_makes_slower_cuts_infeasible_but_keeps_them(phone_cloud):
    scenario = parse_scenario(chain_document(phone_cloud, deadline_ms=110))
    curve = plan_apps(scenario)["app"].placement.notes["candidates"]
    assert [row["feasible"] for row in curve] == [False, True, False, True]
    assert "deadline" in curve[0]["reason"] and "deadline" in curve[2]["reason"]
    assert curve[0]["latency_s"] == pytest.approx(HAND[0][0], rel=EXACT)


def test_split_point_memory_limit_marks_cuts_infeasible(phone_cloud):
    doc = chain_document(phone_cloud)
    for op in doc["models"]["chain"]["ops"]:
        op["params"] = 250_000  # 1 MB of fp32 weights each
    doc["nodes"]["phone"]["units"]["cpu"]["memory_mb"] = 1.5  # room for one op's weights
    doc["placement"]["objective"] = "device_energy"
    curve = plan_apps(parse_scenario(doc))["app"].placement.notes["candidates"]
    assert [row["feasible"] for row in curve] == [True, True, False, False]
    assert "weights on phone.cpu exceed its memory by 0.5 MB" in curve[2]["reason"]


def test_split_point_ties_keep_more_on_the_device():
    # two identical units on one SoC with free copies: every cut costs the same
    scenario = parse_scenario(
        {
            "name": "tie",
            "nodes": {
                "soc": {
                    "units": {
                        "p": {"kind": "cpu", "peak_gflops": {"fp32": 1}},
                        "q": {"kind": "cpu", "peak_gflops": {"fp32": 1}},
                    }
                }
            },
            "models": {
                "m": {
                    "ops": [{"name": n, "flops": 1e6, "output_elems": 10} for n in "xyz"],
                    "edges": [{"src": "x", "dst": "y"}, {"src": "y", "dst": "z"}],
                }
            },
            "workload": [
                {
                    "app": "a",
                    "model": "m",
                    "source": "soc",
                    "arrival": {"process": "trace", "times_ms": [0]},
                }
            ],
            "placement": {"policy": "split_point", "device": "p", "remote": "soc.q"},
        }
    )
    plan = plan_apps(scenario)["a"]
    curve = plan.placement.notes["candidates"]
    assert len({row["latency_s"] for row in curve}) == 1
    assert plan.placement.notes["k"] == 3 and set(plan.units) == {"soc.p"}
    assert plan.label == "device"


def test_split_point_unsupported_ops_make_cuts_infeasible_with_the_reason(phone_cloud):
    doc = chain_document(phone_cloud)
    doc["models"]["chain"]["ops"][2]["kind"] = "softmax"  # c: not on the phone cpu
    doc["models"]["chain"]["ops"][0]["kind"] = "lrn"  # a: not on the cloud gpu
    doc["nodes"]["phone"]["units"]["cpu"]["supports"] = ["conv", "lrn"]
    doc["nodes"]["cloud"]["units"]["gpu"]["supports"] = ["conv", "softmax"]
    doc["placement"] = {"policy": "split_point", "device": "cpu", "remote": "cloud.gpu"}
    curve = plan_apps(parse_scenario(doc))["app"].placement.notes["candidates"]
    assert [row["feasible"] for row in curve] == [False, True, True, False]
    assert "'cloud.gpu' cannot run 'a'" in curve[0]["reason"]
    assert "'phone.cpu' cannot run 'c'" in curve[3]["reason"]
    assert curve[0]["latency_s"] is None and curve[3]["latency_s"] is None


def test_split_point_with_no_runnable_cut_says_why(phone_cloud):
    doc = chain_document(phone_cloud)
    doc["models"]["chain"]["ops"][0]["kind"] = "lrn"  # a only on the phone
    doc["models"]["chain"]["ops"][2]["kind"] = "softmax"  # c only in the cloud...
    doc["models"]["chain"]["ops"][1]["kind"] = "embedding"  # ...and b on neither
    doc["nodes"]["phone"]["units"]["cpu"]["supports"] = ["lrn"]
    doc["nodes"]["cloud"]["units"]["gpu"]["supports"] = ["softmax"]
    doc["placement"] = {"policy": "split_point", "device": "cpu", "remote": "cloud.gpu"}
    with pytest.raises(PlacementError, match="no cut of the op order can run"):
        plan_apps(parse_scenario(doc))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"remote": "cloud.gpu", "node": "cloud"}, "not both"),
        ({"remote": "cpu", "node": None}, "same unit"),
        ({"exclude": ["cloud.gpu"]}, "no usable unit of node 'cloud'"),
        ({"device": "cpu", "exclude": ["cpu"]}, "'exclude' lists"),
        ({"node": "moon"}, "unknown node 'moon'"),
    ],
)
def test_split_point_option_errors(phone_cloud, options, match):
    scenario = parse_scenario(chain_document(phone_cloud))
    oracle = CostOracle(scenario.platform)
    graph = scenario.models["chain"]
    with pytest.raises(PlacementError, match=match):
        split_point(graph, oracle, "phone", {"node": "cloud", **options})


def test_split_point_defaults_to_the_only_other_node(phone_cloud):
    scenario = parse_scenario(chain_document(phone_cloud))
    placement = split_point(scenario.models["chain"], CostOracle(scenario.platform), "phone", {})
    assert placement.notes["remote"] == "cloud.gpu" and placement.notes["k"] == 1


def test_split_point_is_registered_with_common_options():
    fields = POLICIES.get("split_point").options.fields
    for key in ("device", "remote", "node", "objective", "weights", "deadline_ms", "exclude"):
        assert key in fields


# -- non-chains: prefix cuts of the topological order ------------------------------------
def test_split_point_on_a_dag_cuts_prefixes_of_the_order():
    scenario = neurosurgeon(150)
    oracle = CostOracle(scenario.platform)
    graph = build_zoo_model("resnet18", "fp32")
    placement = split_point(graph, oracle, "phone", {"device": "cpu_big", "node": "cloud"})
    notes = placement.notes
    assert "not a chain" in notes["cuts"]
    assert len(notes["candidates"]) == len(graph) + 1
    k = notes["k"]
    assert all(placement.assignment[op] == "phone.cpu_big" for op in graph.order[:k])
    assert all(placement.assignment[op] == "cloud.gpu" for op in graph.order[k:])


# -- the Neurosurgeon shape on AlexNet -----------------------------------------------------
def neurosurgeon(bandwidth_mbps: float, **placement):
    """The shipped example with its link's bandwidth (both directions) set."""
    scenario = load_scenario(EXAMPLE)
    doc = copy.deepcopy(scenario.document)
    doc.pop("include", None)
    link = doc["links"]["wlan"]
    link["bandwidth_mbps"] = bandwidth_mbps
    link["reverse_bandwidth_mbps"] = bandwidth_mbps
    doc["placement"].update(placement)
    return parse_scenario(doc, base_dir=EXAMPLE.parent)


@pytest.mark.parametrize(
    ("mbps", "label"),
    [
        (1.1, "device"),  # Neurosurgeon's 3G uplink
        (5.85, "device"),  # LTE
        (18.88, "device"),  # Wi-Fi
        (100, "device"),
        (130, "split@pool5"),  # 36.9 kB after pool5 vs 602 kB of input
        (200, "split@pool1"),  # 187 kB after pool1
        (1000, "split@pool1"),
        (5000, "cloud"),
        (10000, "cloud"),
    ],
)
def test_neurosurgeon_shape_on_alexnet(mbps, label):
    scenario = neurosurgeon(mbps)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["camera"]
    assert plan.label == label
    notes = plan.placement.notes
    curve = notes["candidates"]
    best = curve[notes["k"]]
    assert best["latency_s"] == min(row["latency_s"] for row in curve)
    # the engine reproduces the prediction (one frame at a time: no contention)
    simulated = simulate(scenario).requests["latency_s"].to_numpy()
    assert simulated == pytest.approx([best["latency_s"]] * len(simulated), rel=EXACT)
    graph = scenario.models["alexnet"]
    # min_cut (sequential model) agrees on this chain: the chain is sequential anyway
    cut = min_cut(graph, oracle, "phone", {"device": "cpu_big", "node": "cloud"})
    assert cut.label(oracle) == label
    assert cut.notes["cut_value"] == cut.notes["best_chain_cost"]
    assert sequential_cost(graph, plan.placement.assignment, oracle, "phone") == pytest.approx(
        best["latency_s"], rel=EXACT
    )


def test_neurosurgeon_winners_over_a_bandwidth_sweep():
    # 1 Mbit/s .. 20 Gbit/s, 8 points per decade: phone, pool5, pool1, cloud, in this order
    winners = []
    for step in range(35):
        scenario = neurosurgeon(10 ** (step / 8))
        oracle = CostOracle(scenario.platform)
        graph = scenario.models["alexnet"]
        placement = split_point(graph, oracle, "phone", {"device": "cpu_big", "node": "cloud"})
        label = placement.label(oracle)
        if not winners or winners[-1] != label:
            winners.append(label)
    assert winners == ["device", "split@pool5", "split@pool1", "cloud"]


def test_neurosurgeon_intermediate_cut_sends_a_small_activation():
    plan = plan_apps(neurosurgeon(130))["camera"]
    graph = load_scenario(EXAMPLE).models["alexnet"]
    best = plan.placement.notes["candidates"][plan.placement.notes["k"]]
    assert graph.op("pool5").output_bytes == 36_864
    assert best["bytes_sent"] == 36_864 + 4_000  # pool5 up, fc8's logits back
    assert graph.op("conv1").input_bytes == 602_112


def test_the_shipped_neurosurgeon_example_runs_and_matches_its_prediction():
    scenario = load_scenario(EXAMPLE)
    result = simulate(scenario)
    assert result.summary["decision"] == "split@pool5"
    plan = plan_apps(scenario)["camera"]
    predicted = plan.placement.notes["candidates"][plan.placement.notes["k"]]["latency_s"]
    assert result.requests["latency_s"].to_numpy() == pytest.approx(
        [predicted] * len(result.requests), rel=EXACT
    )


def test_split_point_is_deterministic():
    scenario = neurosurgeon(150)
    oracle = CostOracle(scenario.platform)
    graph = scenario.models["alexnet"]
    options = {"device": "cpu_big", "node": "cloud"}
    first = split_point(graph, oracle, "phone", options)
    again = split_point(graph, CostOracle(neurosurgeon(150).platform), "phone", options)
    assert first.assignment == again.assignment
    assert first.notes == again.notes
