"""The phone presets' DVFS tables and the two shipped DVFS examples (docs/dvfs-thermal.md).

The operating points come from Linux ``arch/arm64/boot/dts/mediatek/mt8186.dtsi``
(docs/presets.md, "DVFS operating points"): voltages verbatim, frequencies scaled so each
table tops out at its unit's clock.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml

from simulator.engine import simulate
from simulator.hardware.thermal import PHONE_THERMAL
from simulator.spec import load_scenario, parse_scenario

EXAMPLES = Path("scenarios/examples")
EXACT = 1e-12

# mt8186.dtsi: (opp-hz in MHz, opp-microvolt in mV), copied from the source by hand
MT8186_A76 = [
    (774, 675), (835, 693.75), (919, 718.75), (1002, 743.75), (1085, 775), (1169, 800),
    (1308, 843.75), (1419, 875), (1530, 912.5), (1670, 956.25), (1733, 981.25),
    (1796, 1012.5), (1860, 1037.5), (1923, 1062.5), (1986, 1093.75), (2050, 1118.75),
]  # fmt: skip
MT8186_A55 = [
    (500, 600), (774, 675), (875, 700), (975, 725), (1075, 750), (1175, 775), (1275, 800),
    (1375, 825), (1500, 856.25), (1618, 875), (1666, 900), (1733, 925), (1800, 950),
    (1866, 981.25), (1933, 1006.25), (2000, 1031.25),
]  # fmt: skip
MT8186_GPU = [
    (299, 612.5), (332, 625), (366, 637.5), (400, 643.75), (434, 656.25), (484, 668.75),
    (535, 687.5), (586, 700), (637, 712.5), (690, 737.5), (743, 756.25), (796, 781.25),
    (850, 800), (900, 850), (950, 900), (1000, 950),
]  # fmt: skip

# preset, unit, source table, top clock (MHz), active_w, static_w, governor
TABLES = [
    ("flagship_phone", "cpu_big", MT8186_A76, 3300, 4.2, 0.42, "schedutil"),
    ("flagship_phone", "cpu_little", MT8186_A55, 2300, 0.5, 0.05, "schedutil"),
    ("flagship_phone", "gpu", MT8186_GPU, 1000, 3.0, 0.3, "ondemand"),
    ("midrange_phone", "cpu_big", MT8186_A76, 2200, 3.7, 0.37, "schedutil"),
    ("midrange_phone", "cpu_little", MT8186_A55, 1900, 0.6, 0.06, "schedutil"),
    ("midrange_phone", "gpu", MT8186_GPU, 550, 2.5, 0.25, "ondemand"),
]


def phone_doc(preset: str, units: dict | None = None, ops: list | None = None) -> dict:
    """One phone of ``preset`` running one request of an inline model on ``cpu_big``."""
    return {
        "name": "preset_dvfs",
        "include": [f"../devices/{preset}.yaml"],
        "nodes": {"phone": {"preset": preset, "units": units or {}}},
        "models": {"m": {"ops": ops or [{"name": "x", "kind": "conv", "flops": 1e6}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu_big"},
    }


@pytest.mark.parametrize("preset,unit,source,top_mhz,active_w,static_w,governor", TABLES)
def test_preset_tables_are_the_sourced_opps_fitted_to_active_w(
    preset, unit, source, top_mhz, active_w, static_w, governor
):
    scenario = parse_scenario(phone_doc(preset), base_dir=EXAMPLES)
    spec = scenario.platform.unit(f"phone.{unit}")
    table = spec.dvfs
    assert spec.governor == governor
    assert [p.voltage_v for p in table.points] == pytest.approx([v / 1e3 for _, v in source])
    scale = top_mhz / source[-1][0]
    for point, (mhz, _) in zip(table.points, source, strict=True):
        assert point.frequency_hz == round(mhz * scale) * 1e6  # rounded to whole MHz
    # C fitted from the top point: P(top) = static + C f V² = active_w exactly
    f_top, v_top = top_mhz * 1e6, source[-1][1] / 1e3
    capacitance = (active_w - static_w) / (f_top * v_top**2)
    assert table.switched_capacitance_f == pytest.approx(capacitance, rel=EXACT)
    assert table.active_power_w(table.top) == pytest.approx(active_w, rel=EXACT)
    f_low, v_low = table.points[0].frequency_hz, source[0][1] / 1e3
    assert table.active_power_w(0) == pytest.approx(static_w + capacitance * f_low * v_low**2)


@pytest.mark.parametrize("level,mhz,mv,power_w", [(15, 3300, 1118.75, 4.2), (0, 1246, 675, None)])
def test_energy_of_one_op_at_the_lowest_and_highest_flagship_cpu_point(level, mhz, mv, power_w):
    # 17.76 GFLOP conv, parallel fraction 1: 0.1 s at 6 x 59.2 GFLOP/s x 0.5 at 3300 MHz
    op = {"name": "x", "kind": "conv", "flops": 17.76e9}
    units = {"cpu_big": {"dvfs": {"governor": {"name": "fixed", "level": level}}}}
    result = simulate(parse_scenario(phone_doc("flagship_phone", units, [op]), base_dir=EXAMPLES))
    fixed_s = 5e-6 + 2e-6 * math.log2(6)  # dispatch_us 5 + barrier_us 2 per doubling
    seconds = fixed_s + 0.1 * 3300 / mhz
    capacitance = (4.2 - 0.42) / (3.3e9 * 1.11875**2)
    power = 0.42 + capacitance * mhz * 1e6 * (mv / 1e3) ** 2
    if power_w is not None:
        assert power == pytest.approx(power_w, rel=EXACT)
    row = result.ops.iloc[0]
    assert row["level"] == level
    assert row["end_s"] - row["start_s"] == pytest.approx(seconds, rel=1e-9)
    assert row["energy_j"] == pytest.approx(power * seconds, rel=1e-9)


def test_lowest_flagship_cpu_point_costs_59_percent_of_the_energy_at_2_65x_the_time():
    # E(0)/E(top) = (P(0) t(0)) / (P(top) t(top)) for compute-bound work
    capacitance = (4.2 - 0.42) / (3.3e9 * 1.11875**2)
    p_low = 0.42 + capacitance * 1.246e9 * 0.675**2
    assert p_low == pytest.approx(0.9396, abs=1e-4)
    assert p_low * (3300 / 1246) / 4.2 == pytest.approx(0.5925, abs=1e-4)


# -- race to idle ------------------------------------------------------------------------
def run_example(name: str, **unit_changes) -> object:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    for node, dvfs in unit_changes.items():
        units = doc["nodes"][node].setdefault("units", {})
        units.setdefault("cpu_big", {}).setdefault("dvfs", {}).update(dvfs)
    return simulate(parse_scenario(doc, base_dir=EXAMPLES))


@pytest.fixture(scope="module")
def race():
    return run_example("dvfs_race_to_idle.yaml")


def per_node(result) -> dict:
    units = result.units.set_index("unit")
    latency = result.requests.groupby("source")["latency_s"].mean()
    met = result.requests.groupby("source")["deadline_met"].mean()
    return {
        node: (latency[node], units.loc[f"{node}.cpu_big", "energy_j"], met[node])
        for node in ("fast", "slow", "sched")
    }


def test_race_to_idle_example_trades_latency_for_energy(race):
    nodes = per_node(race)
    (fast_s, fast_j, fast_met), (slow_s, slow_j, slow_met) = nodes["fast"], nodes["slow"]
    sched_s, sched_j, _ = nodes["sched"]
    assert fast_s < sched_s < slow_s
    assert slow_j < sched_j < fast_j
    assert fast_met == slow_met == 1.0
    # the same 90 requests of work; powersave stretches only the compute-bound part
    assert 2.0 < slow_s / fast_s < 3300 / 1246
    levels = race.ops.groupby("unit")["level"]
    assert set(levels.get_group("fast.cpu_big")) == {15}
    assert set(levels.get_group("slow.cpu_big")) == {0}
    # schedutil starts each frame at the lowest point and ramps up as the window fills
    assert {0, 15} <= set(levels.get_group("sched.cpu_big"))


def test_race_to_idle_wins_above_a_hand_computed_static_power(race):
    # at the top point P = active_w whatever static_w is (C is refitted), so the fast
    # phone's energy does not move; at level l, P(l) = s + (4.2 - s) k_l with
    # k_l = f_l V_l^2 / (f_top V_top^2), so the slow phone's energy grows by
    # busy x (1 - k_0) per watt of static power
    fast_j, slow_j = per_node(race)["fast"][1], per_node(race)["slow"][1]
    busy_s = race.units.set_index("unit").loc["slow.cpu_big", "busy_s"]
    k0 = (1246 * 0.675**2) / (3300 * 1.11875**2)
    breakeven_w = 0.42 + (fast_j - slow_j) / (busy_s * (1 - k0))
    assert 1.25 < breakeven_w < 1.45  # about 32 % of active_w: the docs' 1.34 W
    hot = per_node(
        run_example("dvfs_race_to_idle.yaml", fast={"static_w": 2.0}, slow={"static_w": 2.0})
    )
    assert hot["fast"][1] == pytest.approx(fast_j, rel=EXACT)
    assert hot["slow"][1] == pytest.approx(slow_j + busy_s * (1 - k0) * (2.0 - 0.42), rel=1e-9)
    assert hot["fast"][1] < hot["slow"][1]  # racing to idle now wins


# -- sustained load ----------------------------------------------------------------------
def test_sustained_load_throttles_the_flagship_within_minutes():
    result = simulate(load_scenario(EXAMPLES / "dvfs_thermal_throttling.yaml"))
    row = result.thermal.set_index("node").loc["phone"]
    # both units at their top points: 4.2 + 3.0 W busy plus 0.02 + 0.01 + 0.01 W idle
    power_w = 4.2 + 3.0 + 0.04
    r, c = PHONE_THERMAL.resistance_k_per_w, PHONE_THERMAL.capacitance_j_per_k
    rise = PHONE_THERMAL.throttle_c - PHONE_THERMAL.ambient_c
    closed_form_s = r * c * math.log(power_w * r / (power_w * r - rise))  # 356.7 s
    # schedutil/ondemand start both units low for their first window: a fraction of a second
    assert closed_form_s < row["first_throttle_s"] < closed_form_s + 1.0
    assert 5 * 60 < row["first_throttle_s"] < 7 * 60
    assert row["max_temperature_c"] < PHONE_THERMAL.throttle_c + 0.1
    end_s = result.summary["window_end_s"]
    assert 0 < row["throttled_s"] < end_s - row["first_throttle_s"]  # released, then again
    ops = result.ops.sort_values("start_s")
    throttled = ops[
        ops["start_s"].between(row["first_throttle_s"] + 0.5, row["first_throttle_s"] + 60)
    ]
    assert set(throttled["level"]) == {0}  # capped at the lowest point (throttled_max_mhz default)
    before = ops[ops["start_s"].between(60, row["first_throttle_s"] - 1)]
    assert set(before["level"]) == {15}


def test_pinned_examples_run_at_the_top_point():
    for name in ("codl_cpu_gpu_vgg16.yaml", "neurosurgeon_alexnet.yaml"):
        doc = yaml.safe_load((EXAMPLES / name).read_text())
        doc["workload"][0]["count"] = 2
        result = simulate(parse_scenario(copy.deepcopy(doc), base_dir=EXAMPLES))
        phone_ops = result.ops[result.ops["node"] == "phone"]
        assert len(phone_ops) and set(phone_ops["level"]) == {15}
