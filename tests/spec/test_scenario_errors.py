"""What a broken scenario reports: path, message, suggestion, file and line."""

from __future__ import annotations

import pytest

from simulator.errors import ScenarioError
from simulator.spec import parse_scenario


def test_base_scenario_loads(spec):
    scenario = spec.load(spec.BASE)
    assert scenario.name == "base"
    assert scenario.seed == 3


def test_unknown_top_level_key_suggests(spec):
    text = spec.edit(spec.BASE, "workload:", "worklaod:")
    found = spec.problems(text)
    typo = next(p for p in found if p.path == "worklaod")
    assert typo.suggestion == "workload"
    assert "unknown key 'worklaod' in scenario" in typo.message
    assert "valid keys: name, seed" in typo.message
    assert typo.line == spec.line_of(text, "worklaod:")
    assert typo.file == str(spec.root / "scenario.yaml")
    assert "(did you mean 'workload'?)" in str(typo)
    missing = next(p for p in found if p.path == "")
    assert "missing required key 'workload'" in missing.message


def test_unknown_unit_key_suggests(spec):
    text = spec.edit(spec.BASE, "peak_gflops: {fp32: 10}", "peak_gflop: {fp32: 10}")
    p = spec.problem(text)
    assert p.path == "nodes.phone.units.cpu.peak_gflop"
    assert "unknown key 'peak_gflop' in compute unit" in p.message
    assert p.suggestion == "peak_gflops"
    assert p.line == spec.line_of(text, "peak_gflop:")


def test_wrong_type(spec):
    text = spec.edit(spec.BASE, "count: 3", "count: many")
    p = spec.problem(text)
    assert p.path == "workload[0].count"
    assert p.message == "expected a whole number >= 1 and <= 1,000,000, got text 'many'"
    assert p.line == spec.line_of(text, "count: many")


def test_fractional_count_is_not_a_whole_number(spec):
    p = spec.problem(spec.edit(spec.BASE, "count: 3", "count: 2.5"))
    assert p.message == "expected a whole number >= 1 and <= 1,000,000, got 2.5"


def test_boolean_is_not_a_number(spec):
    p = spec.problem(spec.edit(spec.BASE, "latency_ms: 20", "latency_ms: yes"))
    assert p.message == "expected a number >= 0 (ms), got boolean True"


def test_negative_latency(spec):
    text = spec.edit(spec.BASE, "latency_ms: 20", "latency_ms: -5")
    p = spec.problem(text)
    assert p.path == "links.uplink.latency_ms"
    assert p.message == "expected a number >= 0 (ms), got -5"
    assert p.line == spec.line_of(text, "latency_ms: -5")


def test_efficiency_above_one(spec):
    text = spec.edit(
        spec.BASE, "memory_mb: 2000", "memory_mb: 2000\n        efficiency: {conv: 1.5}"
    )
    p = spec.problem(text)
    assert p.path == "nodes.phone.units.gpu.efficiency.conv"
    assert p.message == "expected a number > 0 and <= 1, got 1.5"
    assert p.line == spec.line_of(text, "efficiency:")


def test_efficiency_needs_a_default(spec):
    text = spec.edit(
        spec.BASE, "memory_mb: 2000", "memory_mb: 2000\n        efficiency: {conv: 0.5}"
    )
    p = spec.problem(text)
    assert p.path == "nodes.phone.units.gpu"
    assert "efficiency needs a 'default' entry" in p.message
    assert p.line == spec.line_of(text, "      gpu:")


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", ".Inf"])
def test_nan_and_inf_rejected(spec, value):
    p = spec.problem(spec.edit(spec.BASE, "bandwidth_mbps: 5.85", f"bandwidth_mbps: {value}"))
    assert p.path == "links.uplink.bandwidth_mbps"
    assert "(must be finite)" in p.message
    assert "expected a number >= 0.0001 (Mbit/s)" in p.message


