"""The socsim command line, end to end, on the shipped examples."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import RESULT_TABLES
from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID
from simulator.spec import reference

EXAMPLES = sorted(Path("scenarios/examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_run_writes_every_table_and_a_reproducible_scenario(example, tmp_path, capsys):
    assert main(["run", str(example), "-o", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "latency p50" in printed and "energy window" in printed
    out = tmp_path / "out"
    for table in RESULT_TABLES:
        assert (out / f"{table}.csv").exists()
    summary = json.loads((out / "summary.json").read_text())
    requests = pd.read_csv(out / "requests.csv")
    assert summary["completed"] == len(requests)
    # the resolved scenario reproduces the run bit for bit
    again = tmp_path / "again"
    assert main(["run", str(out / "scenario.resolved.yaml"), "-o", str(again)]) == 0
    pd.testing.assert_frame_equal(requests, pd.read_csv(again / "requests.csv"), check_exact=True)


def test_validate_reports_every_problem_and_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\n"
        "nodes:\n"
        "  phone:\n"
        "    units:\n"
        "      cpu: {kind: cpu, peak_gflop: {fp32: 1}}\n"
        "models:\n"
        "  m: {zoo: alexnet}\n"
        "workload:\n"
        "  - {app: a, model: m, source: phone, count: 1, arrival: {process: poison, rate_hz: 1}}\n"
        "placement: {policy: single, unit: cpu}\n"
    )
    assert main(["validate", str(bad)]) == EXIT_INVALID
    out = capsys.readouterr().out
    assert "FAIL" in out and "2 problem(s)" in out
    assert f"{bad}:5: nodes.phone.units.cpu.peak_gflop" in out
    assert "did you mean 'peak_gflops'?" in out
    assert f"{bad}:9: workload[0].arrival.process" in out and "did you mean 'poisson'?" in out


def test_run_on_bad_input_is_a_message_not_a_traceback(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing.yaml")]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "file not found" in err and "Traceback" not in err


def test_zoo_lists_and_prints_layers(capsys):
    assert main(["zoo"]) == 0
    assert "resnet50" in capsys.readouterr().out
    assert main(["zoo", "mobilenet_v1", "--option", "width_multiplier=0.5"]) == 0
    assert "1,331,592 params" in capsys.readouterr().out
    assert main(["zoo", "mobilenet"]) == EXIT_INVALID
    assert "did you mean" in capsys.readouterr().err


def test_explain_shows_decision_cut_and_prediction(capsys):
    assert main(["explain", "scenarios/examples/alexnet_phone_cloud.yaml"]) == 0
    out = capsys.readouterr().out
    assert "decision: cloud" in out
    assert "606,112 bytes" in out  # 602,112 B of input up, 4,000 B of output back
    # 896.5 ms of upload, compute and return, plus the 260 ms LTE promotion of an isolated request
    assert "predicted latency 1157 ms" in out


def test_explain_app_picks_apps_a_fleet_entry_or_one_member(tmp_path, capsys):
    import yaml

    doc = yaml.safe_load(Path("scenarios/examples/fleet_edge_wifi.yaml").read_text())
    doc["include"] = [str(Path("scenarios/examples", p).resolve()) for p in doc["include"]]
    doc["duration_s"] = 1
    doc["nodes"]["phone"]["fleet"]["count"] = 3
    doc["nodes"]["far"]["fleet"]["count"] = 2
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["explain", str(path), "--app", "camera[1]", "--app", "camera_far"]) == 0
    explained = [line[4:].split(":")[0] for line in capsys.readouterr().out.splitlines()
                 if line.startswith("app ")]  # fmt: skip
    assert explained == ["camera[1]", "camera_far[0]", "camera_far[1]"]
    assert main(["explain", str(path), "--app", "camra"]) == EXIT_INVALID
    assert (
        "--app: no app 'camra' (did you mean 'camera'?); apps: camera[0..2], camera_far[0..1]"
        in capsys.readouterr().err
    )


def test_explain_names_the_shared_dram_stall(capsys):
    assert main(["explain", "scenarios/examples/codl_cpu_gpu_vgg16.yaml"]) == 0
    out = capsys.readouterr().out
    # CPU and GPU parts of fc6/fc7 share the phone's 76.8 GB/s (tests/engine/test_dram.py)
    assert "memory stall (ops waiting for their node's shared DRAM): 2.615 ms per request" in out
    stalled = out.split("ops slowed most by shared DRAM")[1].splitlines()
    assert stalled[2].split()[:2] == ["fc6#0", "phone.gpu"]


def test_scenario_format_reference_is_current():
    text = Path("docs/scenario-format.md").read_text(encoding="utf-8")
    assert reference.splice(text) == text, "run: python -m simulator.spec.reference"


def _yaml_blocks(markdown: str) -> list[str]:
    blocks, inside, lines = [], False, []
    for line in markdown.splitlines():
        if line.startswith("```yaml"):
            inside, lines = True, []
        elif line.startswith("```") and inside:
            inside = False
            blocks.append("\n".join(lines))
        elif inside:
            lines.append(line)
    return blocks


@pytest.mark.parametrize("doc", ["README.md", "docs/scenario-format.md"])
def test_scenario_examples_in_the_docs_are_valid_and_run(doc):
    import yaml

    from simulator.engine import simulate
    from simulator.spec import parse_scenario

    blocks = [b for b in _yaml_blocks(Path(doc).read_text()) if b.lstrip().startswith("name:")]
    assert blocks, f"{doc} shows no full scenario"
    for block in blocks:
        scenario = parse_scenario(yaml.safe_load(block), base_dir="scenarios/examples")
        assert simulate(scenario).summary["completed"] > 0
