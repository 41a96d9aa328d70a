"""DVFS in runs: the governor's level at each op start sets its time and power."""

from __future__ import annotations

import copy

import pytest

from simulator.engine import simulate
from simulator.errors import ScenarioError
from simulator.spec import parse_scenario

EXACT = 1e-12
C_F = (3.0 - 0.5) / (2e9 * 1.0**2)  # fitted so the top point draws active_w = 3 W


def dvfs_doc(governor: dict, times_ms=(0,)) -> dict:
    cpu = {
        "kind": "cpu",
        "peak_gflops": {"fp32": 1},
        "idle_w": 0.1,
        "active_w": 3.0,
        "dvfs": {
            "points": [{"mhz": 1000, "mv": 800}, {"mhz": 2000, "mv": 1000}],
            "static_w": 0.5,
            "governor": governor,
        },
    }
    return {
        "name": "dvfs",
        "nodes": {"phone": {"units": {"cpu": cpu}}},
        "models": {"m": {"ops": [{"name": "x", "kind": "conv", "flops": 2e6}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": list(times_ms)},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def test_energy_of_one_op_at_two_frequencies():
    fast = simulate(parse_scenario(dvfs_doc({"name": "performance"})))
    slow = simulate(parse_scenario(dvfs_doc({"name": "fixed", "level": 0})))
    # 2e6 FLOP at 1 GFLOP/s (top, 2 GHz) = 2 ms; at 1 GHz the compute takes twice as long
    assert fast.requests["latency_s"].iloc[0] == pytest.approx(2e-3, rel=EXACT)
    assert slow.requests["latency_s"].iloc[0] == pytest.approx(4e-3, rel=EXACT)
    p_top = 0.5 + C_F * 2e9 * 1.0**2  # = 3 W
    p_low = 0.5 + C_F * 1e9 * 0.8**2  # = 1.3 W
    assert fast.ops["energy_j"].iloc[0] == pytest.approx(p_top * 2e-3, rel=EXACT)
    assert slow.ops["energy_j"].iloc[0] == pytest.approx(p_low * 4e-3, rel=EXACT)
    assert list(fast.ops["level"]) == [1] and list(slow.ops["level"]) == [0]
    # slow and steady uses less energy here; the unit's energy is exactly its op's energy
    units = slow.units.set_index("unit")
    assert units.loc["phone.cpu", "energy_j"] == pytest.approx(p_low * 4e-3, rel=EXACT)


def test_race_to_idle_over_a_fixed_window():
    # two requests 10 ms apart: the window is the same for both settings, so idle power
    # over the rest of it counts: E = P(l) * busy + idle * (W - busy)
    for governor, busy_each, power in (
        ({"name": "performance"}, 2e-3, 3.0),
        ({"name": "fixed", "level": 0}, 4e-3, 1.3),
    ):
        result = simulate(parse_scenario(dvfs_doc(governor, times_ms=(0, 10))))
        window = result.summary["window_end_s"] - result.summary["window_start_s"]
        expected = power * 2 * busy_each + 0.1 * (window - 2 * busy_each)
        assert result.summary["energy_j"] == pytest.approx(expected, rel=1e-12)


def test_ondemand_slows_down_a_lightly_loaded_unit():
    # one 2 ms op every 50 ms: over a 10 ms window the unit is at most 20 % busy
    result = simulate(
        parse_scenario(dvfs_doc({"name": "ondemand", "window_ms": 10}, times_ms=(0, 50, 100, 150)))
    )
    assert list(result.ops.sort_values("request_id")["level"]) == [0, 0, 0, 0]


def test_dvfs_validation():
    doc = dvfs_doc({"name": "fixed", "level": 0})
    doc["nodes"]["phone"]["units"]["cpu"]["dvfs"]["governor"]["name"] = "schedutl"
    with pytest.raises(ScenarioError, match="did you mean 'schedutil'"):
        parse_scenario(doc)
    doc = copy.deepcopy(dvfs_doc({"name": "performance"}))
    doc["nodes"]["phone"]["units"]["cpu"]["dvfs"]["points"] = [
        {"mhz": 2000, "mv": 1000},
        {"mhz": 1000, "mv": 800},
    ]
    with pytest.raises(ScenarioError, match="frequencies must strictly ascend"):
        parse_scenario(doc)


def thermal_doc(minutes: float) -> dict:
    """A phone with the preset thermal model kept busy by 1 s ops at 6 W (closed loop)."""
    cpu = {
        "kind": "cpu",
        "peak_gflops": {"fp32": 1},
        "idle_w": 0.0,
        "active_w": 6.0,
        "dvfs": {
            "points": [{"mhz": 1000, "mv": 700}, {"mhz": 2000, "mv": 1000}],
            "governor": {"name": "performance"},
            "throttled_max_mhz": 1000,
        },
    }
    return {
        "name": "thermal",
        "duration_s": minutes * 60,
        "nodes": {"phone": {"thermal": {}, "units": {"cpu": cpu}}},
        "models": {"m": {"ops": [{"name": "x", "kind": "conv", "flops": 1e9}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "closed_loop", "concurrency": 1},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def test_sustained_load_throttles_the_phone_preset_on_time():
    import math

    from simulator.hardware.thermal import PHONE_THERMAL

    phone = PHONE_THERMAL

    result = simulate(parse_scenario(thermal_doc(15)))
    row = result.thermal.set_index("node").loc["phone"]
    # constant 6 W from 25 °C: T(t) = 25 + 6R (1 - exp(-t / RC)) reaches 45 °C at
    # t = RC ln(6R / (6R - 20)) = 667 s x ln 2 = 462 s (7.7 min)
    r, c = phone.resistance_k_per_w, phone.capacitance_j_per_k
    expected = r * c * math.log(6 * r / (6 * r - (phone.throttle_c - phone.ambient_c)))
    assert row["first_throttle_s"] == pytest.approx(expected, rel=1e-9)
    assert 5 * 60 < row["first_throttle_s"] < 10 * 60
    # throttled, the unit runs at 1 GHz: its ops slow down and draw less
    after = result.ops[result.ops["start_s"] > row["first_throttle_s"] + 1]
    assert (after["level"] == 0).any()
    assert row["throttled_s"] > 0
    assert row["max_temperature_c"] < phone.throttle_c + 0.5  # at most one op's overshoot


def test_no_throttling_below_the_sustainable_power():
    doc = thermal_doc(15)
    doc["nodes"]["phone"]["units"]["cpu"]["active_w"] = 2.5  # below the preset's 3 W budget
    row = simulate(parse_scenario(doc)).thermal.set_index("node").loc["phone"]
    assert row["first_throttle_s"] is None or row["first_throttle_s"] != row["first_throttle_s"]
    assert row["throttled_s"] == 0


def test_thermal_row_is_taken_at_the_window_end():
    # 10 minutes: the phone throttles at 462 s and is still cooling (at 1.47 W) toward the
    # 42 °C release when the last op ends; the release alarm fires after the window and
    # must not leak into the row (it used to report the post-window state)
    result = simulate(parse_scenario(thermal_doc(10)))
    row = result.thermal.set_index("node").loc["phone"]
    end_s = result.summary["window_end_s"]
    assert row["throttled_s"] == pytest.approx(end_s - row["first_throttle_s"], rel=1e-12)
    assert 42.0 < row["final_temperature_c"] < 45.0
    # after the last op ends the phone draws nothing: the row is the closed form at end_s
    last_end = result.ops["end_s"].max()
    assert last_end == pytest.approx(end_s, rel=1e-12)
