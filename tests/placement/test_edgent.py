"""Edgent's exit + partition search (Li et al., IEEE TWC 2020) on a case computed by hand.

The phone's cpu does 1 GFLOP/s, the cloud gpu 1000 GFLOP/s, the link 10 Mbit/s each way
with no latency. Chain a (4 MFLOP, 100 kB in, 10 kB out) -> b (8 MFLOP, 2 kB out) ->
c (16 MFLOP, 40 B out); exit e1 after a with head h1 (1 MFLOP, 40 B out), exit e2 after
b with head h2 (1 MFLOP, 40 B out); top-1 60 / 75 / 90 % (final).

Each right-sized model's best prefix cut, by hand (ms; 10 kB = 8 ms, 2 kB = 1.6 ms,
40 B = 0.032 ms, 100 kB = 80 ms on the link):

* e1 (a, h1): phone 4 + 1 = 5; cut after a 4 + 8 + 0.001 + 0.032 = 12.033 -> 5 (phone)
* e2 (a, b, h2): phone 13; after a 4 + 8 + 0.008 + 0.001 + 0.032 = 12.041; after b
  12 + 1.6 + 0.001 + 0.032 = 13.633 -> 12.041 (split after a)
* final (a, b, c): phone 28; after a 4 + 8 + 0.008 + 0.016 + 0.032 = 12.056; after b
  12 + 1.6 + 0.016 + 0.032 = 13.648 -> 12.056 (split after a)
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from simulator.engine import simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.placement.base import place
from simulator.placement.edgent import ExitOption, edgent_choice
from simulator.platform import CostOracle
from simulator.score.indicators import scenario_indicators
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12
BEST_MS = {"e1": 5.0, "e2": 12.041, "final": 12.056}


def edgent_document(deadline_ms: float, bandwidth_mbps: float = 10, **options) -> dict:
    cpu = {"kind": "cpu", "peak_gflops": {"fp32": 1}, "efficiency": {"default": 1.0}}
    gpu = {"kind": "gpu", "peak_gflops": {"fp32": 1000}, "efficiency": {"default": 1.0}}
    for unit in (cpu, gpu):
        unit.update(idle_w=0.0, active_w=1.0)
    head = [{"kind": "fc", "flops": 1e6, "output_elems": 10}]
    return {
        "name": "edgent_hand",
        "seed": 1,
        "nodes": {
            "phone": {"role": "device", "units": {"cpu": cpu}},
            "edge": {"role": "edge", "units": {"gpu": gpu}},
        },
        "links": {
            "l": {
                "ends": ["phone", "edge"],
                "latency_ms": 0,
                "bandwidth_mbps": bandwidth_mbps,
                "reverse_bandwidth_mbps": bandwidth_mbps,
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "a",
                        "kind": "conv",
                        "flops": 4e6,
                        "input_elems": 25000,
                        "output_elems": 2500,
                    },
                    {"name": "b", "kind": "conv", "flops": 8e6, "output_elems": 500},
                    {"name": "c", "kind": "fc", "flops": 16e6, "output_elems": 10},
                ],
                "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
                "accuracy_top1": 90,
                "exits": [
                    {
                        "name": "e1",
                        "after": "a",
                        "head": [{"name": "h1", **head[0]}],
                        "accuracy_top1": 60,
                    },
                    {
                        "name": "e2",
                        "after": "b",
                        "head": [{"name": "h2", **head[0]}],
                        "accuracy_top1": 75,
                    },
                ],
            }
        },
        "workload": [
            {
                "app": "x",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 200},
                "count": 3,
            }
        ],
        "placement": {"policy": "edgent", "node": "edge", "deadline_ms": deadline_ms, **options},
    }


# -- the search alone ------------------------------------------------------------------------
HAND = [ExitOption(n, a, BEST_MS[n] * 1e-3) for n, a in (("e1", 60), ("e2", 75), ("final", 90))]


@pytest.mark.parametrize(
    ("requirement_ms", "chosen"),
    [(20, 2), (12.056, 2), (12.05, 1), (12.041, 1), (12.0, 0), (5.0, 0), (4.99, None)],
)
def test_the_most_accurate_exit_that_meets_the_requirement(requirement_ms, chosen):
    assert edgent_choice(HAND, requirement_ms * 1e-3) == chosen


def test_ties_in_accuracy_go_to_the_deeper_exit_and_nan_never_meets():
    options = [ExitOption("a", 70, 1e-3), ExitOption("b", 70, 2e-3), ExitOption("c", 90, math.nan)]
    assert edgent_choice(options, 5e-3) == 1
    assert edgent_choice(options[:1] + options[2:], 5e-3) == 0
    assert edgent_choice([ExitOption("c", 90, math.nan)], 1.0) is None


# -- the policy and the run ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("deadline_ms", "exit_name", "decision", "latency_ms"),
    [
        (20, "final", "final:split@a", 12.056),
        (12.05, "e2", "e2:split@a", 12.041),
        (12.0, "e1", "e1:device", 5.0),
    ],
)
def test_edgent_on_the_hand_case(deadline_ms, exit_name, decision, latency_ms):
    scenario = parse_scenario(edgent_document(deadline_ms))
    result = simulate(scenario)
    assert result.summary["decision"] == decision
    assert set(result.requests["exit"]) == {exit_name}
    assert result.requests["latency_s"].to_numpy() == pytest.approx(latency_ms * 1e-3, rel=1e-9)
    # the right-sized model: the exit's trunk and head, nothing else
    ran = set(result.ops["op"])
    assert ran == {"e1": {"a", "h1"}, "e2": {"a", "b", "h2"}, "final": {"a", "b", "c"}}[exit_name]
    accuracy = {"e1": 60.0, "e2": 75.0, "final": 90.0}[exit_name]
    assert scenario_indicators(scenario, math.nan)["accuracy_top1"] == accuracy


def test_a_slow_link_keeps_a_shallower_exit_on_the_phone():
    # 1 Mbit/s: every split pays >= 80 ms; on the phone e2 takes 13 ms, final 28 ms
    result = simulate(parse_scenario(edgent_document(20, bandwidth_mbps=1)))
    assert result.summary["decision"] == "e2:device"
    assert result.requests["latency_s"].to_numpy() == pytest.approx(13e-3, rel=EXACT)


def test_no_exit_meets_the_requirement():
    with pytest.raises(PlacementError, match="no exit meets the latency requirement 4 ms") as err:
        simulate(parse_scenario(edgent_document(4)))
    for text in ("e1 (60 %): 5 ms", "e2 (75 %): 12.04 ms", "final (90 %): 12.06 ms"):
        assert text in str(err.value)
    # miss: fastest keeps the fastest exit (e1 on the phone), the requirement missed
    result = simulate(parse_scenario(edgent_document(4, miss="fastest")))
    assert result.summary["decision"] == "e1:device"
    assert result.requests["latency_s"].to_numpy() == pytest.approx(5e-3, rel=EXACT)


def test_edgent_needs_a_requirement_exits_and_their_accuracies():
    doc = edgent_document(20)
    del doc["placement"]["deadline_ms"]
    with pytest.raises(ScenarioError, match="deadline_ms"):
        parse_scenario(doc)
    doc = edgent_document(20)
    del doc["models"]["m"]["exits"][1]["accuracy_top1"]
    with pytest.raises(PlacementError, match="give accuracy_top1 for e2"):
        simulate(parse_scenario(doc))
    doc = edgent_document(20)
    del doc["models"]["m"]["exits"]
    with pytest.raises(PlacementError, match="declares no exits"):
        simulate(parse_scenario(doc))


EXAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "examples" / "edgent_early_exit.yaml"


@pytest.mark.parametrize(
    ("bandwidth_mbps", "deadline_ms", "decision"),
    [
        (10, 30, "e2:device"),
        (100, 30, "final:split@pool1"),
        (1000, 30, "final:edge"),
        (10, 50, "e3:device"),
        (20, 100, "final:split@pool5"),
        (1000, 10, "e1:device"),
        (1000, 5, None),
    ],
)
def test_the_shipped_example_decides_as_docs_early_exit_says(bandwidth_mbps, deadline_ms, decision):
    document = copy.deepcopy(dict(load_scenario(EXAMPLE).document))
    document.pop("sweep")
    document["links"]["wlan"]["bandwidth_mbps"] = bandwidth_mbps
    document["placement"]["deadline_ms"] = deadline_ms
    scenario = parse_scenario(document, base_dir=EXAMPLE.parent)
    oracle = CostOracle(scenario.platform)
    spec = scenario.placement
    if decision is None:
        with pytest.raises(PlacementError, match="no exit meets"):
            place(spec, scenario.models["alexnet"], oracle, "phone")
        return
    placement = place(spec, scenario.models["alexnet"], oracle, "phone")
    assert placement.label(oracle) == decision


def test_the_request_mix_docs_early_exit_tabulates():
    from simulator.engine import plan_apps
    from simulator.placement.estimate import estimate
    from simulator.placement.exitplan import exit_plans, expected_latency_s

    document = copy.deepcopy(dict(load_scenario(EXAMPLE).document))
    document.pop("sweep")
    exits = document["models"]["alexnet"]["exits"]
    for share, exit_ in zip((0.3, 0.2, 0.15, 0.1), exits, strict=True):
        exit_["probability"] = share
    document["placement"] = {"policy": "single", "unit": "phone.cpu_little"}
    scenario = parse_scenario(document, base_dir=EXAMPLE.parent)
    oracle = CostOracle(scenario.platform)
    graph = scenario.models["alexnet"]
    plans = exit_plans(graph, plan_apps(scenario, oracle)["camera"], oracle)
    latency_ms = [round(estimate(p, oracle).latency_s * 1e3, 3) for p in plans]
    assert latency_ms == [7.574, 30.158, 46.368, 73.727, 97.25]
    assert round(expected_latency_s(plans, graph.shares, oracle) * 1e3, 2) == 46.94
