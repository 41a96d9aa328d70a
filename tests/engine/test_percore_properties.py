"""Properties of core-pool units over random DAGs, platforms and per-op cores."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import plan_replicas, simulate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario


@st.composite
def pooled_scenarios(draw) -> dict:
    """A random scenario whose placement gives some ops on phone units per-op cores."""
    doc = draw(scenarios(max_ops=8))
    units = doc["nodes"]["phone"]["units"]
    for rule in doc["placement"]["rules"]:
        name = rule["unit"].split(".")[1]
        if rule["unit"].startswith("phone.") and draw(st.booleans()):
            rule["cores"] = draw(st.one_of(st.integers(1, units[name]["cores"]), st.just("auto")))
    return doc


def _peak_cores(ops, cores_of) -> int:
    """Most cores held at once by the ops' [start, end) intervals (ends before starts)."""
    events = sorted(
        # (time, order, cores): at equal times ends (-1) sort before starts (+1)
        [(e, -1, -cores_of[op]) for op, s, e in ops if e > s]
        + [(s, 1, cores_of[op]) for op, s, e in ops if e > s]
    )
    level = peak = 0
    for _, _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def _integrate(intervals, idle_w: float, window) -> float:
    """∫ power dt: idle plus each open op's increment, on the union of boundaries."""
    points = sorted({*window, *[t for s, e, _ in intervals for t in (s, e)]})
    total = 0.0
    for a, b in itertools.pairwise(points):
        if a < window[0] or b > window[1]:
            continue
        mid = (a + b) / 2
        total += (idle_w + sum(w for s, e, w in intervals if s <= mid < e)) * (b - a)
    return total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pooled_scenarios())
def test_cores_in_use_never_exceed_the_unit_and_energy_is_the_power_integral(doc):
    scenario = parse_scenario(doc)
    (plan,) = plan_replicas(scenario, CostOracle(scenario.platform))["a"]
    result = simulate(scenario)
    ops = result.ops
    if plan.op_cores:
        cores_of = dict(zip(plan.ops, plan.op_cores, strict=True))
        for uid in plan.pool_units:
            mine = ops[ops["unit"] == uid]
            rows = zip(mine["op"], mine["start_s"], mine["end_s"], strict=True)
            peak = _peak_cores(list(rows), cores_of)
            assert peak <= scenario.platform.unit(uid).cores
            if len(mine) and peak > max(cores_of[op] for op in mine["op"]):
                event("a pool ran ops side by side")
    if result.batteries["empty_at_s"].notna().any():
        return  # ops cut short by the battery are not in the trace
    # causality: an op starts after each of its inputs ends (same request)
    by_key = ops.set_index(["request_id", "op"])
    for edge in scenario.models["m"].edges():
        src = by_key.xs(edge.src, level="op")["end_s"].sort_index()
        dst = by_key.xs(edge.dst, level="op")["start_s"].sort_index()
        common = src.index.intersection(dst.index)
        assert (dst.loc[common] >= src.loc[common]).all()
    assert len(result.requests) == doc["workload"][0]["count"]
    # energy = ∫ power dt per unit, each op drawing its own share of the cores
    share = dict(zip(plan.ops, plan.core_share, strict=True))
    window = (result.summary["window_start_s"], result.summary["window_end_s"])
    power = result.power
    for row in result.units.itertuples():
        unit = scenario.platform.unit(row.unit)
        mine = ops[ops["unit"] == row.unit]
        intervals = [
            (s, e, (unit.active_w - unit.idle_w) * share[op])
            for op, s, e in zip(mine["op"], mine["start_s"], mine["end_s"], strict=True)
        ]
        expected = _integrate(intervals, unit.idle_w, window)
        assert row.energy_j == pytest.approx(expected, rel=1e-9, abs=1e-12)
        table_j = power[power["component"] == row.unit]["energy_j"].sum()
        assert table_j == pytest.approx(row.energy_j, rel=1e-9, abs=1e-12)
