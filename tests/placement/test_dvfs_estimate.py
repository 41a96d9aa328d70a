"""The estimate runs DVFS units at their governors' levels, as the engine does, and
``socsim explain`` splits the predicted-vs-simulated gap into its causes.

Hand numbers for the attribution are in :func:`test_gap_shares_by_hand`; the lone-request
property over random scenarios with random governors (levels, latency, zero shares) is
``tests/engine/test_invariants.py::test_lone_request_matches_the_list_schedule_estimate``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import scenarios

from simulator.engine import plan_apps, simulate
from simulator.hardware.dvfs_state import constant_level
from simulator.placement.attribution import CAUSES, gap_table
from simulator.placement.base import DVFS_BASIS, POLICIES, dvfs_basis
from simulator.placement.estimate import back_to_back_s, estimate
from simulator.platform import CostOracle
from simulator.spec import parse_scenario

ROOT = Path(__file__).resolve().parents[2]
EXACT = 1e-12


def _preset_doc(preset: str, unit: str, governor: dict, count: int = 1) -> dict:
    return {
        "name": "lone",
        "seed": 1,
        "include": [str(ROOT / "scenarios" / "devices" / f"{preset}.yaml")],
        "nodes": {"phone": {"preset": preset, "units": {unit: {"dvfs": {"governor": governor}}}}},
        "models": {"m": {"zoo": "mobilenet_v2", "dtype": "fp32"}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "periodic", "period_ms": 100},
                "count": count,
            }
        ],
        "placement": {"policy": "single", "unit": unit},
    }


def _run(doc: dict):
    scenario = parse_scenario(doc, base_dir=ROOT / "scenarios" / "examples")
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    return oracle, plan, simulate(scenario)


GOVERNORS = (
    {"name": "schedutil"},
    {"name": "ondemand"},
    {"name": "performance"},
    {"name": "powersave"},
    {"name": "fixed", "level": 3},
    {"name": "schedutil", "window_ms": 2},
)


@pytest.mark.parametrize("preset", ["flagship_phone", "midrange_phone"])
@pytest.mark.parametrize("unit", ["cpu_big", "gpu"])
@pytest.mark.parametrize("governor", GOVERNORS, ids=lambda g: "-".join(map(str, g.values())))
def test_lone_request_estimate_at_the_governors_levels_equals_the_engine(preset, unit, governor):
    oracle, plan, result = _run(_preset_doc(preset, unit, governor))
    predicted = estimate(plan, oracle)
    assert result.requests["latency_s"].iloc[0] == predicted.latency_s  # bit for bit
    ops = result.ops.set_index("op").loc[list(plan.ops)]
    assert tuple(ops["level"]) == predicted.levels
    assert tuple(ops["start_s"]) == predicted.start_s
    assert tuple(ops["end_s"]) == predicted.end_s
    assert result.requests["energy_j"].iloc[0] == pytest.approx(predicted.op_energy_j, rel=EXACT)
    top = estimate(plan, oracle, levels="top")
    table = oracle.platform.unit(f"phone.{unit}").dvfs
    if governor["name"] == "performance":
        assert set(predicted.levels) == {table.top}
        assert predicted.latency_s == top.latency_s
    else:  # an idle unit starts low: slower than at the top point (what policies assumed)
        assert min(predicted.levels) < table.top
        assert predicted.latency_s > top.latency_s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(power_management=True))
def test_gap_shares_sum_to_the_gap_on_random_scenarios(doc):
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    result = simulate(scenario)
    gap = gap_table(plan, oracle, "a", result.requests, result.ops, result.transfers)
    if gap.empty:
        return
    ms = dict(zip(gap["cause"], gap["ms"], strict=True))
    total = ms["predicted"] + sum(ms[c] for c in CAUSES)
    assert total == pytest.approx(ms["simulated"], rel=1e-9, abs=1e-9)
    assert ms["top level"] + ms["governor, lone request"] == pytest.approx(
        ms["predicted"], rel=1e-12
    )


def _two_requests_doc() -> dict:
    """A phone sends a 5000 B input over a 40 Mbit/s FIFO link (1 ms, no latency, no
    radio) to a server whose one DVFS unit (1 / 2 GHz, ``ondemand`` over 2 ms) runs a
    1 ms op (tabled at the top point, compute-bound: 2 ms at 1 GHz); the 4 B output
    returns in 0.8 us. Requests arrive at 0 and 0.5 ms."""
    return {
        "name": "gap_by_hand",
        "seed": 1,
        "nodes": {
            "phone": {
                "role": "device",
                "units": {"cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}}},
            },
            "srv": {
                "role": "edge",
                "units": {
                    "cpu": {
                        "kind": "cpu",
                        "peak_gflops": {"fp32": 10},
                        "idle_w": 0.1,
                        "active_w": 2.0,
                        "dvfs": {
                            "points": [{"mhz": 1000, "mv": 700}, {"mhz": 2000, "mv": 1000}],
                            "static_w": 0.2,
                            "governor": {"name": "ondemand", "window_ms": 2},
                        },
                    }
                },
            },
        },
        "links": {
            "lan": {
                "ends": ["phone", "srv"],
                "latency_ms": 0,
                "bandwidth_mbps": 40,
                "sharing": "fifo",
            }
        },
        "models": {
            "m": {
                "ops": [
                    {
                        "name": "op",
                        "kind": "conv",
                        "time_ms": {"srv.cpu": 1},
                        "input_elems": 1250,
                        "output_elems": 1,
                    }
                ]
            }
        },
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0, 0.5]},
            }
        ],
        "placement": {"policy": "offload", "node": "srv", "unit": "cpu"},
    }


def test_gap_shares_by_hand():
    """Lone request: input 0 -> 1 ms; op at level 0 (ondemand sees 0 % busy): 1 -> 3 ms;
    output 0.8 us: predicted 3.0008 ms (2.0008 ms at the top point).

    Request 1 (t = 0) runs exactly so. Request 2 (t = 0.5 ms): its input waits on the
    FIFO link until 1 ms, arrives at 2 ms; the unit is busy until 3 ms; the governor sees
    [1, 3] ms 100 % busy (> 0.8): top level, 1 ms; output at 4.0008 ms: latency 3.5008 ms.
    Replayed: at the run's level 2.0008 ms (governor -1 ms); no DRAM (0); with the
    input's 1.5 ms on the link 2.5008 ms (links +0.5 ms); the rest, 1 ms, is the op
    waiting for the unit (queueing). Means over the two: -0.5, 0, +0.25, +0.5 ms.
    """
    doc = _two_requests_doc()
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    result = simulate(scenario)
    latency = result.requests.sort_values("request_id")["latency_s"].to_numpy()
    assert latency == pytest.approx([3.0008e-3, 3.5008e-3], rel=EXACT)
    gap = gap_table(plan, oracle, "a", result.requests, result.ops, result.transfers)
    ms = dict(zip(gap["cause"], gap["ms"], strict=True))
    expected = {
        "top level": 2.0008,
        "governor, lone request": 1.0,
        "predicted": 3.0008,
        "governor level": -0.5,
        "op time drawn": 0.0,
        "shared DRAM": 0.0,
        "links and radios": 0.25,
        "queueing": 0.5,
        "simulated": 3.2508,
    }
    assert list(ms) == list(expected)
    for cause, value in expected.items():
        assert ms[cause] == pytest.approx(value, rel=1e-9, abs=1e-12), cause


def test_constant_level_classifies_governors_by_their_own_function():
    doc = _two_requests_doc()
    expected = {
        "performance": 1,
        "powersave": 0,
        "ondemand": None,
        "schedutil": None,
    }
    for name, level in expected.items():
        doc["nodes"]["srv"]["units"]["cpu"]["dvfs"]["governor"] = {"name": name}
        unit = parse_scenario(copy.deepcopy(doc)).platform.unit("srv.cpu")
        assert constant_level(unit) == level, name
    doc["nodes"]["srv"]["units"]["cpu"]["dvfs"]["governor"] = {"name": "fixed", "level": 0}
    assert constant_level(parse_scenario(doc).platform.unit("srv.cpu")) == 0
    assert constant_level(parse_scenario(doc).platform.unit("phone.cpu")) is None


def test_every_policy_says_which_dvfs_level_it_assumes():
    assert set(DVFS_BASIS) == set(POLICIES)
    assert "governors' levels" in dvfs_basis("split_point", {})
    assert "top DVFS level" in dvfs_basis("heft", {})
    assert "governors' levels" in dvfs_basis("optimal", {"objective": "energy"})
    assert "top DVFS level" in dvfs_basis("optimal", {})
    assert dvfs_basis("offload", {"unit": "gpu"}).startswith("none")


def test_explain_predicts_the_governors_levels_and_splits_no_gap(tmp_path, capsys):
    """The issue's case: a lone MobileNetV2 int8 on the mid-range phone's big cores under
    the preset's schedutil: predicted at the governor's levels = simulated, no cause."""
    import yaml

    from simulator.cli import main

    doc = _preset_doc("midrange_phone", "cpu_big", {"name": "schedutil"})
    doc["models"]["m"]["dtype"] = "int8"
    path = tmp_path / "lone.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "DVFS levels its choice assumed: none" in out
    assert "contend" not in out
    gap = out.split("predicted vs simulated latency")[1].splitlines()[2:11]
    ms = {line.rsplit(None, 1)[0].strip(): float(line.split()[-1]) for line in gap}
    assert ms["predicted"] == ms["simulated"] > ms["top level"]  # 8.67 ms against 4.49 ms
    assert ms["governor, lone request"] == pytest.approx(
        ms["predicted"] - ms["top level"], abs=2e-4
    )
    assert [ms[cause] for cause in CAUSES] == [0.0] * len(CAUSES)


@pytest.mark.parametrize(("governor", "chosen"), [("schedutil", "srv.b"), ("performance", "srv.a")])
def test_offload_picks_the_fastest_unit_at_its_governors_levels(governor, chosen):
    """Unit a: 1 ms at 2 GHz, 4 ms at its 0.5 GHz floor, where schedutil starts an idle
    unit; unit b (no DVFS): 1.5 ms. At the governors' levels b is faster."""
    doc = _two_requests_doc()
    server = doc["nodes"]["srv"]["units"]
    server["a"] = server.pop("cpu")
    server["a"]["dvfs"]["points"] = [{"mhz": 500, "mv": 700}, {"mhz": 2000, "mv": 1000}]
    server["a"]["dvfs"]["governor"] = {"name": governor}
    server["b"] = {"kind": "cpu", "peak_gflops": {"fp32": 10}}
    doc["models"]["m"]["ops"][0]["time_ms"] = {"srv.a": 1, "srv.b": 1.5}
    doc["placement"] = {"policy": "offload", "node": "srv"}
    scenario = parse_scenario(doc)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["a"]
    assert plan.units == (chosen,)
    ops = list(scenario.models["m"])
    a_s = 4e-3 if governor == "schedutil" else 1e-3  # level 0 (util 0) or the top
    assert back_to_back_s(oracle, ops, "srv.a") == pytest.approx(a_s, rel=EXACT)
    assert back_to_back_s(oracle, ops, "srv.b") == pytest.approx(1.5e-3, rel=EXACT)
