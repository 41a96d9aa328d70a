"""Issue 21 item 3: `socsim validate` plans every app, so a placement that cannot run is
reported with its YAML path and the fix, as `socsim run` reports it.

Before: `socsim validate` printed "ok" for both scenarios below; `run` failed on the first
app only, without a YAML path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID, EXIT_OK
from simulator.placement.check import plan_problems
from simulator.spec import load_scenario

LIBRARY = Path(__file__).resolve().parents[2] / "scenarios"
HEAD_NODE = "  phone: {preset: flagship_phone}\n"
HEAD = f"""\
name: infeasible
seed: 1
include: [{LIBRARY / "devices/flagship_phone.yaml"}]
nodes:
  phone: {{preset: flagship_phone}}
"""
# the flagship NPU: fp16 and int8 only, and no standalone softmax (flagship_phone.yaml)
FP32_ON_NPU = (
    HEAD
    + """\
models:
  net: {zoo: mobilenet_v2, dtype: fp32}
workload:
  - {app: cam, model: net, source: phone, arrival: {process: periodic, period_ms: 200}, count: 2}
placement: {policy: single, unit: npu}
"""
)
SOFTMAX_ON_NPU = (
    HEAD
    + """\
models:
  net:
    ops:
      - {name: a, kind: conv, flops: 2.0e6, input_elems: 3072, output_elems: 4096, dtype: int8}
      - {name: head, kind: softmax, flops: 1.0e4, input_elems: 4096, output_elems: 10, dtype: int8}
    edges: [{src: a, dst: head}]
workload:
  - app: cam
    model: net
    source: phone
    arrival: {process: periodic, period_ms: 200}
    count: 2
    placement: {policy: single, unit: npu}
  - app: cam2
    model: net
    source: phone
    arrival: {process: periodic, period_ms: 200}
    count: 2
    replicas:
      - {policy: single, unit: cpu_big}
      - {policy: single, unit: npu}
"""
)
FIX = "use policy 'fallback' to send such ops to another unit"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_validate_reports_fp32_on_an_int8_only_unit(tmp_path, capsys):
    path = _write(tmp_path, FP32_ON_NPU)
    assert main(["validate", str(path)]) == EXIT_INVALID
    out = capsys.readouterr().out
    assert out == (
        f"FAIL {path}: 1 problem(s)\n"
        f"  - {path}:10: placement: app 'cam': placement 'single' (op 'conv1'): 'phone.npu' "
        f"cannot run it (unit has no fp32 throughput (has: fp16, int8)); {FIX}\n"
    )


def _softmax_why(unit: str) -> str:
    return (
        f"placement 'single' (op 'head'): '{unit}' cannot run it (unit does not support "
        f"op kind 'softmax'); {FIX}"
    )


def _validate_failing(tmp_path: Path, capsys, text: str) -> tuple[Path, list[str]]:
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == EXIT_INVALID
    return path, capsys.readouterr().out.splitlines()


def test_validate_reports_softmax_on_the_npu_at_every_placement(tmp_path, capsys):
    path, lines = _validate_failing(tmp_path, capsys, SOFTMAX_ON_NPU)
    why = _softmax_why("phone.npu")
    assert lines == [
        f"FAIL {path}: 2 problem(s)",
        f"  - {path}:18: workload[0].placement: app 'cam': {why}",
        f"  - {path}:26: workload[1].replicas[1]: app 'cam2': {why}",
    ]


@pytest.mark.parametrize("text", [FP32_ON_NPU, SOFTMAX_ON_NPU])
def test_run_reports_what_validate_reports(text, tmp_path, capsys):
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == EXIT_INVALID
    problems = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  - ")]
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{len(problems)} problem" in err
    for line in problems:
        assert line in err
    assert not (tmp_path / "out").exists()


def test_a_feasible_placement_validates(tmp_path, capsys):
    text = SOFTMAX_ON_NPU.replace(
        "{policy: single, unit: npu}", "{policy: fallback, preferred: npu}"
    )
    path = _write(tmp_path, text)
    assert plan_problems(load_scenario(path)) == []
    assert main(["validate", str(path)]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"ok   {path}: 2 app(s)")


def test_plan_problems_without_the_document_name_the_file(tmp_path):
    path = _write(tmp_path, FP32_ON_NPU)
    (problem,) = plan_problems(load_scenario(path), source=str(path))
    assert (problem.path, problem.file, problem.line) == ("placement", str(path), None)
    assert problem.message.startswith("app 'cam': placement 'single' (op 'conv1')")


def test_a_fleet_entry_fails_once_at_its_own_path_and_line(tmp_path, capsys):
    # cam2, the second entry written, runs on a fleet of six: workload[1..6] once
    # expanded, yet its problem is at workload[1] and the line written, once for the six
    fleet = "  fleet_phone: {preset: flagship_phone, fleet: {count: 6}}\n"
    text = SOFTMAX_ON_NPU.replace("  phone: {preset: flagship_phone}\n", f"{HEAD_NODE}{fleet}")
    text = text.replace(
        "  - app: cam2\n    model: net\n    source: phone\n",
        "  - app: cam2\n    model: net\n    source: fleet_phone\n",
    )
    path, lines = _validate_failing(tmp_path, capsys, text)
    assert lines == [
        f"FAIL {path}: 2 problem(s)",
        f"  - {path}:19: workload[0].placement: app 'cam': {_softmax_why('phone.npu')}",
        f"  - {path}:27: workload[1].replicas[1]: app 'cam2[0]': "
        f"{_softmax_why('fleet_phone[0].npu')} "
        "(and 5 more member app(s) of this fleet entry)",
    ]


def test_two_entries_failing_at_the_one_top_level_placement_stay_two_problems(tmp_path, capsys):
    # no fleet: cam and cam2 both take the document's placement; neither is folded
    replicas = "      - {policy: single, unit: cpu_big}\n      - {policy: single, unit: npu}\n"
    text = SOFTMAX_ON_NPU.replace(f"    replicas:\n{replicas}", "")
    text = text.replace("    placement: {policy: single, unit: npu}\n", "")
    text += "placement: {policy: single, unit: npu}\n"
    path, lines = _validate_failing(tmp_path, capsys, text)
    why = _softmax_why("phone.npu")
    assert lines[1:] == [
        f"  - {path}:{len(text.splitlines())}: placement: app 'cam': {why}",
        f"  - {path}:{len(text.splitlines())}: placement: app 'cam2': {why}",
    ]