def test_huge_integer_is_not_a_crash(spec):
    p = spec.problem(spec.edit(spec.BASE, "count: 3", "count: " + "9" * 400))
    assert p.path == "workload[0].count"
    assert "must be finite" in p.message


def test_missing_required_key(spec):
    text = spec.edit(spec.BASE, "    source: phone\n", "")
    p = spec.problem(text)
    assert p.path == "workload[0]"
    assert p.message.startswith("missing required key 'source' (")
    assert p.line == spec.line_of(text, "- app: camera")


def test_missing_units(spec):
    text = spec.edit(
        spec.BASE,
        "    role: cloud\n    units:\n      gpu: {kind: gpu, peak_gflops: {fp32: 1000}}\n",
        "    role: cloud\n",
    )
    p = spec.problem(text)
    assert p.path == "nodes.cloud"
    assert "missing required key 'units'" in p.message
    assert p.line == spec.line_of(text, "  cloud:")


def test_unknown_zoo_model_suggests(spec):
    text = spec.edit(spec.BASE, "{zoo: alexnet}", "{zoo: alexnett}")
    p = spec.problem(text)
    assert p.path == "models.net.zoo"
    assert p.message.startswith("unknown zoo model 'alexnett'; expected one of 'alexnet'")
    assert p.suggestion == "alexnet"
    assert p.line == spec.line_of(text, "alexnett")


def test_unknown_zoo_option_suggests(spec):
    text = spec.edit(spec.BASE, "{zoo: alexnet}", "{zoo: alexnet, options: {resolutoin: 192}}")
    p = spec.problem(text)
    assert p.path == "models.net.options.resolutoin"
    assert "unknown key 'resolutoin' in alexnet options" in p.message
    assert "valid keys: resolution, num_classes" in p.message
    assert p.suggestion == "resolution"


def test_zoo_option_of_wrong_type(spec):
    p = spec.problem(
        spec.edit(spec.BASE, "{zoo: alexnet}", "{zoo: alexnet, options: {resolution: big}}")
    )
    assert p.path == "models.net.options.resolution"
    assert "expected a whole number, got text 'big'" in p.message


def test_zoo_option_used(spec):
    text = spec.edit(
        spec.BASE, "{zoo: alexnet}", "{zoo: mobilenet_v1, options: {width_multiplier: 0.5}}"
    )
    small = spec.load(text).models["net"]
    full = spec.load(spec.edit(spec.BASE, "{zoo: alexnet}", "{zoo: mobilenet_v1}")).models["net"]
    assert small.total_params < full.total_params


def test_unknown_dtype(spec):
    p = spec.problem(spec.edit(spec.BASE, "{zoo: alexnet}", "{zoo: alexnet, dtype: fp8}"))
    assert p.path == "models.net.dtype"
    assert p.message.startswith("unknown dtype 'fp8'")


def test_model_needs_a_source(spec):
    p = spec.problem(spec.edit(spec.BASE, "{zoo: alexnet}", "{file: alexnet.onnx}"))
    assert p.path == "models.net"
    assert "one of 'zoo: ...', 'onnx: ...', 'tflite: ...', 'ops: ...'" in p.message


def test_unknown_arrival_process_suggests(spec):
    text = spec.edit(spec.BASE, "process: periodic, period_ms: 100", "process: poison, rate_hz: 5")
    p = spec.problem(text)
    assert p.path == "workload[0].arrival.process"
    assert p.message.startswith("unknown arrival process 'poison'; valid: periodic, poisson")
    assert p.suggestion == "poisson"
    assert p.line == spec.line_of(text, "poison")


def test_arrival_without_process(spec):
    p = spec.problem(spec.edit(spec.BASE, "process: periodic, ", ""))
    assert p.path == "workload[0].arrival"
    assert "missing required key 'process'" in p.message


def test_unknown_arrival_option(spec):
    p = spec.problem(spec.edit(spec.BASE, "period_ms: 100", "period_ms: 100, jitter_ms: 3"))
    assert p.path == "workload[0].arrival.jitter_ms"
    assert "unknown key 'jitter_ms' in periodic arrival" in p.message


