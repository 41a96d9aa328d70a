"""Series over time, checked by hand: power intervals, DVFS levels, temperature (RC)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis import energy_breakdown, load_run
from simulator.engine import simulate
from simulator.hardware.thermal import PHONE_THERMAL
from simulator.spec import load_scenario, parse_scenario

EXACT = 1e-12
#: 2 GHz / 1.0 V and 1 GHz / 0.8 V with 0.5 W static, fitted to 3 W at the top: the low
#: point draws 0.5 + 2.5 × 0.5 × 0.64 = 1.3 W (as in tests/engine/test_dvfs.py)
DVFS = {"points": [{"mhz": 1000, "mv": 800}, {"mhz": 2000, "mv": 1000}], "static_w": 0.5}


def one_unit_doc(unit: dict, flops: float, arrival: dict | list, **node) -> dict:
    """One phone with one cpu (1 GFLOP/s per core) running a one-op model."""
    if isinstance(arrival, list):
        arrival = {"process": "trace", "times_ms": arrival}
    cpu = {"kind": "cpu", "peak_gflops": {"fp32": 1}, **unit}
    return {
        "name": "series",
        "nodes": {"phone": {"units": {"cpu": cpu}, **node}},
        "models": {"m": {"ops": [{"name": "x", "kind": "conv", "flops": flops}]}},
        "workload": [{"app": "a", "model": "m", "source": "phone", "arrival": arrival}],
        "placement": {"policy": "single", "unit": "cpu"},
    }


def dvfs_doc(governor: dict, times_ms: list) -> dict:
    unit = {"idle_w": 0.1, "active_w": 3.0, "dvfs": {**DVFS, "governor": governor}}
    return one_unit_doc(unit, 2e6, times_ms)  # 2 ms at 2 GHz


def thermal_doc(minutes: float) -> dict:
    """The preset phone kept busy by 1 s ops at 6 W (1.47 W at 1 GHz when throttled)."""
    dvfs = {
        "points": [{"mhz": 1000, "mv": 700}, {"mhz": 2000, "mv": 1000}],
        "throttled_max_mhz": 1000,
    }
    unit = {"idle_w": 0.0, "active_w": 6.0, "dvfs": dvfs}
    doc = one_unit_doc(unit, 1e9, {"process": "closed_loop", "concurrency": 1}, thermal={})
    return {**doc, "duration_s": minutes * 60}


def flat(pairs) -> list[float]:
    """``[(a, b), ...]`` as ``[a, b, ...]``: pytest.approx compares flat sequences only."""
    return [x for pair in pairs for x in pair]


def rows(result, component: str) -> list[tuple[float, float, float]]:
    mine = result.power[result.power["component"] == component]
    return list(zip(mine["start_s"], mine["end_s"], mine["power_w"], strict=True))


def test_two_ops_on_one_unit_give_exact_intervals():
    # 2e6 FLOP at 1 GFLOP/s = 2 ms; requests at 0 and 10 ms: busy, idle, busy
    doc = one_unit_doc({"idle_w": 0.1, "active_w": 2.0}, 2e6, [0, 10])
    result = simulate(parse_scenario(doc))
    got = rows(result, "phone.cpu")
    expected = [(0.0, 0.002, 2.0), (0.002, 0.01, 0.1), (0.01, 0.01 + 0.002, 2.0)]
    assert [g[2] for g in got] == [e[2] for e in expected]
    assert flat(g[:2] for g in got) == pytest.approx(flat(e[:2] for e in expected), rel=EXACT)
    power = result.power.set_index("start_s")
    assert power["energy_j"].sum() == pytest.approx(2.0 * 0.004 + 0.1 * 0.008, rel=EXACT)
    assert (power["kind"] == "compute").all() and (power["role"] == "device").all()


def test_two_workers_add_their_core_shares():
    # 4 cores, 2 per op: two slots; each op (4e6 FLOP on 2 cores of 1 GFLOP/s) takes 2 ms
    # and draws half of (active - idle) = 2 W above the 0.2 W idle; requests at 0 and 1 ms
    unit = {"cores": 4, "cores_per_op": 2, "idle_w": 0.2, "active_w": 4.2}
    result = simulate(parse_scenario(one_unit_doc(unit, 4e6, [0, 1])))
    assert list(result.ops["end_s"] - result.ops["start_s"]) == pytest.approx([2e-3] * 2)
    got = rows(result, "phone.cpu")
    assert [g[2] for g in got] == [0.2 + 2.0, 0.2 + 2.0 + 2.0, 0.2 + 2.0]
    assert flat(g[:2] for g in got) == pytest.approx([0, 1e-3, 1e-3, 2e-3, 2e-3, 3e-3])
    unit_energy = result.energy.set_index("component").loc["phone.cpu", "energy_j"]
    assert sum(result.power["energy_j"]) == pytest.approx(unit_energy, rel=EXACT)


def test_dvfs_level_sets_the_busy_power():
    # fixed at 1 GHz / 0.8 V: 4 ms at 0.5 + C·1e9·0.64 = 1.3 W (tests/engine/test_dvfs.py)
    slow = simulate(parse_scenario(dvfs_doc({"name": "fixed", "level": 0}, [0, 10])))
    got = rows(slow, "phone.cpu")
    assert [g[2] for g in got] == pytest.approx([1.3, 0.1, 1.3], rel=EXACT)
    assert flat(g[:2] for g in got) == pytest.approx([0, 4e-3, 4e-3, 10e-3, 10e-3, 14e-3])
    # the first op's decision replaces the initial (top) level at t = 0
    levels = slow.dvfs_levels
    assert list(levels["time_s"]) == [0.0] and list(levels["level"]) == [0]
    assert list(levels["frequency_hz"]) == [1e9]
    assert levels["busy_w"].iloc[0] == pytest.approx(1.3, rel=EXACT)
    fast = simulate(parse_scenario(dvfs_doc({"name": "performance"}, [0])))
    assert list(fast.dvfs_levels[["level", "frequency_hz", "busy_w"]].iloc[0]) == [1, 2e9, 3.0]
    assert rows(fast, "phone.cpu") == [(0.0, 2e-3, 3.0)]


def test_an_op_cut_short_by_an_empty_battery_draws_until_the_stop():
    # 3.6 W from 0 to 1 s: three 0.3 s ops and 0.1 s of the fourth, merged into one row
    closed = {"process": "closed_loop", "concurrency": 1}
    doc = one_unit_doc({"active_w": 3.6}, 3e8, closed, battery_wh=0.001)  # 3.6 J
    result = simulate(parse_scenario({**doc, "workload": [{**doc["workload"][0], "count": 10}]}))
    [(start, end, watts)] = rows(result, "phone.cpu")
    assert (start, watts) == (0.0, 3.6) and end == pytest.approx(1.0, rel=EXACT)
    assert result.power["energy_j"].sum() == pytest.approx(3.6, rel=EXACT)


@pytest.fixture(scope="module")
def throttled():
    """The preset phone kept busy at 6 W for 15 minutes (tests/engine/test_dvfs.py)."""
    return simulate(parse_scenario(thermal_doc(15)))


def test_temperature_under_constant_load_follows_the_rc_closed_form(throttled):
    r, c = PHONE_THERMAL.resistance_k_per_w, PHONE_THERMAL.capacitance_j_per_k
    ambient, limit = PHONE_THERMAL.ambient_c, PHONE_THERMAL.throttle_c
    points = throttled.temperature
    first = points[points["event"] == "throttle"]["time_s"].iloc[0]
    assert first == pytest.approx(r * c * math.log(6 * r / (6 * r - (limit - ambient))), rel=1e-9)
    heating = points[points["time_s"] < first]
    assert len(heating) > 400  # a point at every op boundary: 1 s ops back to back
    assert (heating["power_w"] == 6.0).all() and heating["temperature_c"].is_monotonic_increasing
    closed = ambient + 6 * r * (1 - (-heating["time_s"] / (r * c)).map(math.exp))
    assert heating["temperature_c"].to_numpy() == pytest.approx(closed.to_numpy(), rel=1e-9)
    at_throttle = points[points["event"] == "throttle"].iloc[0]
    assert at_throttle["temperature_c"] == pytest.approx(limit, rel=1e-9)
    assert bool(at_throttle["throttled"])
    releases = points[points["event"] == "release"]
    assert len(releases) and releases["temperature_c"].to_numpy() == pytest.approx(
        [PHONE_THERMAL.release_c] * len(releases), rel=1e-9
    )


def test_the_thermal_row_ends_with_the_window(throttled):
    # the node is still throttled and cooling at the window's end (901 s); its release
    # instant lies after it and must not count
    end = throttled.temperature.iloc[-1]
    window_end_s = throttled.summary["window_end_s"]
    assert end["event"] == "end" and end["time_s"] == window_end_s and bool(end["throttled"])
    assert (throttled.temperature["time_s"] <= window_end_s).all()
    row = throttled.thermal.set_index("node").loc["phone"]
    assert row["final_temperature_c"] == end["temperature_c"] > PHONE_THERMAL.release_c
    points = throttled.temperature
    spans = points["time_s"].diff().shift(-1)[points["throttled"]].sum()
    assert row["throttled_s"] == pytest.approx(spans, rel=EXACT)
    assert row["throttled_s"] < window_end_s - row["first_throttle_s"]


def test_levels_follow_throttling(throttled):
    levels = throttled.dvfs_levels
    changes = list(zip(levels["time_s"], levels["level"], strict=True))
    assert changes[0] == (0.0, 1)
    assert [level for _, level in changes] == [1, 0] * (len(changes) // 2) + [1] * (
        len(changes) % 2
    )
    throttles = throttled.temperature.query("event == 'throttle'")["time_s"]
    # the first op starting after the throttle instant (ops start on whole seconds) runs slow
    assert changes[1][0] == math.ceil(throttles.iloc[0])
    # at 6 W the unit's power is one row until that op: ops back to back are merged
    first = rows(throttled, "phone.cpu")[0]
    assert first == (0.0, changes[1][0], 6.0)


def test_energy_breakdown_splits_states_and_roles(tmp_path):
    result = simulate(load_scenario("scenarios/examples/alexnet_phone_cloud.yaml"))
    result.write(tmp_path, parquet=False)
    tables = load_run(tmp_path)  # the same table from what a run wrote, radios included
    again = energy_breakdown(tables["energy"], tables["radio_states"])
    pd.testing.assert_frame_equal(again, result.energy_breakdown)
    table = result.energy_breakdown
    assert table["energy_j"].sum() == pytest.approx(result.summary["energy_j"], rel=EXACT)
    by_role = table.groupby("role")["energy_j"].sum()
    assert by_role["device"] == pytest.approx(result.summary["device_energy_j"], rel=EXACT)
    assert by_role["cloud"] == pytest.approx(result.summary["cloud_energy_j"], rel=EXACT)
    radio = table[table["component"] == "radio:uplink"].set_index("state")["energy_j"]
    assert radio["promotion"] == pytest.approx(0.26 * 1.21, rel=EXACT)  # one LTE promotion
    assert list(table["role"].drop_duplicates()) == ["device", "cloud"]
    assert table["share"].sum() == pytest.approx(1.0, rel=EXACT)
    units = result.units.set_index("unit")
    active = table[table["state"] == "active"].set_index("component")["energy_j"]
    assert active.to_dict() == units["active_energy_j"].to_dict()


def test_series_are_deterministic(throttled):
    again = simulate(parse_scenario(thermal_doc(15)))
    for name in ("power", "dvfs_levels", "temperature", "energy_breakdown"):
        pd.testing.assert_frame_equal(getattr(throttled, name), getattr(again, name))
