"""Scenario.document: written back and loaded again, it gives the same scenario."""

from __future__ import annotations

import pickle

import pytest
import yaml

from simulator.spec import Scenario, load_scenario, parse_scenario

LIBRARY = """\
presets:
  nodes:
    phone_a:
      sync_us: 40
      shared_memory_bandwidth_gb_s: 3.5
      units:
        cpu:
          kind: cpu
          cores: 8
          peak_gflops: {fp32: 20, int8: 1e2}
          efficiency: {default: 0.5, conv: 0.7}
          dispatch_us: 4
          memory_mb: 512
        npu: {kind: npu, peak_gflops: {int8: 4000}, supports: [conv, fc]}
    server:
      role: cloud
      units: {gpu: {kind: gpu, peak_gflops: {fp32: 1000}, memory_bandwidth_gb_s: 900}}
  links:
    radio_link:
      technology: lte
      latency_ms: 35
      bandwidth_mbps: 5.85
      reverse_bandwidth_mbps: 13
      radio: {tx_w: 3.853, rx_w: 1.964, idle_w: 0.02}
"""

SCENARIO = """\
name: round_trip
seed: 11
duration_s: 5
include: [lib/presets.yaml]
nodes:
  phone:
    preset: phone_a
    units:
      cpu: {cores: 2, peak_gflops: {int8: null}}
      npu: null
      dsp: {kind: dsp, peak_gflops: {int8: 300}}
  cloud: {preset: server}
links:
  up: {preset: radio_link, ends: [phone, cloud], latency_ms: 12.5}
models:
  cnn: {zoo: mobilenet_v1, dtype: int8, options: {width_multiplier: 0.5, resolution: 160}}
  tiny:
    ops:
      - {name: a, kind: conv, macs: 1e6, output_elems: 1000, parallel_fraction: 0.9}
      - {name: b, kind: fc, flops: 5000, output_elems: 10, time_ms: {cpu: 4, cloud.gpu: 0.5}}
    edges: [{src: a, dst: b, comm_ms: 2}]
workload:
  - app: cam
    model: cnn
    source: phone
    arrival: {process: poisson, rate_hz: 20, offset_ms: 3}
    deadline_ms: 100
    priority: 2
    placement: {policy: fallback, preferred: dsp}
  - app: probe
    model: tiny
    source: phone
    arrival: {process: trace, times_ms: [0, 1.5, 1.5, 40]}
placement: {policy: offload, node: cloud}
"""


def assert_same_scenario(a: Scenario, b: Scenario) -> None:
    assert (a.name, a.seed, a.duration_s) == (b.name, b.seed, b.duration_s)
    assert a.platform.unit_ids == b.platform.unit_ids
    assert a.platform.nodes == b.platform.nodes  # every node and unit field
    assert a.platform.network.links == b.platform.network.links
    assert set(a.models) == set(b.models)
    for name in a.models:
        ma, mb = a.models[name], b.models[name]
        assert ma.order == mb.order
        assert list(ma) == list(mb)  # every op field
        assert list(ma.edges()) == list(mb.edges())
        assert (ma.total_flops, ma.total_macs, ma.total_params, ma.weight_bytes) == (
            mb.total_flops,
            mb.total_macs,
            mb.total_params,
            mb.weight_bytes,
        )
    assert a.workload == b.workload
    assert a.placement == b.placement


def _round_trip(scenario: Scenario, tmp_path) -> Scenario:
    out = tmp_path / "elsewhere" / "resolved.yaml"  # includes would not resolve from here
    out.parent.mkdir()
    out.write_text(yaml.safe_dump(scenario.document, sort_keys=False), encoding="utf-8")
    return load_scenario(out)


def test_round_trip_with_includes_presets_and_overrides(spec, tmp_path):
    spec.write(LIBRARY, "lib/presets.yaml")
    first = spec.load(SCENARIO)
    doc = first.document
    assert "include" not in doc
    assert "presets" not in doc
    assert "preset" not in doc["nodes"]["phone"]
    assert set(doc["nodes"]["phone"]["units"]) == {"cpu", "dsp"}
    again = _round_trip(first, tmp_path)
    assert_same_scenario(first, again)
    assert again.document == first.document


def test_round_trip_values(spec, tmp_path):
    spec.write(LIBRARY, "lib/presets.yaml")
    again = _round_trip(spec.load(SCENARIO), tmp_path)
    cpu = again.platform.unit("phone.cpu")
    assert (cpu.cores, dict(cpu.peak_flops), cpu.memory_bytes) == (2, {"fp32": 20e9}, 512e6)
    assert again.platform.units_of("phone") == ("phone.cpu", "phone.dsp")
    assert again.platform.nodes["phone"].shared_memory_bandwidth_bytes_per_s == 3.5e9
    up = again.platform.network.links["up"]
    assert (up.latency_s, up.bandwidth_bps, up.radio.tx_w) == (0.0125, 5.85e6, 3.853)
    tiny = again.models["tiny"]
    assert tiny.op("a").flops == 2e6
    assert dict(tiny.op("b").time_s) == {"cpu": 0.004, "cloud.gpu": 0.0005}
    assert tiny.edge("a", "b").comm_s == 0.002
    trace = again.workload[1]
    assert list(trace.arrival_options["times_s"]) == [0.0, 0.0015, 0.0015, 0.04]
    cam = again.workload[0]
    assert dict(cam.arrival_options) == {"rate_hz": 20.0, "offset_s": 0.003}
    assert (cam.deadline_s, cam.priority, cam.duration_s) == (0.1, 2, 5.0)
    assert cam.placement.name == "fallback"


def test_round_trip_of_the_shipped_example(tmp_path):
    path = spec_repo() / "scenarios" / "examples" / "alexnet_phone_cloud.yaml"
    first = load_scenario(path)
    again = _round_trip(first, tmp_path)
    assert_same_scenario(first, again)
    assert len(first.platform.unit_ids) > 2  # the presets really were expanded


def test_document_of_a_plain_dict_round_trips(spec):
    first = spec.load(spec.BASE)
    again = parse_scenario(yaml.safe_load(yaml.safe_dump(first.document, sort_keys=False)))
    assert_same_scenario(first, again)


def test_scenario_pickles(spec):
    spec.write(LIBRARY, "lib/presets.yaml")
    first = spec.load(SCENARIO)
    again = pickle.loads(pickle.dumps(first))
    assert_same_scenario(first, again)


def spec_repo():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("key", ["nodes", "models", "workload"])
def test_document_is_plain_data(spec, key):
    doc = spec.load(spec.BASE).document
    assert type(doc[key]) in (dict, list)
    yaml.safe_dump(doc)  # would raise on YamlMap/YamlSeq or other objects