def test_unknown_placement_policy_suggests(spec):
    text = spec.edit(spec.BASE, "policy: single", "policy: singel")
    p = spec.problem(text)
    assert p.path == "placement.policy"
    assert "unknown placement policy 'singel'" in p.message
    assert p.suggestion == "single"
    assert p.line == spec.line_of(text, "singel")


def test_periodic_with_both_period_and_rate(spec):
    text = spec.edit(spec.BASE, "period_ms: 100", "period_ms: 100, rate_hz: 10")
    p = spec.problem(text)
    assert p.path == "workload[0].arrival"
    assert p.message == "give exactly one of period_ms, rate_hz (both given)"
    assert p.line == spec.line_of(text, "rate_hz: 10")


def test_periodic_with_neither_period_nor_rate(spec):
    p = spec.problem(spec.edit(spec.BASE, "process: periodic, period_ms: 100", "process: periodic"))
    assert p.message == "give exactly one of period_ms, rate_hz (none given)"


def test_periodic_by_rate(spec):
    scenario = spec.load(spec.edit(spec.BASE, "period_ms: 100", "rate_hz: 4"))
    entry = scenario.workload[0]
    assert dict(entry.arrival_options) == {"rate_hz": 4.0, "offset_s": 0.0}
    stream = entry.arrivals(None)
    assert [next(stream) for _ in range(3)] == [0.0, 0.25, 0.5]


def test_workload_names_unknown_model_suggests(spec):
    text = spec.edit(spec.BASE, "model: net", "model: nett")
    p = spec.problem(text)
    assert p.path == "workload[0].model"
    assert p.message == "unknown model 'nett'; models: net"
    assert p.suggestion == "net"
    assert p.line == spec.line_of(text, "model: nett")


def test_workload_names_unknown_source_node_suggests(spec):
    text = spec.edit(spec.BASE, "source: phone", "source: phnoe")
    p = spec.problem(text)
    assert p.path == "workload[0].source"
    assert p.message == "unknown node 'phnoe'; nodes: phone, cloud"
    assert p.suggestion == "phone"
    assert p.line == spec.line_of(text, "source: phnoe")


def test_link_end_names_unknown_node_suggests(spec):
    text = spec.edit(spec.BASE, "ends: [phone, cloud]", "ends: [phone, clodu]")
    p = spec.problem(text)
    assert p.path == "links.uplink.ends[1]"
    assert p.message == "unknown node 'clodu'; nodes: phone, cloud"
    assert p.suggestion == "cloud"
    assert p.line == spec.line_of(text, "clodu")


def test_link_with_one_end(spec):
    p = spec.problem(spec.edit(spec.BASE, "ends: [phone, cloud]", "ends: [phone]"))
    assert p.path == "links.uplink.ends"
    assert p.message == "expected exactly 2 item(s), got 1"


def test_link_joining_a_node_to_itself(spec):
    text = spec.edit(spec.BASE, "ends: [phone, cloud]", "ends: [phone, phone]")
    p = spec.problem(text)
    assert p.path == "links.uplink.ends"
    assert p.message == "a link must join two different nodes, got [phone, phone]"
    assert p.line == spec.line_of(text, "uplink:")


def test_two_links_joining_the_same_nodes(spec):
    extra = "  back: {ends: [cloud, phone], latency_ms: 30, bandwidth_mbps: 1}\n"
    text = spec.edit(spec.BASE, "models:\n", extra + "models:\n")
    p = spec.problem(text)
    assert p.path == "links.back.ends"
    assert "links 'uplink' and 'back' both join cloud and phone" in p.message
    assert "reverse_bandwidth_mbps" in p.message
    assert p.line == spec.line_of(text, "back:")


def test_radio_power_below_idle(spec):
    text = spec.edit(
        spec.BASE, "reverse_bandwidth_mbps: 13}", "radio: {tx_w: 1, rx_w: 1, idle_w: 2}}"
    )
    p = spec.problem(text)
    assert p.path == "links.uplink.radio"
    assert "must be >= idle_w" in p.message
    assert p.line == spec.line_of(text, "radio:")


