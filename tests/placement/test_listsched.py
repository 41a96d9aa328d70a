"""HEFT, CPOP and greedy EFT against the published example and hand-computed schedules."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import plan_apps, simulate
from simulator.errors import PlacementError
from simulator.placement.estimate import estimate
from simulator.placement.listsched import build_cost_table
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXAMPLE = Path("scenarios/examples/heft_topcuoglu.yaml")


def topcuoglu(policy: dict, extra_units: dict | None = None):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["placement"] = policy
    if extra_units:
        doc["nodes"]["host"]["units"].update(extra_units)
    return parse_scenario(doc, base_dir=EXAMPLE.parent)


def test_heft_upward_ranks_are_the_papers_exactly():
    scenario = topcuoglu({"policy": "heft"})
    graph = scenario.models["topcuoglu"]
    oracle = CostOracle(scenario.platform)
    costs = build_cost_table(graph, oracle, "host", {}, "heft")
    assert costs.exact
    ranks = dict(zip(costs.ops, costs.upward_ranks(), strict=True))
    # Topcuoglu et al. 2002, Table 1 (in ms; the schedule runs in seconds)
    paper = {
        "t1": 108,
        "t2": 77,
        "t3": 80,
        "t4": 80,
        "t5": 69,
        "t6": Fraction(190, 3),
        "t7": Fraction(128, 3),
        "t8": Fraction(107, 3),
        "t9": Fraction(133, 3),
        "t10": Fraction(44, 3),
    }
    for op, value in paper.items():
        assert ranks[op] * 1000 == value, op


def test_heft_reproduces_the_published_schedule():
    scenario = topcuoglu({"policy": "heft"})
    plan = plan_apps(scenario)["dag"]
    notes = plan.placement.notes
    assert notes["rank_order"] == ("t1", "t3", "t4", "t2", "t5", "t6", "t9", "t7", "t8", "t10")
    assert notes["scheduled_makespan_s"] == pytest.approx(0.080, rel=1e-12)
    units = dict(zip(plan.ops, plan.units, strict=True))
    assert units == {
        "t1": "host.p3",
        "t2": "host.p1",
        "t3": "host.p3",
        "t4": "host.p2",
        "t5": "host.p3",
        "t6": "host.p2",
        "t7": "host.p3",
        "t8": "host.p1",
        "t9": "host.p2",
        "t10": "host.p2",
    }
    assert simulate(scenario).requests["latency_s"].iloc[0] == pytest.approx(0.080, rel=1e-12)


def test_cpop_reproduces_the_published_makespan_and_critical_path():
    plan = plan_apps(topcuoglu({"policy": "cpop"}))["dag"]
    notes = plan.placement.notes
    assert notes["critical_path"] == ("t1", "t2", "t9", "t10")
    assert notes["critical_path_unit"] == "host.p2"
    assert notes["scheduled_makespan_s"] == pytest.approx(0.086, rel=1e-12)
    assert {
        u for op, u in zip(plan.ops, plan.units, strict=True) if op in notes["critical_path"]
    } == {"host.p2"}


def test_greedy_eft_by_hand():
    # topological order, no insertion: t1 p3 [0,9]; t2 p3 [9,27] (p1 would be 27+13=40);
    # ... the resulting makespan on this graph is 88
    plan = plan_apps(topcuoglu({"policy": "greedy_eft"}))["dag"]
    assert plan.units[plan.ops.index("t1")] == "host.p3"
    assert plan.units[plan.ops.index("t2")] == "host.p3"
    assert plan.placement.notes["scheduled_makespan_s"] == pytest.approx(0.088, rel=1e-12)


@pytest.mark.parametrize("policy", ["heft", "cpop", "peft", "greedy_eft"])
def test_a_unit_that_cannot_run_anything_changes_nothing(policy):
    # "infinitely slow" in scheduling tables is the ∞ entry: the unit is no candidate
    base = plan_apps(topcuoglu({"policy": policy}))["dag"]
    more = plan_apps(topcuoglu({"policy": policy}, {"p4": {"kind": "npu"}}))["dag"]
    assert (more.ops, more.units) == (base.ops, base.units)
    assert more.placement.notes == base.placement.notes


@pytest.mark.parametrize("policy", ["heft", "cpop", "peft", "greedy_eft"])
def test_deadline_and_exclusion_constraints(policy):
    with pytest.raises(PlacementError) as info:
        plan_apps(topcuoglu({"policy": policy, "deadline_ms": 50}))
    assert "exceeds the deadline 50 ms by" in str(info.value)
    plan = plan_apps(topcuoglu({"policy": policy, "exclude": ["p3"]}))["dag"]
    assert "host.p3" not in plan.units
    with pytest.raises(PlacementError, match="every unit is excluded"):
        plan_apps(topcuoglu({"policy": policy, "exclude": ["p1", "p2", "p3"]}))


def test_memory_constraint_names_the_unit_and_excess(small_soc):
    doc = copy.deepcopy(small_soc)
    doc["nodes"]["phone"]["units"]["cpu"]["memory_mb"] = 0.0001  # 100 B, weights are 400 B
    doc["nodes"]["phone"]["units"]["gpu"]["memory_mb"] = 0.0001
    doc["placement"] = {"policy": "heft"}
    with pytest.raises(
        PlacementError, match=r"weights on phone\.\w+ exceed its memory by 0\.0003 MB"
    ):
        plan_apps(parse_scenario(doc))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios(requests=1), st.sampled_from(["heft", "peft"]))
def test_engine_never_exceeds_the_heft_schedule(doc, policy):
    doc["placement"] = {"policy": policy}
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 1}
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    scheduled = plan.placement.notes["scheduled_makespan_s"]
    assert estimate(plan, oracle).latency_s <= scheduled * (1 + 1e-9) + 1e-15
    assert plan_apps(scenario, oracle)["a"].units == plan.units  # deterministic


def _islands(policy: dict) -> dict:
    """A phone and a cloud that no link joins; one 1 MFLOP op from the phone."""
    from conftest import one_op_document

    return one_op_document("islands", policy, {"process": "periodic", "rate_hz": 10}, count=3)


@pytest.mark.parametrize("policy", ["heft", "cpop", "peft", "greedy_eft", "etf"])
def test_a_node_no_link_reaches_is_not_a_candidate(policy):
    """Two nodes and no link: a multi-unit policy places the phone's model on the phone
    (the cloud's GPU is 1000x faster but nothing can carry the input there). Every such
    policy used to fail with "no network route from node 'phone' to node 'cloud'"."""
    result = simulate(parse_scenario(_islands({"policy": policy})))
    assert set(result.ops["unit"]) == {"phone.cpu"}
    assert result.requests["latency_s"].tolist() == pytest.approx([1e-3] * 3, rel=1e-9)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"policy": "min_cut"}, "needs a second node that a link joins to the source node"),
        ({"policy": "min_cut", "remote": "cloud.gpu"}, "no link joins node 'cloud' to the source"),
        ({"policy": "split_point", "node": "cloud"}, "no link joins node 'cloud' to the source"),
    ],
)
def test_a_split_to_a_node_no_link_reaches_is_a_clear_error(policy, message):
    """A device/remote split needs a route to the remote side: say which is missing."""
    with pytest.raises(PlacementError, match=message):
        simulate(parse_scenario(_islands(policy)))


def test_a_split_on_a_one_node_platform_says_what_it_needs():
    doc = _islands({"policy": "split_point"})
    del doc["nodes"]["cloud"]
    with pytest.raises(PlacementError, match=r"needs a second node .* use heft or co_execute"):
        simulate(parse_scenario(doc))
