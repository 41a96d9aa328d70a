"""Stochastic op times and background load in the engine (docs/stochastic.md): seeded
streams reproduced draw for draw, means preserved, energy = busy power x real time,
processor sharing hand-computed, invariants on random scenarios, schema errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from engine.test_invariants import SETTINGS, check_invariants, check_power_series
from engine.test_queueing import queue_document
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import scenarios

from simulator.engine import plan_apps, simulate
from simulator.engine.variation import variation_seed
from simulator.errors import ScenarioError
from simulator.hardware.variation import TimeVariation
from simulator.placement.attribution import gap_table
from simulator.platform import CostOracle
from simulator.spec import parse_scenario
from simulator.sweep.execute import fast_path_applies


def lognormal_document(n: int = 200) -> dict:
    doc = queue_document(n, 100.0)
    unit = doc["nodes"]["box"]["units"]["cpu"]
    unit["variation"] = {"default": {"distribution": "lognormal", "cv": 0.3}}
    unit["active_w"] = 2.0
    return doc


def test_op_times_are_the_units_stream_draw_for_draw():
    """Op k on the unit lasts 1 ms x draw k of SeedSequence(seed, (replicate, EXEC, h))."""
    doc = lognormal_document()
    for replicate in (0, 1):
        ops = simulate(parse_scenario(doc), replicate=replicate).ops.sort_values("start_s")
        rng = np.random.default_rng(variation_seed(doc["seed"], replicate, "box.cpu", "default"))
        factors = TimeVariation("lognormal", 0.3).draw(rng, 1024)[: len(ops)]
        durations = (ops["end_s"] - ops["start_s"]).to_numpy()
        np.testing.assert_allclose(durations, 1e-3 * factors, rtol=1e-9)
        # the unit draws its busy power over the real time
        energy = ops["energy_j"].to_numpy()
        np.testing.assert_allclose(energy, 2.0 * durations, rtol=1e-12)


def test_same_seed_same_tables_and_another_app_leaves_the_stream_alone():
    doc = lognormal_document()
    first, again = simulate(parse_scenario(doc)), simulate(parse_scenario(doc))
    pd_cols = ["start_s", "end_s", "energy_j"]
    assert first.ops[pd_cols].equals(again.ops[pd_cols])
    assert first.summary == again.summary
    other = copy.deepcopy(doc)  # an app on another unit draws nothing from box.cpu's stream
    other["nodes"]["box"]["units"]["gpu"] = {
        "kind": "gpu",
        "peak_gflops": {"fp32": 1},
        "variation": {"default": {"distribution": "gamma", "cv": 1.0}},
    }
    other["workload"].append(
        {**doc["workload"][0], "app": "other", "placement": {"policy": "manual", "default": "gpu"}}
    )
    ops = simulate(parse_scenario(other)).ops
    mine = ops[ops["unit"] == "box.cpu"].sort_values("start_s")
    base = first.ops.sort_values("start_s")
    np.testing.assert_array_equal(
        (mine["end_s"] - mine["start_s"]).to_numpy(), (base["end_s"] - base["start_s"]).to_numpy()
    )


def test_mean_op_time_is_the_cost_models():
    ops = simulate(parse_scenario(lognormal_document(20_000)), trace="full").ops
    # 20,000 draws of cv 0.3: the mean's sd is 0.21 %; 1 % is 4.7 sd
    assert (ops["end_s"] - ops["start_s"]).mean() == pytest.approx(1e-3, rel=0.01)


def one_request(background: dict) -> dict:
    doc = queue_document(1, 100.0)
    doc["workload"][0]["arrival"] = {"process": "trace", "times_ms": [500]}
    unit = doc["nodes"]["box"]["units"]["cpu"]
    del unit["variation"]
    unit["background"] = background
    unit["active_w"], unit["idle_w"] = 3.0, 1.0
    return doc


def test_constant_background_halves_the_speed():
    result = simulate(parse_scenario(one_request({"utilisation": 0.5})))
    # 1 ms of work at half speed (latency = (0.5 s + 2 ms) - 0.5 s: an ulp off)
    assert result.summary["latency_mean_s"] == pytest.approx(2e-3, rel=1e-12)
    assert result.units["busy_s"].iloc[0] == 2e-3
    assert result.ops["energy_j"].iloc[0] == 3.0 * 2e-3


def test_background_trace_is_processor_sharing():
    # from t = 0.5 s: 0.25 ms at 20 % speed (to 0.50025 s) = 0.05 ms of work, then the
    # other 0.95 ms at full speed: 1.2 ms in all
    trace = [[0, 0.8], [0.50025, 0.0]]
    result = simulate(parse_scenario(one_request({"trace": trace})))
    assert result.summary["latency_mean_s"] == pytest.approx(1.2e-3, rel=1e-9)


def _vary(doc: dict, distribution: str, utilisation: float) -> dict:
    """Every other phone unit varies, the others carry a background load."""
    for k, unit in enumerate(doc["nodes"]["phone"]["units"].values()):
        if k % 2:
            unit["background"] = {"utilisation": utilisation}
        elif distribution == "exponential":
            unit["variation"] = {"default": {"distribution": distribution}}
        else:
            unit["variation"] = {"default": {"distribution": distribution, "cv": 0.5}}
    return doc


FEWER = settings(SETTINGS, max_examples=20)
HOW = (st.sampled_from(["lognormal", "gamma", "exponential"]), st.floats(0, 0.9))


@FEWER
@given(scenarios(), *HOW)
def test_invariants_hold_with_variation_and_background(doc, distribution, utilisation):
    """Causality, capacity, nothing lost, energy = ∫ P dt (shared DRAM, batteries)."""
    doc = _vary(doc, distribution, utilisation)
    check_invariants(doc, simulate(parse_scenario(doc)))


@FEWER
@given(scenarios(power_management=True), *HOW)
def test_power_series_hold_with_variation_and_background(doc, distribution, utilisation):
    """The power rows integrate to each unit's energy at every DVFS level, temperature
    follows them, each op's level is the governor's."""
    scenario = parse_scenario(_vary(doc, distribution, utilisation))
    check_power_series(scenario, simulate(scenario))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"variation": {"default": {"distribution": "lognormel", "cv": 0.2}}},
            "variation.default.distribution: unknown execution-time distribution 'lognormel'",
        ),
        (
            {"variation": {"default": {"distribution": "gamma", "cv": -1}}},
            "variation.default.cv: expected a number >= 0",
        ),
        (
            {"variation": {"convv": {"distribution": "exponential"}}},
            "variation.convv",
        ),
        (
            {"variation": {"default": {"distribution": "exponential", "cv": 0.5}}},
            "unknown key 'cv' in exponential variation",
        ),
        ({"background": {"utilisation": 1.0}}, "background.utilisation: expected a number"),
        ({"background": {"utilisation": 0.2, "trace": [[0, 0.1]]}}, "give exactly one of"),
        (
            {"background": {"trace": [[1, 0.1], [0.5, 0.2]]}},
            "nodes.box.units.cpu: background point 1: times must increase",
        ),
    ],
)
def test_schema_errors_name_the_path(change, message):
    doc = queue_document(1, 100.0)
    doc["nodes"]["box"]["units"]["cpu"].update(change)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    assert message in str(caught.value)


def test_sweeps_fast_path_leaves_drawn_times_to_the_engine():
    """The estimate knows the mean time only: a varied or loaded unit needs the run."""
    doc = queue_document(1, 100.0)  # variation 'deterministic': nothing drawn
    assert fast_path_applies(parse_scenario(doc))
    doc["nodes"]["box"]["units"]["cpu"]["variation"] = {"conv": {"distribution": "exponential"}}
    assert not fast_path_applies(parse_scenario(doc))
    del doc["nodes"]["box"]["units"]["cpu"]["variation"]
    doc["nodes"]["box"]["units"]["cpu"]["background"] = {"utilisation": 0.1}
    assert not fast_path_applies(parse_scenario(doc))


def test_explain_names_drawn_op_times_as_their_own_cause():
    """The gap of a varied unit's ops is 'op time drawn', not shared DRAM or queueing."""
    doc = lognormal_document(50)
    doc["workload"][0]["arrival"] = {"process": "periodic", "period_ms": 100}  # no queue
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["app"]
    result = simulate(scenario)
    gap = gap_table(plan, oracle, "app", result.requests, result.ops, result.transfers)
    ms = dict(zip(gap["cause"], gap["ms"], strict=True))
    drawn_ms = ((result.ops["end_s"] - result.ops["start_s"]).mean() - 1e-3) * 1e3
    assert ms["op time drawn"] == pytest.approx(drawn_ms, rel=1e-9, abs=1e-12)
    assert ms["shared DRAM"] == 0.0 and abs(ms["queueing"]) < 1e-9