def test_duplicate_app_name(spec):
    second = (
        "  - app: camera\n    model: net\n    source: phone\n"
        "    arrival: {process: poisson, rate_hz: 2}\n    count: 1\n"
    )
    text = spec.edit(spec.BASE, "placement: {policy", second + "placement: {policy")
    p = spec.problem(text)
    assert p.path == "workload[1].app"
    assert p.message == "app name 'camera' already used by workload[0]"
    assert p.line == spec.line_of(text, "- app: camera", nth=2)


def test_open_ended_arrivals(spec):
    p = spec.problem(spec.edit(spec.BASE, "    count: 3\n", ""))
    assert p.path == "workload[0]"
    assert "open-ended arrivals" in p.message


def test_top_level_duration_bounds_the_workload(spec):
    text = spec.edit(spec.BASE, "    count: 3\n", "")
    scenario = spec.load(spec.edit(text, "seed: 3\n", "seed: 3\nduration_s: 2\n"))
    assert scenario.duration_s == 2.0
    assert scenario.workload[0].duration_s == 2.0
    assert scenario.workload[0].count is None


def test_no_placement_anywhere(spec):
    p = spec.problem(spec.edit(spec.BASE, "placement: {policy: single, unit: cpu}\n", ""))
    assert p.path == "workload[0]"
    assert p.message == "no placement: give 'placement:' here or at the top level"


def test_placement_names_unknown_unit_suggests(spec):
    text = spec.edit(spec.BASE, "unit: cpu}", "unit: cpuu}")
    p = spec.problem(text)
    assert p.path == "placement.unit"
    assert "unknown unit 'cpuu' for an app on node 'phone'" in p.message
    assert "units: phone.cpu, phone.gpu, cloud.gpu" in p.message
    assert p.suggestion == "cpu"


def test_placement_names_unknown_node(spec):
    text = spec.edit(spec.BASE, "{policy: single, unit: cpu}", "{policy: offload, node: clod}")
    p = spec.problem(text)
    assert p.path == "placement.node"
    assert p.message == "unknown node 'clod'; nodes: phone, cloud"
    assert p.suggestion == "cloud"


def _apps(n: int, source_of) -> str:
    return "".join(
        f"  - app: a{i}\n    model: net\n    source: {source_of(i)}\n"
        f"    arrival: {{process: periodic, period_ms: 100}}\n    count: 1\n"
        + ("    placement: {policy: single, unit: gpu}\n" if i in (1, 10) else "")
        for i in range(n)
    )


def test_unit_refs_checked_against_the_right_workload_entry(spec):
    # workload[1] runs on the phone, workload[10] on the cloud: both say 'gpu', and
    # each bare name resolves on its own source node ('workload[1]' is a prefix of
    # 'workload[10]' as text, which must not mix the two up).
    start = spec.BASE.index("workload:\n") + len("workload:\n")
    end = spec.BASE.index("placement: {policy")
    apps = _apps(11, lambda i: "cloud" if i == 10 else "phone")
    text = spec.BASE[:start] + apps + spec.BASE[end:]
    scenario = spec.load(text)
    assert len(scenario.workload) == 11
    assert scenario.workload[10].placement.options["unit"] == "gpu"


def test_default_placement_problem_reported_once(spec):
    # Both apps use the default placement, whose unit the cloud lacks... and so does
    # the phone: one problem, not one per app.
    start = spec.BASE.index("workload:\n") + len("workload:\n")
    end = spec.BASE.index("placement: {policy")
    apps = "".join(
        f"  - app: a{i}\n    model: net\n    source: phone\n"
        "    arrival: {process: periodic, period_ms: 100}\n    count: 1\n"
        for i in range(2)
    )
    text = spec.BASE[:start] + apps + spec.edit(spec.BASE[end:], "unit: cpu", "unit: npu")
    p = spec.problem(text)
    assert p.path == "placement.unit"


