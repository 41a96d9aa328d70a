"""A unit that omits its efficiency, power or (with a roofline) memory bandwidth, and a
node of several units that omits its copy bandwidth, is warned about once per cause, with
the file, line, YAML path, what is assumed and how to say it (issue 21 item 4); a unit
that gives them, even as the default values or as ``unbounded``, is not. No shipped
scenario warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from simulator.spec.assumptions import UnitAssumptionWarning, reset
from simulator.spec.library import shipped_presets
from simulator.spec.loader import load_scenario, parse_scenario

SCENARIO = """\
name: assumed
nodes:
  phone:
    role: device
    units:
      cpu: {kind: cpu, peak_gflops: {fp32: 10}UNIT}
models:
  net:
    ops:
      - {name: a, kind: conv, flops: 1.0e6, dtype: fp32}
workload:
  - {app: a, model: net, source: phone, arrival: {process: periodic, period_ms: 10}, count: 1}
placement: {policy: single, unit: cpu}
"""


def _load(tmp_path, unit_extra: str) -> list[str]:
    """The UnitAssumptionWarning messages of loading the scenario twice."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("UNIT", unit_extra))
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_scenario(path)
        load_scenario(path)  # a second load (a sweep point) does not repeat them
    reset()
    return [str(w.message) for w in caught if issubclass(w.category, UnitAssumptionWarning)]


def test_each_cause_warns_once_with_its_fix(tmp_path):
    where = f"{tmp_path / 's.yaml'}:6: nodes.phone.units.cpu: unit 'phone.cpu'"
    assert _load(tmp_path, "") == [
        f"{where}: no efficiency given: every op runs at 100% of peak_gflops; "
        "give efficiency: {default: FRACTION} (1.0 keeps peak)",
        f"{where}: no idle_w, active_w or dvfs given: it draws 0 W, so its energy is 0 J; "
        "give idle_w and active_w (0 keeps it free)",
        f"{where}: no memory_bandwidth_gb_s or caches given: moving an op's bytes takes no "
        "time, so every op is compute bound; give memory_bandwidth_gb_s (the unit's DRAM "
        "bandwidth), or memory_bandwidth_gb_s: unbounded to mean it",
    ]


EXPLICIT = ", efficiency: {default: 0.5}, idle_w: 0, active_w: 0"


@pytest.mark.parametrize(
    ("extra", "left"),
    [
        (", efficiency: {default: 1.0}", ["no idle_w", "no memory_bandwidth"]),
        (", idle_w: 0", ["no efficiency", "no memory_bandwidth"]),
        (", active_w: 2.5, memory_bandwidth_gb_s: 10", ["no efficiency"]),
        (EXPLICIT, ["no memory_bandwidth"]),
        (EXPLICIT + ", memory_bandwidth_gb_s: 9", []),
        (EXPLICIT + ", memory_bandwidth_gb_s: unbounded", []),
        (EXPLICIT + ", memory_bandwidth_gb_s: {low: 8, high: 12}", []),
    ],
)
def test_explicit_figures_do_not_warn(tmp_path, extra, left):
    messages = _load(tmp_path, extra)
    assert [next(c for c in left if c in m) for m in messages] == left


def test_a_unit_timed_only_by_tables_has_no_roofline_to_warn_about(tmp_path):
    path = tmp_path / "s.yaml"
    text = SCENARIO.replace("peak_gflops: {fp32: 10}UNIT", "efficiency: {default: 1.0}")
    path.write_text(text.replace("dtype: fp32}", "time_ms: {cpu: 2}}").replace("UNIT", ""))
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_scenario(path)
    reset()
    assert [str(w.message) for w in caught if w.category is UnitAssumptionWarning] == [
        f"{path}:6: nodes.phone.units.cpu: unit 'phone.cpu': no idle_w, active_w or dvfs "
        "given: it draws 0 W, so its energy is 0 J; give idle_w and active_w (0 keeps it free)"
    ]


