"""The ``predictor: {file}`` key of a unit: loaded once, relative to the naming file,
inside the allowed folders, malformed files reported at the YAML path; explain shows
which model costs each op."""

from __future__ import annotations

import json
import warnings

import pytest

from simulator.cli import main
from simulator.engine import plan_apps, simulate
from simulator.hardware.predictor import KernelPredictor, PredictorRangeWarning
from simulator.placement.explain import op_table
from simulator.platform import CostOracle
from tests.hardware.test_predictor import tiny_artifact

UNIT = "      cpu: {kind: cpu, cores: 4, peak_gflops: {fp32: 10}, dispatch_us: 5, active_w: 2}\n"
WITH_PREDICTOR = (
    "      cpu:\n"
    "        {kind: cpu, cores: 4, peak_gflops: {fp32: 10}, dispatch_us: 5, active_w: 2,\n"
    "         predictor: {file: PATH}}\n"
)


def _scenario(spec, path: str, artifact: dict | None = None, where: str = "p.json") -> str:
    if artifact is not None:
        spec.write(json.dumps(artifact), where)
    text = spec.edit(spec.BASE, UNIT, WITH_PREDICTOR.replace("PATH", path))
    return text


def _four_threads() -> dict:
    data = tiny_artifact()
    data["models"][0]["threads"] = 4
    data["models"][0]["range"] = {"flops": [0, 1e12], "kernel": [1, 11]}
    return data


def test_a_unit_loads_its_predictor_and_explain_names_the_model(spec):
    scenario = spec.load(_scenario(spec, "p.json", _four_threads()))
    unit = scenario.platform.unit("phone.cpu")
    assert isinstance(unit.predictor, KernelPredictor)
    oracle = CostOracle(scenario.platform)
    plan = plan_apps(scenario, oracle)["camera"]
    table = op_table(plan, oracle)
    conv = table[table["kind"] == "conv"]
    assert set(conv["model"]) == {"predictor"}  # AlexNet's convs have shape attributes
    assert set(table.loc[table["kind"] != "conv", "model"]) == {"roofline"}
    # leaves: 1 ms at <= 1 MFLOP, 2 ms above (all AlexNet convs), plus 10 µs overhead
    assert conv["time_s"].tolist() == [pytest.approx(2.01e-3, rel=1e-12)] * 5
    result = simulate(scenario)
    assert len(result.requests) == 3


def test_explain_prints_the_model_column(spec, capsys):
    path = spec.write(_scenario(spec, "p.json", _four_threads()))
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert "model" in out and "predictor" in out and "roofline" in out


def test_a_malformed_artifact_is_a_scenario_error_at_the_yaml_path(spec):
    bad = tiny_artifact()
    bad["version"] = 9
    problem = spec.problem(_scenario(spec, "p.json", bad))
    assert problem.path == "nodes.phone.units.cpu.predictor.file"
    assert str(spec.root / "p.json") in problem.message
    assert "version: this socsim reads version 1, got 9" in problem.message
    assert "expected the path of a kernel-predictor artifact" in problem.message


def test_a_missing_or_outside_artifact_is_refused(spec, tmp_path_factory):
    problem = spec.problem(_scenario(spec, "nowhere.json"))
    assert problem.path.endswith("predictor.file") and "cannot read" in problem.message
    outside = tmp_path_factory.mktemp("elsewhere") / "p.json"
    outside.write_text(json.dumps(tiny_artifact()))
    problem = spec.problem(_scenario(spec, str(outside)))
    assert "outside the allowed directories" in problem.message


def test_the_path_is_relative_to_the_file_that_names_it(spec):
    spec.write(json.dumps(_four_threads()), "devices/host.predictor.json")
    spec.write(
        """\
        presets:
          nodes:
            host:
              role: device
              units:
                cpu: {kind: cpu, peak_gflops: {fp32: 10}, predictor: {file: host.predictor.json}}
        """,
        "devices/host.yaml",
    )
    text = spec.BASE.replace(
        "nodes:\n  phone:\n", "include: [devices/host.yaml]\nnodes:\n  phone:\n"
    )
    text = text.replace("  cloud:\n", "  host: {preset: host}\n  cloud:\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictorRangeWarning)
        scenario = spec.load(text)
    assert scenario.platform.unit("host.cpu").predictor is not None


def test_the_artifact_is_read_like_every_scenario_named_file(spec):
    """One read through spec.paths.read_user_file: a FIFO named as the artifact is refused
    at once (an open() of it used to block the load forever)."""
    import os

    os.mkfifo(spec.root / "pipe.json")
    problem = spec.problem(_scenario(spec, "pipe.json"))
    assert problem.path.endswith("predictor.file") and "cannot read" in problem.message
