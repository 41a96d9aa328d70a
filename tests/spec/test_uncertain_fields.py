"""Figures given as distributions: the nominal value, and clear errors (file, YAML path,
what was expected, the nearest valid key)."""

from __future__ import annotations

import pytest

from simulator.spec import load_scenario
from simulator.spec.uncertain import SampleKey, uncertain_paths

CPU = "cpu: {kind: cpu, cores: 4, peak_gflops: {fp32: 10}, dispatch_us: 5, active_w: 2}"


def _with_cpu(spec, body: str) -> str:
    return spec.edit(spec.BASE, CPU, f"cpu: {{kind: cpu, cores: 4, {body}}}")


def test_a_deterministic_run_uses_the_mean_and_the_midpoint(spec):
    plain = spec.load(spec.BASE)
    text = _with_cpu(
        spec,
        "peak_gflops: {fp32: {mean: 10, sd: 2}}, dispatch_us: {low: 4, high: 6}, "
        "active_w: {mean: 2, sd: 0.5}",
    )
    text = spec.edit(text, "latency_ms: 20,", "latency_ms: {low: 10, high: 30},")
    uncertain = spec.load(text)
    assert uncertain.platform.nodes == plain.platform.nodes  # 10, (4 + 6) / 2 = 5, 2
    assert uncertain.platform.network.links == plain.platform.network.links
    assert uncertain_paths(uncertain.document) == [
        "nodes.phone.units.cpu.peak_gflops.fp32",
        "nodes.phone.units.cpu.dispatch_us",
        "nodes.phone.units.cpu.active_w",
        "links.uplink.latency_ms",
    ]
    # the resolved document keeps the distributions: it reloads to the same nominal run
    assert uncertain.document["links"]["uplink"]["latency_ms"] == {"low": 10, "high": 30}


def test_a_sample_holds_its_draws_in_its_document(spec):
    text = _with_cpu(spec, "peak_gflops: {fp32: {mean: 10, sd: 2}}")
    path = spec.write(text)
    drawn = load_scenario(path, sample=SampleKey(3, 0))
    value = drawn.document["nodes"]["phone"]["units"]["cpu"]["peak_gflops"]["fp32"]
    assert isinstance(value, float) and value != 10
    assert drawn.platform.unit("phone.cpu").peak_flops["fp32"] == pytest.approx(value * 1e9)
    again = load_scenario(path, sample=SampleKey(3, 0))
    assert again.platform.nodes == drawn.platform.nodes and again.document == drawn.document


@pytest.mark.parametrize(
    ("body", "path", "message", "suggestion"),
    [
        (
            "efficiency: {default: {mean: 0.6, sigma: 0.1}}",
            "nodes.phone.units.cpu.efficiency.default.sigma",
            "unknown key 'sigma' in a distribution; expected {mean, sd} (normal, truncated "
            "to the field's range) or {low, high} (uniform) of a number > 0 and <= 1",
            "sd",
        ),
        (
            "efficiency: {default: {mean: 0.6}}",
            "nodes.phone.units.cpu.efficiency.default",
            "missing 'sd': a normal distribution is {mean, sd}",
            None,
        ),
        (
            "dispatch_us: {low: 5, high: 2}",
            "nodes.phone.units.cpu.dispatch_us.high",
            "high 2 is below low 5",
            None,
        ),
        (
            "efficiency: {default: {mean: 1.2, sd: 0.1}}",
            "nodes.phone.units.cpu.efficiency.default.mean",
            "expected a number > 0 and <= 1, got 1.2",
            None,
        ),
        (
            "dispatch_us: {mean: 5, sd: -1}",
            "nodes.phone.units.cpu.dispatch_us.sd",
            "expected a number >= 0 (µs), got -1",
            None,
        ),
        (
            "active_w: {mean: 1, sd: 0.1, low: 0.5, high: 2}",
            "nodes.phone.units.cpu.active_w",
            "give {mean, sd} (normal) or {low, high} (uniform), not both",
            None,
        ),
        (
            "active_w: {max: 3}",
            "nodes.phone.units.cpu.active_w.max",
            "unknown key 'max' in a distribution",
            "high",
        ),
    ],
)
def test_a_bad_distribution_names_file_path_expectation_and_nearest_key(
    spec, body, path, message, suggestion
):
    text = _with_cpu(spec, body)
    found = [p for p in spec.problems(text) if p.path == path]
    assert found, [str(p) for p in spec.problems(text)]
    problem = found[0]
    assert message in problem.message
    assert problem.suggestion == suggestion
    assert problem.file.endswith("scenario.yaml")
    assert problem.line == spec.line_of(text, "cpu: {kind: cpu")


def test_a_field_outside_the_documented_set_refuses_a_distribution(spec):
    text = spec.edit(spec.BASE, "cores: 4,", "cores: {mean: 4, sd: 1},")
    problem = spec.problem(text)
    assert problem.path == "nodes.phone.units.cpu.cores"
    assert "expected a whole number" in problem.message