TWO_UNITS = SCENARIO.replace(
    "      cpu: {kind: cpu, peak_gflops: {fp32: 10}UNIT}",
    "NODE      cpu: {kind: cpu, peak_gflops: {fp32: 10}UNIT}\n"
    "      gpu: {kind: gpu, peak_gflops: {fp32: 50}UNIT}",
)
QUIET_UNIT = EXPLICIT + ", memory_bandwidth_gb_s: unbounded"


@pytest.mark.parametrize(
    ("node", "warned"),
    [
        ("", True),
        ("    shared_memory_bandwidth_gb_s: unbounded\n", False),
        ("    shared_memory_bandwidth_gb_s: 12.5\n", False),
    ],
)
def test_a_node_of_two_units_warns_about_its_copy_bandwidth(tmp_path, node, warned):
    path = tmp_path / "s.yaml"
    text = TWO_UNITS.replace("    units:\nNODE", node + "    units:\n")
    path.write_text(text.replace("UNIT", QUIET_UNIT))
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_scenario(path)
        load_scenario(path)
    reset()
    messages = [str(w.message) for w in caught if w.category is UnitAssumptionWarning]
    assert messages == warned * [
        f"{path}:3: nodes.phone: node 'phone': no shared_memory_bandwidth_gb_s given: a "
        "copy between its units costs only sync_us, whatever its bytes; give "
        "shared_memory_bandwidth_gb_s, or shared_memory_bandwidth_gb_s: unbounded to mean it"
    ]


def test_a_node_of_one_unit_copies_nothing_and_is_not_warned(tmp_path):
    assert _load(tmp_path, QUIET_UNIT) == []


ROOT = Path(__file__).resolve().parents[2]
#: every shipped scenario (library files hold only presets: their nodes are loaded here
#: through the scenarios that include them)
SHIPPED = sorted(
    path
    for path in (ROOT / "scenarios").rglob("*.yaml")
    if "workload" in (yaml.safe_load(path.read_text(encoding="utf-8")) or {})
)


def test_no_shipped_scenario_warns():
    """Every shipped unit and node states its figures (``unbounded`` where meant): the
    examples, sweeps and score scenarios load without a UnitAssumptionWarning."""
    assert len(SHIPPED) >= 30
    reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitAssumptionWarning)
        for path in SHIPPED:
            load_scenario(path)
    reset()


NODE_PRESETS = [e.name for e in shipped_presets().values() if e.section == "nodes"]


@pytest.mark.parametrize("preset", NODE_PRESETS)
def test_no_shipped_node_preset_leaves_a_bandwidth_out(preset):
    """Every node preset states each roofline unit's memory bandwidth and, with two or
    more units, its copy bandwidth (the calibrated host_cpu presets' 0 W is another cause,
    documented in cost-model.md)."""
    doc = {
        "name": "preset_check",
        "include": [f"preset:{preset}"],
        "nodes": {"n": {"preset": preset}},
        "models": {"m": {"ops": [{"name": "a", "kind": "custom", "flops": 0}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "n",
                "arrival": {"process": "trace", "times_ms": [0]},
            }
        ],
        "placement": {"policy": "greedy_eft"},
    }
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_scenario(doc, base_dir=ROOT)
    reset()
    bandwidths = [
        str(w.message)
        for w in caught
        if w.category is UnitAssumptionWarning and "bandwidth" in str(w.message)
    ]
    assert bandwidths == []


def test_a_fleet_warns_once_for_all_its_members(tmp_path):
    path = tmp_path / "s.yaml"
    text = TWO_UNITS.replace("    units:\nNODE", "    fleet: {count: 3}\n    units:\n")
    path.write_text(text.replace("UNIT", EXPLICIT))
    reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_scenario(path)
    reset()
    messages = [str(w.message) for w in caught if w.category is UnitAssumptionWarning]
    assert [m.split(": ")[1:3] for m in messages] == [
        ["nodes.phone[i].units.cpu", "unit 'phone[i].cpu'"],
        ["nodes.phone[i].units.gpu", "unit 'phone[i].gpu'"],
        ["nodes.phone[i]", "node 'phone[i]'"],
    ]
