"""Published schedules the engine must reproduce exactly."""

from __future__ import annotations

import pytest

from simulator.engine import plan_apps, simulate
from simulator.placement.estimate import estimate
from simulator.platform import CostOracle
from simulator.spec import load_scenario

# Topcuoglu et al. 2002, Fig. 4a: HEFT's schedule of the Fig. 2 graph (start, end).
HEFT_SCHEDULE = {
    "t1": ("p3", 0, 9),
    "t3": ("p3", 9, 28),
    "t4": ("p2", 18, 26),
    "t2": ("p1", 27, 40),
    "t5": ("p3", 28, 38),
    "t6": ("p2", 26, 42),
    "t9": ("p2", 56, 68),
    "t7": ("p3", 38, 49),
    "t8": ("p1", 57, 62),
    "t10": ("p2", 73, 80),
}


def test_heft_paper_schedule_and_makespan_80():
    scenario = load_scenario("scenarios/examples/heft_topcuoglu.yaml")
    result = simulate(scenario)
    ops = result.ops.set_index("op")
    for op, (unit, start_ms, end_ms) in HEFT_SCHEDULE.items():
        assert ops.loc[op, "unit"] == f"host.{unit}"
        assert ops.loc[op, "start_s"] == pytest.approx(start_ms / 1e3, rel=1e-12)
        assert ops.loc[op, "end_s"] == pytest.approx(end_ms / 1e3, rel=1e-12)
    assert result.requests["latency_s"].iloc[0] == pytest.approx(0.080, rel=1e-12)
    oracle = CostOracle(scenario.platform)
    assert estimate(plan_apps(scenario, oracle)["dag"], oracle).latency_s == pytest.approx(0.080)
