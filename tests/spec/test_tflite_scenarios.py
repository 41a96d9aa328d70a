"""Scenario models from TFLite files: ``models.<name>: {tflite: path, batch, dtype}``."""

from __future__ import annotations

import shutil

from simulator.graph.tflite_import import load_tflite

FILE = "tiny_mobilenet_int8.tflite"
TFLITE_MODEL = f"{{tflite: models/{FILE}}}"
#: The base scenario's phone CPU computes fp32 only; the imported model is int8.
INT8_CPU = "peak_gflops: {fp32: 10, int8: 40}"


def with_model(spec, model: str = TFLITE_MODEL) -> str:
    (spec.root / "models").mkdir(exist_ok=True)
    shutil.copy(spec.REPO / "scenarios" / "models" / FILE, spec.root / "models" / FILE)
    text = spec.edit(spec.BASE, "{zoo: alexnet}", model)
    return spec.edit(text, "peak_gflops: {fp32: 10}", INT8_CPU)


def test_tflite_model_loads_relative_to_the_scenario_and_runs(spec):
    from simulator.engine import simulate

    scenario = spec.load(with_model(spec))
    graph = scenario.models["net"]
    reference = load_tflite(spec.root / "models" / FILE, name="net")
    assert graph.name == "net" and graph.order == reference.order
    assert graph.total_flops == reference.total_flops and len(graph) == 13
    assert scenario.document["models"]["net"]["tflite"] == str(
        (spec.root / "models" / FILE).resolve()
    )
    assert simulate(scenario).summary["completed"] == 3


def test_tflite_options_reach_the_importer(spec):
    text = with_model(spec, f"{{tflite: models/{FILE}, batch: 2, dtype: fp16}}")
    graph = spec.load(text).models["net"]
    one = load_tflite(spec.root / "models" / FILE)
    assert graph.total_macs == 2 * one.total_macs
    assert {op.dtype for op in graph} == {"fp16"}


def test_missing_file_is_a_problem_at_the_tflite_key(spec):
    text = spec.edit(spec.BASE, "{zoo: alexnet}", "{tflite: nowhere/model.tflite}")
    p = spec.problem(text)
    assert p.path == "models.net.tflite"
    assert f"no TFLite file at {spec.root / 'nowhere' / 'model.tflite'}" in p.message
    assert p.line == spec.line_of(text, "nowhere")


def test_broken_tflite_file_is_a_problem_with_its_path(spec):
    (spec.root / "broken.tflite").write_bytes(b"not a tflite model at all")
    p = spec.problem(spec.edit(spec.BASE, "{zoo: alexnet}", "{tflite: broken.tflite}"))
    assert p.path == "models.net.tflite"
    assert str(spec.root / "broken.tflite") in p.message
    assert "expected b'TFL3'" in p.message


def test_an_unknown_option_names_the_tflite_keys(spec):
    p = spec.problem(with_model(spec, f"{{tflite: models/{FILE}, fuse: ort}}"))
    assert p.path == "models.net.fuse"
    assert "tflite" in p.message and "batch" in p.message


def test_the_editor_schema_knows_the_tflite_source(spec):
    """The JSON Schema for editors (socsim schema) accepts a TFLite model and flags a key
    only ONNX models take, as the loader does."""
    import jsonschema
    import yaml

    from simulator.spec.editor_schema import scenario_json_schema

    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    assert not list(validator.iter_errors(yaml.safe_load(with_model(spec))))
    wrong = yaml.safe_load(with_model(spec, f"{{tflite: models/{FILE}, fuse: ort}}"))
    assert list(validator.iter_errors(wrong))
