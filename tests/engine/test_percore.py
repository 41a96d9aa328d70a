"""Per-op cores on a core-pool unit: hand-computed schedules, the ``auto`` rule, errors."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import plan_replicas, simulate
from simulator.errors import PlacementError, ScenarioError
from simulator.graph import Op
from simulator.hardware import ComputeUnit
from simulator.hardware.cores import auto_cores, time_on_cores_s
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

EXACT = 1e-12


def branches_doc(cores_rule=2, fractions=(0.9, 0.9), count: int = 1) -> dict:
    """Two independent 4 MFLOP ops (two branches) on a 4-core, 1 GFLOP/s-per-core cluster."""
    ops = [
        {"name": f"b{k}", "kind": "conv", "flops": 4e6, "parallel_fraction": p}
        for k, p in enumerate(fractions)
    ]
    rule = {"ops": "b*", "unit": "cpu"}
    if cores_rule is not None:
        rule["cores"] = cores_rule
    return {
        "name": "branches",
        "nodes": {
            "phone": {
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "cores": 4,
                        "peak_gflops": {"fp32": 1},
                        "barrier_us": 10,
                        "idle_w": 0.5,
                        "active_w": 4.5,
                    }
                }
            }
        },
        "models": {"m": {"ops": ops}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 100},
                "count": count,
            }
        ],
        "placement": {"policy": "manual", "rules": [rule], "default": "cpu"},
    }


def test_two_branches_on_two_cores_each_run_side_by_side():
    result = simulate(parse_scenario(branches_doc(2)))
    # 2 cores: barrier 10 us x log2 2 + 4e6 / (1e9 / (0.1 + 0.9 / 2)) = 10 us + 2.2 ms
    t2 = 10e-6 + 4e6 * (0.1 + 0.45) / 1e9
    ops = result.ops.set_index("op")
    assert list(ops["start_s"]) == [0, 0]
    assert ops["end_s"].to_numpy() == pytest.approx([t2, t2], rel=EXACT)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(t2, rel=EXACT)
    # each op draws 2/4 of the active power; the unit is busy 2 x t2 x 1/2 whole-unit s
    assert ops["energy_j"].to_numpy() == pytest.approx([4.5 * 0.5 * t2] * 2, rel=EXACT)
    unit = result.units.set_index("unit").loc["phone.cpu"]
    assert unit["busy_s"] == pytest.approx(t2, rel=EXACT)
    window = result.summary["window_end_s"] - result.summary["window_start_s"]
    assert unit["energy_j"] == pytest.approx(0.5 * (window - t2) + 4.5 * t2, rel=EXACT)
    # the power table: both ops at once draw 0.5 + 2 x (4.5 - 0.5) x 2/4 = 4.5 W
    power = result.power[result.power["component"] == "phone.cpu"]
    assert list(power["power_w"]) == pytest.approx([4.5])
    assert power["energy_j"].sum() == pytest.approx(unit["energy_j"], rel=EXACT)


def test_one_op_at_a_time_on_all_cores_is_today_behaviour():
    result = simulate(parse_scenario(branches_doc(None)))
    # 4 cores each, one after the other: 20 us + 4e6 x (0.1 + 0.225) / 1e9 = 1.32 ms each
    t4 = 20e-6 + 4e6 * (0.1 + 0.225) / 1e9
    ops = result.ops.set_index("op")
    assert ops["start_s"].to_numpy() == pytest.approx([0, t4], rel=EXACT)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(2 * t4, rel=EXACT)
    assert 2 * t4 > 10e-6 + 4e6 * 0.55 / 1e9  # side by side on 2 cores each is faster


def test_ops_wait_for_cores_and_are_not_overtaken():
    # three branches of 3 cores on 4: one at a time (each waits for the previous's cores)
    doc = branches_doc(3, fractions=(0.9, 0.9, 0.9))
    t3 = 10e-6 * 1.584962500721156 + 4e6 * (0.1 + 0.3) / 1e9
    ops = simulate(parse_scenario(doc)).ops.sort_values("start_s")
    assert list(ops["op"]) == ["b0", "b1", "b2"]
    assert ops["start_s"].to_numpy() == pytest.approx([0, t3, 2 * t3], rel=EXACT)
    # 3 + 1: the 1-core op queued behind the 3-core head that waits does not overtake it
    doc = branches_doc(2, fractions=(0.9, 0.9, 0.9))
    doc["placement"]["rules"] = [
        {"ops": "b0", "unit": "cpu", "cores": 3},
        {"ops": "b1", "unit": "cpu", "cores": 3},
        {"ops": "b2", "unit": "cpu", "cores": 1},
    ]
    ops = simulate(parse_scenario(doc)).ops.set_index("op")
    t1 = 4e6 / 1e9
    assert ops.loc["b1", "start_s"] == pytest.approx(t3, rel=EXACT)
    assert ops.loc["b2", "start_s"] == pytest.approx(t3, rel=EXACT)  # not at 0 beside b0
    assert ops.loc["b2", "end_s"] == pytest.approx(t3 + t1, rel=EXACT)


def test_two_requests_share_the_pool_in_key_order():
    doc = branches_doc(2, count=2)
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 1}
    t2 = 10e-6 + 4e6 * 0.55 / 1e9
    ops = simulate(parse_scenario(doc)).ops.sort_values(["request_id", "op"])
    # request 1 arrives at 1 ms, its ops wait for request 0's (all 4 cores held)
    assert ops["start_s"].to_numpy() == pytest.approx([0, 0, t2, t2], rel=EXACT)


def test_auto_gives_a_low_parallel_fraction_op_fewer_cores():
    unit = ComputeUnit("cpu", "cpu", peak_flops={"fp32": 1e9}, cores=4)
    low = Op("low", "conv", flops=4e6, parallel_fraction=0.5)
    high = Op("high", "conv", flops=4e6, parallel_fraction=0.95)
    # E(k) = 1 / (k (1 - p) + p): p = 0.5 -> E(2) = 2/3 < 3/4: 1 core;
    # p = 0.95 -> E(4) = 1 / 1.15 = 0.87 >= 3/4 and 4 cores are fastest: 4 cores
    assert auto_cores(low, unit) == 1
    assert auto_cores(high, unit) == 4
    # a looser budget: p = 0.5 -> E(2) = 2/3 >= 0.6, E(3) = 1/2 < 0.6: 2 cores
    assert auto_cores(low, unit, min_efficiency=0.6) == 2
    # a tabled time does not shrink with cores: E(k) = 1/k, one core
    tabled = Op("t", "conv", flops=4e6, time_s={"cpu": 1e-3})
    assert auto_cores(tabled, unit, "cpu") == 1
    assert time_on_cores_s(high, unit, 4) == pytest.approx(4e6 * (0.05 + 0.95 / 4) / 1e9)
    with pytest.raises(ValueError, match="1 to 4"):
        time_on_cores_s(high, unit, 5)


def test_auto_in_a_run_low_fraction_leaves_cores_to_the_other_branch():
    doc = branches_doc("auto", fractions=(0.5, 0.95))
    doc["nodes"]["phone"]["units"]["cpu"]["barrier_us"] = 0
    scenario = parse_scenario(doc)
    (plan,) = plan_replicas(scenario, CostOracle(scenario.platform))["a"]
    assert plan.op_cores == (1, 4)
    # b0 takes 1 core (4 ms); b1 needs all 4 and is not let past: it waits for b0
    ops = simulate(scenario).ops.set_index("op")
    t_b0, t_b1 = 4e-3, 4e6 * (0.05 + 0.95 / 4) / 1e9
    assert ops.loc["b1", "start_s"] == pytest.approx(t_b0, rel=EXACT)
    assert ops.loc["b1", "end_s"] == pytest.approx(t_b0 + t_b1, rel=EXACT)


def test_estimate_equals_the_engine_for_a_lone_request():
    doc = branches_doc(2, fractions=(0.9, 0.6, 0.9))
    doc["placement"]["rules"] = [
        {"ops": "b0", "unit": "cpu", "cores": 2},
        {"ops": "b1", "unit": "cpu", "cores": 1},
        {"ops": "b2", "unit": "cpu", "cores": 2},
    ]
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    (plan,) = plan_replicas(scenario, oracle)["a"]
    guess = estimate(plan, oracle)
    result = simulate(scenario)
    ops = result.ops.set_index("op").loc[list(plan.ops)]
    assert tuple(ops["start_s"]) == guess.start_s
    assert tuple(ops["end_s"]) == guess.end_s
    assert result.requests["latency_s"].iloc[0] == guess.latency_s


@pytest.mark.parametrize(
    ("cores", "message"),
    [(5, "has 4 cores"), ("all", "'auto'"), (0, ">= 1")],
)
def test_bad_cores_are_refused_with_the_fix(cores, message):
    doc = branches_doc(cores)
    with pytest.raises(Exception, match=message) as info:
        simulate(parse_scenario(doc))
    assert isinstance(info.value, ScenarioError) or "cores" in str(info.value)


def test_default_scenarios_build_no_pool():
    doc = copy.deepcopy(branches_doc(None))
    scenario = parse_scenario(doc)
    (plan,) = plan_replicas(scenario, CostOracle(scenario.platform))["a"]
    assert plan.op_cores == () and not plan.pool_units


def test_a_run_time_policy_beside_a_core_pool_is_a_clear_placement_error():
    """A run-time rule reads each unit's workers and queue; a core pool books cores. The
    pair used to fail the run with an AttributeError deep in the engine."""
    doc = branches_doc(2)
    second = copy.deepcopy(doc["workload"][0])
    second["app"] = "b"
    second["placement"] = {"policy": "etf"}
    doc["workload"].append(second)
    with pytest.raises(PlacementError, match=r"core pool: a placement gives unit 'phone.cpu'"):
        simulate(parse_scenario(doc))
