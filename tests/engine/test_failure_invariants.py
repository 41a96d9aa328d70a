"""Invariants under random failures (docs/failures.md), on random platforms and graphs:

* no op runs on a unit while it is down (the ``ops`` trace against the ``failures`` table);
* nothing is lost: every request issued ends completed, or dropped with a reason;
* a unit draws no power while down, and its ``power`` rows still integrate to its energy;
* a node's pool under ``memory_policy: refuse`` is never exceeded;
* the same scenario and seed give the same tables, at every trace level the same
  ``failures`` table.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import simulate
from simulator.errors import PlacementError
from simulator.spec import parse_scenario


@st.composite
def failing_scenarios(draw) -> dict:
    """A random scenario with a second replica (all on one random unit), a random
    on_failure and one to three failures of its units or nodes."""
    doc = draw(scenarios(max_ops=5, power_management=draw(st.booleans())))
    app = doc["workload"][0]
    units = [f"{node}.{unit}" for node, spec in doc["nodes"].items() for unit in spec["units"]]
    app["replicas"] = [
        doc.pop("placement"),
        {"policy": "manual", "rules": [], "default": draw(st.sampled_from(units))},
    ]
    app["dispatch"] = draw(st.sampled_from(("round_robin", "jsq")))
    app["on_failure"] = draw(st.sampled_from(("retry", "wait", "drop")))
    targets = [*doc["nodes"], *units]
    failures = []
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(targets))
        if draw(st.booleans()):
            failures.append(
                {
                    "target": target,
                    "at_s": draw(st.floats(0, 0.1)),
                    "for_s": draw(st.floats(1e-4, 0.1)),
                }
            )
        else:
            failures.append(
                {
                    "target": target,
                    "mtbf_s": draw(st.floats(0.005, 0.1)),
                    "mttr_s": draw(st.floats(1e-4, 0.05)),
                    "until_s": draw(st.floats(0, 0.3)),
                }
            )
    doc["failures"] = failures
    doc["memory_series"] = True
    if draw(st.booleans()):  # a pool that refuses what might not fit
        doc["nodes"]["phone"]["memory_gb"] = draw(st.floats(1e-4, 1e-2))
    return doc


def _down(result) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    for row in result.failures.itertuples():
        out.setdefault(row.unit, []).append((row.start_s, row.end_s))
    return out


def run(doc: dict, trace: str = "full"):
    """The run's result; the example is skipped when the phone's pool cannot hold one
    request beside its weights (a placement error, tests/engine/test_memory_pool.py)."""
    try:
        return simulate(parse_scenario(doc), trace=trace)
    except PlacementError as exc:
        assert "memory pool" in str(exc)
        assume(False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failing_scenarios())
def test_invariants_under_random_failures(doc):
    result = run(doc)
    requests, ops = result.requests, result.ops
    # a refusing pool is never exceeded, failures or not
    memory = result.memory
    assert (memory["node_bytes"] <= memory["node_pool_bytes"]).all()
    down = _down(result)
    # no op runs on a down unit: no op interval meets a down interval
    for row in ops.itertuples():
        for start, end in down.get(row.unit, ()):
            assert row.end_s <= start or row.start_s >= end, (row.unit, row.start_s, start)
    # nothing lost
    stopped = bool(result.batteries["empty_at_s"].notna().any())
    if not stopped:
        assert len(requests) == doc["workload"][0]["count"]
    assert set(requests["status"]) <= {"completed", "dropped"}
    dropped = requests[requests["status"] == "dropped"]
    assert (dropped["drop_reason"].str.len() > 0).all()
    if doc["workload"][0]["on_failure"] != "drop":
        # a request that does not fit a refusing pool waits: memory drops nothing
        assert dropped["drop_reason"].str.contains("battery").all()
    done = requests[requests["status"] == "completed"]
    assert (done["finish_s"] >= done["arrival_s"]).all()
    # the failures table counts what it did
    table = result.failures
    assert (table["down_s"] > 0).all() and (table["end_s"] > table["start_s"]).all()
    assert (table["retried"] + table["parked"] + table["dropped"] <= table["requests_hit"]).all()
    if doc["workload"][0]["on_failure"] == "drop" and not stopped:
        assert len(dropped) == table["dropped"].sum()
    # power: nothing while down, the rows integrate to each component's energy
    w0, w1 = result.summary["window_start_s"], result.summary["window_end_s"]
    power = result.power
    for row in result.energy.itertuples():
        mine = power[power["component"] == row.component]
        assert mine["energy_j"].sum() == pytest.approx(row.energy_j, rel=1e-9, abs=1e-12)
        for start, end in down.get(row.component, ()) if not stopped else ():
            # every row that overlaps a down interval draws nothing (rows are constant)
            overlapping = mine[(mine["start_s"] < end) & (mine["end_s"] > start)]
            assert (overlapping["power_w"] == 0).all()
            if min(end, w1) > max(start, w0):
                assert len(overlapping)
    assert (power["energy_j"] >= 0).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failing_scenarios())
def test_failures_are_deterministic_and_the_same_at_every_trace_level(doc):
    full = run(doc)
    again = run(doc)
    assert full.requests.equals(again.requests) and full.ops.equals(again.ops)
    for level in ("summary", "none"):
        other = run(doc, level)
        assert other.failures.equals(full.failures), level
        assert other.units.equals(full.units), level
