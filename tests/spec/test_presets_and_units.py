"""Includes, presets (field-by-field override) and conversion of YAML units to SI."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import phone_cloud_nodes

from simulator.errors import ScenarioError
from simulator.spec import load_scenario, parse_scenario, validate_library

LIBRARY = """\
# a small library of presets
presets:
  nodes:
    phone_a:
      role: device
      sync_us: 40
      units:
        cpu:
          kind: cpu
          cores: 8
          peak_gflops: {fp32: 20, int8: 80}
          efficiency: {default: 0.5, conv: 0.7}
          dispatch_us: 4
          idle_w: 0.1
          active_w: 3
        npu:
          kind: npu
          peak_gflops: {int8: 4000}
          supports: [conv, fc]
    server:
      role: cloud
      units:
        gpu: {kind: gpu, peak_gflops: {fp32: 1000}}
  links:
    radio_link:
      technology: lte
      latency_ms: 35
      bandwidth_mbps: 5.85
      reverse_bandwidth_mbps: 13
      radio: {tx_w: 3.853, rx_w: 1.964, idle_w: 0.02}
"""

SCENARIO = """\
name: with_presets
include: [lib/presets.yaml]
nodes:
  phone:
    preset: phone_a
  cloud: {preset: server}
links:
  up: {preset: radio_link, ends: [phone, cloud]}
models:
  net: {zoo: alexnet}
workload:
  - app: cam
    model: net
    source: phone
    arrival: {process: periodic, period_ms: 50}
    count: 2