def test_unknown_node_role_and_unit_kind(spec):
    text = spec.edit(spec.BASE, "role: cloud", "role: server")
    text = spec.edit(text, "{kind: gpu, peak_gflops: {fp32: 1000}}", "{kind: tpu}")
    found = {p.path: p for p in spec.problems(text)}
    assert found["nodes.cloud.role"].message.startswith("unknown node role 'server'")
    assert found["nodes.cloud.units.gpu.kind"].message.startswith("unknown unit kind 'tpu'")


def test_unknown_dtype_in_peak_table(spec):
    p = spec.problem(spec.edit(spec.BASE, "{fp32: 100, fp16: 200}", "{fp32: 100, fp61: 200}"))
    assert p.path == "nodes.phone.units.gpu.peak_gflops.fp61"
    assert p.suggestion == "fp16"
    assert "valid keys: fp32, fp16, int8" in p.message


def test_unknown_op_kind_in_supports(spec):
    text = spec.edit(spec.BASE, "memory_mb: 2000", "memory_mb: 2000\n        supports: [conv, fcc]")
    p = spec.problem(text)
    assert p.path == "nodes.phone.units.gpu.supports[1]"
    assert p.message.startswith("unknown op kind 'fcc'")
    assert p.suggestion == "fc"
    assert p.line == spec.line_of(text, "supports:")


def test_empty_supports_list(spec):
    text = spec.edit(spec.BASE, "memory_mb: 2000", "memory_mb: 2000\n        supports: []")
    p = spec.problem(text)
    assert p.message == "expected at least 1 item(s), got 0"


def test_unit_without_kind(spec):
    text = spec.edit(
        spec.BASE, "{kind: gpu, peak_gflops: {fp32: 1000}}", "{peak_gflops: {fp32: 1}}"
    )
    p = spec.problem(text)
    assert p.path == "nodes.cloud.units.gpu"
    assert p.message == "missing required key 'kind' (one of 'cpu', 'gpu', 'dsp', 'npu')"
    assert p.line == spec.line_of(text, "{peak_gflops: {fp32: 1}}")


def test_node_units_must_not_be_empty(spec):
    text = spec.edit(spec.BASE, "      gpu: {kind: gpu, peak_gflops: {fp32: 1000}}\n", "")
    text = spec.edit(text, "  cloud:\n    role: cloud\n    units:\n", "  cloud:\n    units: {}\n")
    p = spec.problem(text)
    assert p.path == "nodes.cloud.units"
    assert p.message == "expected at least 1 entr(y/ies), got none"


def test_wrong_container_type(spec):
    text = spec.edit(spec.BASE, "workload:\n", "workload: {}\nx:\n")
    p = next(p for p in spec.problems(text) if p.path == "workload")
    assert p.message.startswith("expected a list of a workload entry with keys app,")
    assert p.line == spec.line_of(text, "workload: {}")
    assert p.message.endswith("got a mapping")


def test_name_must_be_text(spec):
    p = spec.problem(spec.edit(spec.BASE, "name: base", "name: [a, b]"))
    assert p.path == "name"
    assert p.message == "expected a folder name, got a list"


def test_app_name_pattern(spec):
    p = spec.problem(spec.edit(spec.BASE, "app: camera", "app: my camera"))
    assert p.path == "workload[0].app"
    assert "does not match the pattern" in p.message


def test_number_keys_are_reported_as_keys(spec):
    text = spec.edit(spec.BASE, "  net: {zoo: alexnet}", "  net: {zoo: alexnet}\n  7: {zoo: vgg16}")
    p = spec.problem(text)
    assert p.path == "models.7"
    assert p.message == "names must be text, got int 7"


