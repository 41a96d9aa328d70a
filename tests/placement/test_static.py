"""Static placement policies, decision labels and placement checks."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError
from simulator.graph import Edge, ModelGraph, Op
from simulator.placement import Placement, PlacementSpec, check_placement, place
from simulator.platform import CostOracle
from simulator.spec import load_scenario, parse_scenario

FLAGSHIP = {
    "name": "flagship",
    "include": [
        "../../scenarios/devices/flagship_phone.yaml",
        "../../scenarios/devices/cloud_gpu.yaml",
        "../../scenarios/networks/lte.yaml",
    ],
    "nodes": {"phone": {"preset": "flagship_phone"}, "cloud": {"preset": "cloud_gpu"}},
    "links": {"up": {"preset": "lte", "ends": ["phone", "cloud"]}},
    "models": {"net": {"zoo": "mobilenet_v1", "dtype": "int8"}},
    "workload": [
        {
            "app": "cam",
            "model": "net",
            "source": "phone",
            "arrival": {"process": "periodic", "period_ms": 100},
            "count": 2,
        }
    ],
}


def flagship(placement: dict, **model) -> object:
    doc = copy.deepcopy(FLAGSHIP)
    doc["placement"] = placement
    if model:
        doc["models"]["net"] = model
    from pathlib import Path

    return parse_scenario(doc, base_dir=Path(__file__).parent)


def test_single_refuses_ops_the_unit_cannot_run_and_names_fallback():
    with pytest.raises(PlacementError) as info:
        plan_apps(flagship({"policy": "single", "unit": "npu"}))
    message = str(info.value)
    assert "softmax" in message and "fallback" in message and "phone.npu" in message


def test_fallback_sends_unsupported_ops_to_the_cpu_and_pays_the_hops():
    scenario = flagship({"policy": "fallback", "preferred": "npu"})
    plan = plan_apps(scenario)["cam"]
    assert plan.placement.notes["fell_back"] == ("softmax",)
    assert plan.units[-1] == "phone.cpu_big"  # the first cpu of the node by default
    assert set(plan.units[:-1]) == {"phone.npu"}
    assert plan.label == "device"
    result = simulate(scenario)
    onchip = result.transfers[result.transfers["kind"] == "onchip"]
    assert len(onchip) == 2  # one npu -> cpu copy per request
    phone = scenario.platform.nodes["phone"]
    sync_s = phone.sync_s
    copy_s = onchip["bytes"].iloc[0] / phone.shared_memory_bandwidth_bytes_per_s
    assert (onchip["end_s"] - onchip["start_s"]).to_numpy() == pytest.approx([sync_s + copy_s] * 2)


def test_offload_picks_the_fastest_unit_of_the_node_and_labels_it():
    plan = plan_apps(flagship({"policy": "offload", "node": "cloud"}))["cam"]
    assert set(plan.units) == {"cloud.gpu"}
    assert plan.label == "cloud"
    named = plan_apps(flagship({"policy": "offload", "node": "cloud", "unit": "cpu"}))["cam"]
    assert set(named.units) == {"cloud.cpu"}


def test_manual_rules_first_match_wins_and_split_label():
    scenario = flagship(
        {
            "policy": "manual",
            "rules": [{"ops": "conv1*", "unit": "gpu"}, {"kind": "conv", "unit": "cloud.gpu"}],
            "default": "cloud.gpu",
        },
        zoo="alexnet",
        dtype="fp16",
    )
    plan = plan_apps(scenario)["cam"]
    units = dict(zip(plan.ops, plan.units, strict=True))
    assert units["conv1"] == "phone.gpu"
    assert units["relu1"] == "cloud.gpu"
    assert plan.label == "split@conv1"


def _toy() -> tuple[ModelGraph, CostOracle]:
    scenario = parse_scenario(
        {
            "name": "toy",
            "nodes": {
                "d": {"units": {"cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}}}},
                "e": {
                    "role": "edge",
                    "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 9}}},
                },
            },
            "links": {"l": {"ends": ["d", "e"], "latency_ms": 1, "bandwidth_mbps": 8}},
            "models": {"m": {"ops": [{"name": "x", "flops": 1}]}},
            "workload": [
                {
                    "app": "a",
                    "model": "m",
                    "source": "d",
                    "arrival": {"process": "trace", "times_ms": [0]},
                }
            ],
            "placement": {"policy": "single", "unit": "cpu"},
        }
    )
    graph = ModelGraph(
        "g",
        [Op("a", "conv", flops=2), Op("b", "fc", flops=2), Op("c", "fc", flops=2)],
        [Edge("a", "b", 8), Edge("b", "c", 8)],
    )
    return graph, CostOracle(scenario.platform)


@pytest.mark.parametrize(
    ("units", "label"),
    [
        (("d.cpu", "d.cpu", "d.cpu"), "device"),
        (("e.gpu", "e.gpu", "e.gpu"), "e"),
        (("d.cpu", "e.gpu", "e.gpu"), "split@a"),
        (("d.cpu", "d.cpu", "e.gpu"), "split@b"),
        (("d.cpu", "e.gpu", "d.cpu"), "mixed"),
        (("e.gpu", "d.cpu", "d.cpu"), "mixed"),
    ],
)
def test_decision_labels(units, label):
    graph, oracle = _toy()
    placement = Placement(dict(zip(graph.order, units, strict=True)), graph.order, "t", "d")
    assert placement.label(oracle) == label


def test_check_placement_rejects_bad_orders_and_units():
    graph, oracle = _toy()
    good = dict.fromkeys(graph.order, "d.cpu")
    with pytest.raises(PlacementError, match="before its input"):
        check_placement(graph, Placement(good, ("b", "a", "c"), "t", "d"), oracle)
    with pytest.raises(PlacementError, match="without a unit"):
        check_placement(graph, Placement({"a": "d.cpu"}, graph.order, "t", "d"), oracle)
    with pytest.raises(PlacementError, match="unknown unit"):
        check_placement(graph, Placement(dict(good, b="d.tpu"), graph.order, "t", "d"), oracle)


def test_a_callable_policy_is_accepted_and_checked():
    graph, oracle = _toy()

    def everything_on_the_edge(graph, oracle, source, options):
        return Placement(dict.fromkeys(graph.order, "e.gpu"), graph.order, "edge_all", source)

    placement = place(PlacementSpec(everything_on_the_edge), graph, oracle, "d")
    assert placement.label(oracle) == "e"

    def broken(graph, oracle, source, options):
        return {"a": "d.cpu"}

    with pytest.raises(PlacementError, match="not a Placement"):
        place(PlacementSpec(broken), graph, oracle, "d")


def test_the_shipped_example_offloads(tmp_path):
    scenario = load_scenario("scenarios/examples/alexnet_phone_cloud.yaml")
    assert plan_apps(scenario)["camera"].label == "cloud"