placement: {policy: single, unit: cpu}
"""


@pytest.fixture
def library(spec):
    return spec.write(LIBRARY, "lib/presets.yaml")


def test_si_conversion_of_every_unit(spec):
    s = spec.load(spec.BASE)
    phone = s.platform.nodes["phone"]
    assert phone.role == "device"
    assert phone.sync_s == 50e-6  # sync_us 50
    assert phone.shared_memory_bandwidth_bytes_per_s == 2e9  # 2 GB/s
    cpu, gpu = phone.unit("cpu"), phone.unit("gpu")
    assert cpu.cores == 4
    assert isinstance(cpu.cores, int)
    assert dict(cpu.peak_flops) == {"fp32": 10e9}  # peak_gflops 10 -> FLOP/s
    assert cpu.dispatch_s == 5e-6  # dispatch_us 5
    assert cpu.active_w == 2.0
    assert cpu.idle_w == 0.0
    assert cpu.memory_bytes == math.inf
    assert cpu.memory_bandwidth_bytes_per_s == math.inf
    assert dict(cpu.efficiency) == {"default": 1.0}
    assert dict(gpu.peak_flops) == {"fp32": 100e9, "fp16": 200e9}
    assert gpu.memory_bandwidth_bytes_per_s == 20e9  # 20 GB/s
    assert gpu.memory_bytes == 2e9  # memory_mb 2000
    link = s.platform.network.links["uplink"]
    assert link.latency_s == 0.02  # latency_ms 20
    assert link.bandwidth_bps == 5.85e6  # bandwidth_mbps 5.85
    assert link.reverse_bandwidth_bps == 13e6
    assert link.radio is None
    entry = s.workload[0]
    assert dict(entry.arrival_options) == {"period_s": 0.1, "offset_s": 0.0}
    assert entry.deadline_s == 0.4
    assert entry.count == 3


@pytest.mark.parametrize(
    ("written", "si"),
    [("35", 0.035), ("0.5", 5e-4), ("1", 1e-3), ("123.456", 0.123456), ("7", 7e-3)],
)
def test_milliseconds_convert_exactly(spec, written, si):
    s = spec.load(spec.edit(spec.BASE, "latency_ms: 20", f"latency_ms: {written}"))
    assert s.platform.network.links["uplink"].latency_s == si


def test_reverse_bandwidth_defaults_to_forward(spec):
    s = spec.load(spec.edit(spec.BASE, ", reverse_bandwidth_mbps: 13}", "}"))
    link = s.platform.network.links["uplink"]
    assert link.reverse_bandwidth_bps == link.bandwidth_bps == 5.85e6


@pytest.mark.parametrize("written", ["1e6", "1E6", "1e+6", "+1e6", "1.0e6", "1000000"])
def test_exponent_without_dot_is_a_number(spec, written):
    # PyYAML reads `1e6` (no dot) as text; the schema accepts it as the number it is.
    s = spec.load(
        spec.edit(spec.BASE, "peak_gflops: {fp32: 1000}", f"peak_gflops: {{fp32: {written}}}")
    )
    assert s.platform.unit("cloud.gpu").peak_flops["fp32"] == 1e15


def test_exponent_text_in_whole_number_fields(spec):
    s = spec.load(spec.edit(spec.BASE, "count: 3", "count: 1e3"))
    assert s.workload[0].count == 1000
    assert isinstance(s.workload[0].count, int)


def test_presets_from_an_included_library(spec, library):
    s = spec.load(SCENARIO)
    phone = s.platform.nodes["phone"]
    assert phone.sync_s == 40e-6
    assert [u.name for u in phone.units] == ["cpu", "npu"]
    cpu = phone.unit("cpu")
    assert cpu.cores == 8
    assert dict(cpu.peak_flops) == {"fp32": 20e9, "int8": 80e9}
    assert dict(cpu.efficiency) == {"default": 0.5, "conv": 0.7}
    assert phone.unit("npu").supports == frozenset({"conv", "fc"})
    assert s.platform.role_of("cloud") == "cloud"
    link = s.platform.network.links["up"]
    assert (link.a, link.b, link.technology) == ("phone", "cloud", "lte")
    assert link.latency_s == 0.035
    assert (link.radio.tx_w, link.radio.rx_w, link.radio.idle_w) == (3.853, 1.964, 0.02)


def test_override_one_unit_field_keeps_the_others(spec, library):
    text = spec.edit(
        SCENARIO,
        "    preset: phone_a\n",
        "    preset: phone_a\n    units:\n      cpu: {cores: 2}\n",
    )
    cpu = spec.load(text).platform.unit("phone.cpu")
    assert cpu.cores == 2
    assert dict(cpu.peak_flops) == {"fp32": 20e9, "int8": 80e9}
    assert cpu.dispatch_s == 4e-6
    assert cpu.active_w == 3.0
    assert dict(cpu.efficiency) == {"default": 0.5, "conv": 0.7}


def test_override_merges_nested_maps(spec, library):
    text = spec.edit(
        SCENARIO,
        "    preset: phone_a\n",
        "    preset: phone_a\n    sync_us: 10\n    units:\n"
        "      cpu: {efficiency: {fc: 0.2}, peak_gflops: {int8: null}}\n",
    )
    phone = spec.load(text).platform.nodes["phone"]
    assert phone.sync_s == 10e-6
    assert dict(phone.unit("cpu").efficiency) == {"default": 0.5, "conv": 0.7, "fc": 0.2}
    assert dict(phone.unit("cpu").peak_flops) == {"fp32": 20e9}  # null removed int8


def test_null_removes_a_unit(spec, library):
    text = spec.edit(
        SCENARIO, "    preset: phone_a\n", "    preset: phone_a\n    units: {npu: null}\n"
    )
    phone = spec.load(text).platform.nodes["phone"]
    assert [u.name for u in phone.units] == ["cpu"]


def test_override_adds_a_unit(spec, library):
    text = spec.edit(
        SCENARIO,
        "    preset: phone_a\n",
        "    preset: phone_a\n    units:\n      dsp: {kind: dsp, peak_gflops: {int8: 100}}\n",
    )
    assert spec.load(text).platform.units_of("phone") == ("phone.cpu", "phone.npu", "phone.dsp")


def test_link_preset_override_and_radio_removal(spec, library):
    text = spec.edit(
        SCENARIO,
        "{preset: radio_link, ends: [phone, cloud]}",
        "{preset: radio_link, ends: [phone, cloud], latency_ms: 10, radio: null}",
    )
    link = spec.load(text).platform.network.links["up"]
    assert link.latency_s == 0.01
    assert link.bandwidth_bps == 5.85e6
    assert link.radio is None


def test_own_presets_section(spec):
    text = spec.edit(SCENARIO, "include: [lib/presets.yaml]\n", LIBRARY.split("\n", 1)[1])
    s = spec.load(text)
    assert s.platform.unit("phone.cpu").cores == 8


def test_unknown_preset_suggests_and_does_not_pile_up(spec, library):
    text = spec.edit(SCENARIO, "preset: phone_a", "preset: phone_b")
    p = spec.problem(text)
    assert p.path == "nodes.phone.preset"
    assert p.message == "unknown node preset 'phone_b'; available: phone_a, server"
    assert p.suggestion == "phone_a"
    assert p.line == spec.line_of(text, "preset: phone_b")
    assert p.file == str(spec.root / "scenario.yaml")


def test_unknown_link_preset(spec, library):
    p = spec.problem(spec.edit(SCENARIO, "preset: radio_link", "preset: radiolink"))
    assert p.path == "links.up.preset"
    assert p.message.startswith("unknown link preset 'radiolink'")
    assert p.suggestion == "radio_link"


def test_preset_without_any_include(spec):
    found = spec.problems(spec.edit(SCENARIO, "include: [lib/presets.yaml]\n", ""))
    assert [p.path for p in found] == [
        "nodes.phone.preset",
        "nodes.cloud.preset",
        "links.up.preset",
    ]
    for p in found:
        assert p.message.endswith("; available: none (add an include: of a library file)")


def test_preset_name_must_be_text(spec, library):
    p = spec.problem(spec.edit(SCENARIO, "preset: phone_a", "preset: [phone_a]"))
    assert p.path == "nodes.phone.preset"
    assert p.message == "expected the name of a node preset, got ['phone_a']"


def test_problems_inside_a_preset_name_the_preset_file(spec):
    bad = spec.edit(LIBRARY, "cores: 8", "cores: eight")
    bad = spec.edit(bad, "kind: npu", "kind: npux")
    bad = spec.edit(bad, "latency_ms: 35", "latency_ms: -35")
    lib = spec.write(bad, "lib/presets.yaml")
    text = spec.edit(SCENARIO, "cloud: {preset: server}", "cloud: {preset: server, role: clod}")
    found = {p.path: p for p in spec.problems(text)}
    assert set(found) == {
        "nodes.phone.units.cpu.cores",
        "nodes.phone.units.npu.kind",
        "links.up.latency_ms",
        "nodes.cloud.role",
    }
    for path, needle in (
        ("nodes.phone.units.cpu.cores", "cores: eight"),
        ("nodes.phone.units.npu.kind", "kind: npux"),
        ("links.up.latency_ms", "latency_ms: -35"),
    ):
        assert found[path].file == str(lib), path
        assert found[path].line == spec.line_of(bad, needle), path
    # the override written in the scenario points at the scenario
    assert found["nodes.cloud.role"].file == str(spec.root / "scenario.yaml")
    assert found["nodes.cloud.role"].line == spec.line_of(text, "role: clod")
    assert found["nodes.cloud.role"].suggestion == "cloud"


def test_override_fixes_a_broken_preset_field(spec):
    spec.write(spec.edit(LIBRARY, "cores: 8", "cores: 0"), "lib/presets.yaml")
    text = spec.edit(
        SCENARIO, "    preset: phone_a\n", "    preset: phone_a\n    units: {cpu: {cores: 1}}\n"
    )
    assert spec.load(text).platform.unit("phone.cpu").cores == 1


def test_include_missing(spec):
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "[lib/presets.yaml, lib/nothere.yaml]")
    spec.write(LIBRARY, "lib/presets.yaml")
    p = spec.problem(text)
    assert p.path == "include[1]"
    assert p.message == f"included file not found: {(spec.root / 'lib/nothere.yaml').resolve()}"
    assert p.line == spec.line_of(text, "include:")
    assert p.file == str(spec.root / "scenario.yaml")


def test_include_must_be_a_list(spec, library):
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "lib/presets.yaml")
    p = next(p for p in spec.problems(text) if p.path == "include")
    assert p.message == "expected a list of text, got text 'lib/presets.yaml'"
    assert p.line == 2


def test_presets_section_is_checked(spec, library):
    text = spec.edit(SCENARIO, "nodes:\n", "presets: {nodez: {}}\nnodes:\n")
    p = spec.problem(text)
    assert p.path == "presets.nodez"
    assert p.suggestion == "nodes"


def test_include_cycle(spec):
    spec.write("include: [b.yaml]\npresets: {nodes: {}}\n", "lib/a.yaml")
    b = spec.write("presets: {nodes: {}}\ninclude:\n  - a.yaml\n", "lib/b.yaml")
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "[lib/presets.yaml, lib/a.yaml]")
    spec.write(LIBRARY, "lib/presets.yaml")
    p = spec.problem(text)
    assert p.path == "include[0]"
    assert p.message == "include cycle: 'a.yaml' is already being included"
    assert (p.file, p.line) == (str(b.resolve()), 3)


def test_scenario_including_itself(spec):
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "[scenario.yaml]")
    p = spec.problem(text)
    assert "include cycle: 'scenario.yaml'" in p.message


def test_nested_includes_and_diamonds(spec):
    spec.write(LIBRARY, "lib/common/base.yaml")
    spec.write("include: [common/base.yaml]\n", "lib/one.yaml")
    spec.write("include: [common/base.yaml]\npresets: {nodes: {}}\n", "lib/two.yaml")
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "[lib/one.yaml, lib/two.yaml]")
    assert spec.load(text).platform.unit("phone.cpu").cores == 8


def test_preset_defined_in_two_files(spec, library):
    spec.write("presets:\n  nodes:\n    server: {units: {c: {kind: cpu}}}\n", "lib/other.yaml")
    text = spec.edit(SCENARIO, "[lib/presets.yaml]", "[lib/presets.yaml, lib/other.yaml]")
    p = spec.problem(text)
    assert p.path == "include[1]"
    assert p.message == f"preset 'server' is also defined in {library.resolve()}"


def test_broken_library_file(spec):
    spec.write("presets:\n  nodes: {}\n  linkz: {}\n", "lib/presets.yaml")
    p = spec.problem(SCENARIO)
    assert p.path == "presets.linkz"
    assert p.suggestion == "links"
    assert p.file == str((spec.root / "lib/presets.yaml").resolve())
    assert p.line == 3


def test_include_with_yaml_error_names_that_file(spec):
    spec.write("presets:\n  nodes: {a: [1, 2}\n", "lib/presets.yaml")
    p = spec.problem(SCENARIO)
    assert p.file == str((spec.root / "lib/presets.yaml").resolve())
    assert p.line == 2
    assert p.message.startswith("not valid YAML")


# -- validate_library -----------------------------------------------------------------
def test_validate_library_counts_presets(spec, library):
    assert validate_library(library) == 3


def test_validate_library_reports_every_problem_with_lines(spec):
    bad = spec.edit(LIBRARY, "role: device", "role: devise")
    bad = spec.edit(bad, "idle_w: 0.1", "idle_w: -0.1")
    bad = spec.edit(bad, "bandwidth_mbps: 5.85", "bandwith_mbps: 5.85")
    path = spec.write(bad, "lib/bad.yaml")
    with pytest.raises(ScenarioError) as info:
        validate_library(path)
    found = {p.path: p for p in info.value.problems}
    assert set(found) == {
        "presets.nodes.phone_a.role",
        "presets.nodes.phone_a.units.cpu.idle_w",
        "presets.links.radio_link.bandwith_mbps",
        "presets.links.radio_link",  # bandwidth_mbps is then missing
    }
    assert found["presets.nodes.phone_a.role"].line == spec.line_of(bad, "role: devise")
    assert found["presets.nodes.phone_a.units.cpu.idle_w"].line == spec.line_of(bad, "idle_w: -0.1")
    typo = found["presets.links.radio_link.bandwith_mbps"]
    assert (typo.line, typo.suggestion) == (spec.line_of(bad, "bandwith_mbps"), "bandwidth_mbps")
    assert found["presets.links.radio_link"].line == spec.line_of(bad, "radio_link:")
    assert all(p.file == str(path) for p in info.value.problems)


def test_validate_library_needs_presets(spec):
    path = spec.write("name: not a library\n", "lib/x.yaml")
    with pytest.raises(ScenarioError, match="a library file needs a 'presets:' section"):
        validate_library(path)


def _library_files():
    root = pytest.importorskip("pathlib").Path(__file__).resolve().parents[2] / "scenarios"
    return sorted([*root.glob("devices/*.yaml"), *root.glob("networks/*.yaml")])


@pytest.mark.parametrize("path", _library_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_library_files_validate(path):
    assert validate_library(path) >= 1


def _example_files():
    root = pytest.importorskip("pathlib").Path(__file__).resolve().parents[2] / "scenarios"
    return sorted(root.glob("examples/*.yaml"))


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: p.name)
def test_shipped_examples_load(path):
    scenario = load_scenario(path)
    assert scenario.workload
    assert scenario.source_file == str(path)


def test_shipped_file_lists_are_not_empty():
    assert len(_library_files()) >= 5
    assert len(_example_files()) >= 1


MORE = (
    "include: [presets.yaml]\npresets:\n  links:\n    wired: {latency_ms: 1, bandwidth_mbps: BW}\n"
)


def test_validate_library_follows_its_includes(spec, library):
    nested = spec.write(MORE.replace("BW", "-3"), "lib/more.yaml")
    with pytest.raises(ScenarioError) as info:
        validate_library(nested)
    (p,) = info.value.problems
    assert (p.path, p.file, p.line) == ("presets.links.wired.bandwidth_mbps", str(nested), 4)
    fixed = spec.write(MORE.replace("BW", "3"), "lib/more.yaml")
    assert validate_library(fixed) == 4


def test_overriding_a_presets_implementation_drops_its_options():
    # the lte preset's radio is an RRC model with promotion and tail keys; a constant radio
    # has none of them, so the override replaces the block instead of merging into it
    doc = {
        "name": "retag",
        "include": [str(Path("scenarios/networks/lte.yaml").resolve())],
        "nodes": phone_cloud_nodes(1),
        "links": {
            "up": {
                "preset": "lte",
                "ends": ["phone", "cloud"],
                "radio": {"model": "constant", "tx_w": 2.0, "rx_w": 1.0},
            }
        },
        "models": {"m": {"ops": [{"name": "x", "kind": "conv", "flops": 1}]}},
        "workload": [
            {
                "app": "a",
                "model": "m",
                "source": "phone",
                "count": 1,
                "arrival": {"process": "periodic", "rate_hz": 1},
            }
        ],
        "placement": {"policy": "single", "unit": "cpu"},
    }
    radio = parse_scenario(doc).platform.network.links["up"].radio
    assert (radio.model, radio.tx_w, radio.rx_w, radio.tail_s) == ("constant", 2.0, 1.0, 0.0)
