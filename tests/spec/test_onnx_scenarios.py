"""Scenario models from ONNX files: ``models.<name>: {onnx: path, batch, fuse, dtype}``."""

from __future__ import annotations

import shutil

import pytest

from simulator.graph.onnx_import import load_onnx

ONNX_MODEL = "{onnx: models/small_cnn.onnx}"


def with_model(spec, model: str = ONNX_MODEL) -> str:
    source = spec.REPO / "scenarios" / "models" / "small_cnn.onnx"
    (spec.root / "models").mkdir(exist_ok=True)
    shutil.copy(source, spec.root / "models" / "small_cnn.onnx")
    return spec.edit(spec.BASE, "{zoo: alexnet}", model)


def test_onnx_model_loads_relative_to_the_scenario(spec):
    scenario = spec.load(with_model(spec))
    graph = scenario.models["net"]
    reference = load_onnx(spec.root / "models" / "small_cnn.onnx", name="net")
    assert graph.name == "net"
    assert graph.order == reference.order and graph.total_flops == reference.total_flops


def test_onnx_options_reach_the_importer(spec):
    text = with_model(spec, "{onnx: models/small_cnn.onnx, batch: 2, fuse: none, dtype: fp16}")
    graph = spec.load(text).models["net"]
    one = load_onnx(spec.root / "models" / "small_cnn.onnx", fuse="none")
    assert len(graph) == len(one) and graph.total_macs == 2 * one.total_macs
    assert {op.dtype for op in graph} == {"fp16"}


def test_missing_file_is_a_problem_at_the_onnx_key(spec):
    text = spec.edit(spec.BASE, "{zoo: alexnet}", "{onnx: nowhere/model.onnx}")
    p = spec.problem(text)
    assert p.path == "models.net.onnx"
    assert str(spec.root / "nowhere" / "model.onnx") in p.message
    assert p.line == spec.line_of(text, "nowhere")


def test_bad_fuse_value_lists_the_choices(spec):
    text = with_model(spec, "{onnx: models/small_cnn.onnx, fuse: orts}")
    p = spec.problem(text)
    assert p.path == "models.net.fuse"
    assert "'ort', 'none'" in p.message and p.suggestion == "ort"


def test_broken_onnx_file_is_a_problem_with_its_path(spec):
    (spec.root / "broken.onnx").write_bytes(b"not an onnx model at all")
    p = spec.problem(spec.edit(spec.BASE, "{zoo: alexnet}", "{onnx: broken.onnx}"))
    assert p.path == "models.net.onnx"
    assert str(spec.root / "broken.onnx") in p.message and "not an ONNX model" in p.message


def test_example_scenario_runs(spec):
    from simulator.engine import simulate
    from simulator.spec import load_scenario

    scenario = load_scenario(spec.REPO / "scenarios" / "examples" / "onnx_model_phone.yaml")
    graph = scenario.models["small_cnn"]
    assert graph.order[0] == "conv1" and len(graph) == 10  # fused as onnxruntime does
    result = simulate(scenario)
    assert result.summary["completed"] == 30


def test_resolved_document_reloads_from_another_directory(spec, tmp_path_factory):
    """The resolved document names the model by absolute path; read from elsewhere, the
    path rule asks for the model's folder to be allowed (docs/security.md)."""
    from simulator.errors import ScenarioError
    from simulator.spec import parse_scenario

    scenario = spec.load(with_model(spec))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    source = str(elsewhere / "x.yaml")
    with pytest.raises(ScenarioError, match="outside the allowed directories"):
        parse_scenario(scenario.document, base_dir=elsewhere, source=source)
    again = parse_scenario(
        scenario.document, base_dir=elsewhere, source=source, allow_dirs=[spec.root / "models"]
    )
    assert again.models["net"].order == scenario.models["net"].order
    assert scenario.document["models"]["net"]["onnx"] == str(
        (spec.root / "models" / "small_cnn.onnx").resolve()
    )
