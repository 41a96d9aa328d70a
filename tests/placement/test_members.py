"""Identical fleet members share one placement decision, and the plans are bit for bit
those of placing every member on its own (simulator/placement/members.py)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.engine import plan_replicas, simulate
from simulator.placement.base import place
from simulator.placement.members import Planner, node_shape
from simulator.placement.plan import compile_plan
from simulator.placement.requestio import with_request_io
from simulator.platform import CostOracle
from simulator.spec import parse_scenario


def fleet_doc(count: int = 4, policy: dict | None = None) -> dict:
    """``count`` phones (cpu + npu) on one shared medium to an edge server; a 3-op model."""
    free = {"efficiency": {"default": 1.0}, "idle_w": 0.0, "active_w": 1.0}
    return {
        "name": "members",
        "seed": 3,
        "duration_s": 2,
        "nodes": {
            "phone": {
                "role": "device",
                "units": {
                    "cpu": {"kind": "cpu", "peak_gflops": {"fp32": 2}, **free},
                    "npu": {"kind": "npu", "peak_gflops": {"fp32": 20}, **free,
                            "supports": ["conv"]},
                },
                "fleet": {"count": count},
            },
            "edge": {
                "role": "edge",
                "units": {"gpu": {"kind": "gpu", "peak_gflops": {"fp32": 500}, **free}},
            },
        },
        "links": {
            "wlan": {
                "kind": "shared",
                "access_point": "edge",
                "stations": ["phone"],
                "latency_ms": 2,
                "bandwidth_mbps": 100,
                "station_rates": {"phone[1]": {"up_mbps": 10}},  # a far member: other moves
            }
        },
        "models": {
            "m": {
                "ops": [
                    {"name": "a", "kind": "conv", "flops": 2e7, "input_elems": 50_000,
                     "output_elems": 20_000},
                    {"name": "b", "kind": "fc", "flops": 4e6, "input_elems": 20_000,
                     "output_elems": 1_000},
                    {"name": "c", "kind": "fc", "flops": 1e6, "input_elems": 1_000,
                     "output_elems": 10},
                ],
                "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}],
            }
        },
        "workload": [
            {"app": "cam", "model": "m", "source": "phone",
             "arrival": {"process": "poisson", "rate_hz": 4}}
        ],
        "placement": policy or {"policy": "offload", "node": "edge"},
    }  # fmt: skip


def separately(scenario) -> dict:
    """Every app placed and compiled on its own (what plan_replicas did before sharing)."""
    oracle = CostOracle(scenario.platform)
    out = {}
    for entry in scenario.workload:
        plans = []
        for spec in scenario.placements_for(entry):
            graph = scenario.models[entry.model]
            placement = place(spec, graph, oracle, entry.source)
            plan = compile_plan(placement.graph or graph, placement, oracle)
            plans.append(with_request_io(plan, entry.input_bytes, entry.response_bytes))
        out[entry.app] = tuple(plans)
    return out


def planned(scenario) -> tuple[dict, Planner]:
    planner = Planner(scenario, CostOracle(scenario.platform))
    return {
        e.app: planner.plan(e, scenario.placements_for(e)[0]) for e in scenario.workload
    }, planner


MANUAL = {
    "policy": "manual",
    "rules": [{"ops": "a", "unit": "npu"}, {"kind": "fc", "unit": "edge.gpu"}],
    "default": "cpu",
}


@pytest.mark.parametrize(
    "policy",
    [
        {"policy": "offload", "node": "edge"},
        {"policy": "single", "unit": "cpu"},
        {"policy": "fallback", "preferred": "npu"},
        MANUAL,
    ],
    ids=["offload", "single", "fallback", "manual"],
)
def test_a_shared_decision_gives_the_plans_of_placing_each_member(policy):
    scenario = parse_scenario(fleet_doc(4, policy))
    plans, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (1, 3)  # one decision for four phones
    assert plan_replicas(scenario) == separately(scenario)  # every field, bit for bit
    # the decision is the member's own: its units, its source, its route
    plan = plans["cam[2]"]
    assert plan.source == "phone[2]"
    assert all(not u.startswith("phone[") or u.startswith("phone[2].") for u in plan.units)


def test_the_far_member_keeps_its_own_moves():
    scenario = parse_scenario(fleet_doc(3))
    plans, planner = planned(scenario)
    assert planner.shared == 2
    (near,), (far,) = plans["cam[0]"].input_moves, plans["cam[1]"].input_moves
    assert [h.link for h in near.hops] == ["wlan/phone[0]"]
    assert [h.link for h in far.hops] == ["wlan/phone[1]"]
    # 200 kB input: 16 ms at 100 Mbit/s, 160 ms at 10, plus 2 ms of latency
    assert near.transfer.time_s(near.nbytes) == pytest.approx(0.016 + 0.002)
    assert far.transfer.time_s(far.nbytes) == pytest.approx(0.160 + 0.002)


def test_the_run_is_bit_identical_with_and_without_sharing():
    scenario = parse_scenario(fleet_doc(5, MANUAL))
    shared = simulate(scenario, trace="summary")
    alone = simulate(scenario, trace="summary", plans=separately(scenario))
    for name in ("requests", "units", "links", "energy", "apps", "fleets", "media"):
        a, b = getattr(shared, name), getattr(alone, name)
        assert a.equals(b), name
    assert shared.summary == alone.summary


def test_members_made_different_by_vary_are_placed_each():
    doc = fleet_doc(4)
    doc["nodes"]["phone"]["fleet"]["vary"] = {"units.npu.peak_gflops.fp32": {"low": 10, "high": 30}}
    scenario = parse_scenario(doc)
    _, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (4, 0)
    assert plan_replicas(scenario) == separately(scenario)


def test_a_vary_draw_equal_for_two_members_shares_again():
    # a distribution with one value draws it for every member: identical nodes
    doc = fleet_doc(3)
    doc["nodes"]["phone"]["fleet"]["vary"] = {"units.cpu.peak_gflops.fp32": {"low": 3, "high": 3}}
    _, planner = planned(parse_scenario(doc))
    assert (planner.placed, planner.shared) == (1, 2)


@pytest.mark.parametrize(
    "policy",
    [{"policy": "heft"}, {"policy": "split_point", "node": "edge"}],
    ids=["heft", "split_point"],
)
def test_policies_that_read_routes_or_every_unit_are_placed_per_member(policy):
    scenario = parse_scenario(fleet_doc(3, policy))
    _, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (3, 0)


def test_a_time_tabled_for_one_member_by_id_makes_the_model_unshared():
    doc = fleet_doc(3, {"policy": "single", "unit": "cpu"})
    doc["models"]["m"]["ops"][2]["time_ms"] = {"phone[1].cpu": 7, "cpu": 1, "gpu": 1}
    scenario = parse_scenario(doc)
    plans, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (3, 0)
    assert plans["cam[1]"].duration_s[2] == pytest.approx(0.007)
    assert plans["cam[0]"].duration_s[2] == pytest.approx(0.001)


def test_an_entry_placement_naming_the_fleet_is_shared_per_member():
    doc = fleet_doc(3)
    doc["workload"][0]["placement"] = {"policy": "single", "unit": "phone.npu"}
    doc["models"]["m"]["ops"] = doc["models"]["m"]["ops"][:1]  # the npu runs conv only
    doc["models"]["m"].pop("edges")
    scenario = parse_scenario(doc)
    plans, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (1, 2)
    assert plans["cam[2]"].units == ("phone[2].npu",)
    assert plan_replicas(scenario) == separately(scenario)


def test_an_entry_placement_naming_one_member_is_not_renamed():
    # every member offloads to phone[0]'s npu: phone[0] itself is not like the others
    doc = fleet_doc(3)
    doc["workload"][0]["placement"] = {"policy": "single", "unit": "phone[0].npu"}
    doc["models"]["m"]["ops"] = doc["models"]["m"]["ops"][:1]
    doc["models"]["m"].pop("edges")
    scenario = parse_scenario(doc)
    plans, planner = planned(scenario)
    assert (planner.placed, planner.shared) == (2, 1)  # phone[0]; phone[1] for phone[2]
    assert [plans[f"cam[{i}]"].units for i in range(3)] == [("phone[0].npu",)] * 3
    assert plan_replicas(scenario) == separately(scenario)


def test_node_shape_tells_zero_from_minus_zero():
    scenario = parse_scenario(fleet_doc(2))
    node = scenario.platform.nodes["phone[0]"]
    other = copy.copy(node)
    object.__setattr__(other, "sync_s", -0.0)
    assert node.sync_s == 0.0 and other.sync_s == node.sync_s  # == cannot tell them apart
    assert node_shape(node) != node_shape(other)


POLICIES = [
    {"policy": "offload", "node": "edge"},
    {"policy": "offload", "node": "phone"},  # a fleet entry's 'phone': the member
    {"policy": "single", "unit": "cpu"},
    {"policy": "fallback", "preferred": "npu"},
    MANUAL,
]


@settings(max_examples=20, deadline=None)
@given(
    count=st.integers(1, 5),
    policy=st.sampled_from(POLICIES),
    in_entry=st.booleans(),
    vary=st.sampled_from([None, (3, 3), (1, 4)]),
    far=st.integers(0, 4),
)
def test_sharing_never_changes_a_plan(count, policy, in_entry, vary, far):
    in_entry = in_entry or policy.get("node") == "phone"  # the fleet names a member there only
    doc = fleet_doc(count, None if in_entry else policy)
    if in_entry:
        doc["workload"][0]["placement"] = policy
    if vary is not None:
        low, high = vary
        doc["nodes"]["phone"]["fleet"]["vary"] = {
            "units.cpu.peak_gflops.fp32": {"low": low, "high": high}
        }
    doc["links"]["wlan"]["station_rates"] = {f"phone[{far % count}]": {"up_mbps": 10}}
    scenario = parse_scenario(doc)
    _, planner = planned(scenario)
    assert planner.placed + planner.shared == count
    if vary == (1, 4) and count > 1:
        assert planner.shared == 0  # every member draws its own peak
    assert plan_replicas(scenario) == separately(scenario)