def test_several_problems_at_once_with_their_lines(spec):
    text = spec.BASE
    text = spec.edit(text, "sync_us: 50", "sync_us: -50")
    text = spec.edit(text, "cores: 4", "cores: four")
    text = spec.edit(text, "memory_mb: 2000", "memory_mib: 2000")
    text = spec.edit(text, "latency_ms: 20", "latency_ms: .nan")
    text = spec.edit(text, "process: periodic", "process: poison")
    text = spec.edit(text, "deadline_ms: 400", "deadline_ms: 0")
    path = spec.write(text)
    with pytest.raises(ScenarioError) as info:
        parse_scenario_file(path)
    found = {p.path: p for p in info.value.problems}
    expected = {
        "nodes.phone.sync_us": "sync_us: -50",
        "nodes.phone.units.cpu.cores": "cores: four",
        "nodes.phone.units.gpu.memory_mib": "memory_mib: 2000",
        "links.uplink.latency_ms": "latency_ms: .nan",
        "workload[0].arrival.process": "process: poison",
        "workload[0].deadline_ms": "deadline_ms: 0",
    }
    assert set(found) == set(expected)
    for yaml_path, needle in expected.items():
        assert found[yaml_path].file == str(path)
        assert found[yaml_path].line == spec.line_of(text, needle), yaml_path
    assert found["nodes.phone.units.gpu.memory_mib"].suggestion == "memory_mb"
    message = str(info.value)
    assert message.startswith("6 problems in scenario:\n")
    assert f"{path}:{spec.line_of(text, 'cores: four')}: nodes.phone.units.cpu.cores" in message


def parse_scenario_file(path):
    from simulator.spec import load_scenario

    return load_scenario(path)


def test_parse_scenario_of_a_plain_dict_has_no_lines():
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"name": "x", "nodez": {}}, source="<sweep point>")
    found = {p.path: p for p in info.value.problems}
    assert found["nodez"].suggestion == "nodes"
    assert all(p.file == "<sweep point>" and p.line is None for p in found.values())


def test_parse_scenario_rejects_non_mapping():
    with pytest.raises(ScenarioError, match="a scenario must be a mapping of keys"):
        parse_scenario(["not", "a", "mapping"])


def test_node_and_unit_names_must_not_contain_dots(spec):
    # 'node.unit' ids would be ambiguous: is 'a.b.c' unit 'b.c' of 'a' or 'c' of 'a.b'?
    text = spec.edit(spec.BASE, "  cloud:\n", "  my.cloud:\n")
    text = spec.edit(
        text, "      gpu: {kind: gpu, peak_gflops: {fp32: 1000}}", "      g.pu: {kind: gpu}"
    )
    found = {p.path: p for p in spec.problems(text)}
    assert found["nodes.my.cloud"].message.startswith("name 'my.cloud' does not match the pattern")
    assert found["nodes.my.cloud"].line == spec.line_of(text, "my.cloud:")
    assert "nodes.my.cloud.units.g.pu" not in found  # the node is not looked into


def test_unit_names_must_not_contain_dots(spec):
    text = spec.edit(spec.BASE, "      cpu: {kind: cpu,", "      cpu.big: {kind: cpu,")
    p = next(p for p in spec.problems(text) if p.path == "nodes.phone.units.cpu.big")
    assert p.message.startswith("name 'cpu.big' does not match the pattern")
    assert p.message.endswith("a '.' would be ambiguous in 'node.unit' ids)")


def test_schema_and_name_problems_are_listed_together(spec):
    text = spec.edit(spec.BASE, "cores: 4", "cores: -4")
    text = spec.edit(text, "model: net", "model: nett")
    text = spec.edit(text, "source: phone", "source: phnoe")
    text = spec.edit(text, "ends: [phone, cloud]", "ends: [phone, clud]")
    found = {p.path: p for p in spec.problems(text)}
    assert set(found) == {
        "nodes.phone.units.cpu.cores",
        "workload[0].model",
        "workload[0].source",
        "links.uplink.ends[1]",
    }
    assert found["workload[0].model"].suggestion == "net"
    assert found["workload[0].source"].suggestion == "phone"
    assert found["links.uplink.ends[1]"].suggestion == "cloud"
    assert found["links.uplink.ends[1]"].line == spec.line_of(text, "clud")
