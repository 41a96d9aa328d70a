"""The path rule: files named in a scenario are relative to the file naming them and may
not leave the allowed directories (scenario folder, shipped library, --allow-dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.cli import main
from simulator.engine.ledger import OP_COLUMNS
from simulator.errors import ScenarioError
from simulator.exitcodes import EXIT_INVALID
from simulator.spec import load_scenario
from simulator.spec.paths import (
    PathNotAllowedError,
    allowed_dirs,
    resolve_user_path,
    shipped_library_dir,
)
from simulator.sweep.runner import prepare_sweep

LIBRARY = {
    "presets": {
        "nodes": {
            "lib_phone": {
                "role": "device",
                "units": {
                    "cpu": {"kind": "cpu", "peak_gflops": {"fp32": 1}, "idle_w": 0.1, "active_w": 1}
                },
            }
        }
    }
}


def _write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _scenario_including(small_soc, folder: Path, include: str) -> Path:
    doc = dict(small_soc, include=[include])
    return _write(folder / "scenario.yaml", doc)


def _only_problem(path: Path, **kwargs):
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, **kwargs)
    return info.value.problems


def test_resolve_user_path_is_relative_to_the_naming_file(tmp_path):
    (tmp_path / "a").mkdir()
    assert resolve_user_path("x.csv", tmp_path / "a", [tmp_path]) == (tmp_path / "a/x.csv")
    assert resolve_user_path("../x.csv", tmp_path / "a", [tmp_path.resolve()]) == (
        tmp_path / "x.csv"
    )
    with pytest.raises(PathNotAllowedError) as info:
        resolve_user_path("../../x.csv", tmp_path / "a", [tmp_path.resolve()])
    assert str(tmp_path.parent.resolve() / "x.csv") in str(info.value)
    assert str(tmp_path.resolve()) in str(info.value)  # lists the allowed directories


def test_a_prefix_is_not_a_parent(tmp_path):
    """/x/ab is not inside /x/a even though the text starts the same."""
    (tmp_path / "a").mkdir()
    with pytest.raises(PathNotAllowedError):
        resolve_user_path("../ab/f", tmp_path / "a", [(tmp_path / "a").resolve()])


def test_include_escaping_the_scenario_folder_is_refused(tmp_path, small_soc):
    _write(tmp_path / "outside" / "lib.yaml", LIBRARY)
    scenario = _scenario_including(small_soc, tmp_path / "project", "../outside/lib.yaml")
    problems = _only_problem(scenario)
    assert len(problems) == 1
    problem = problems[0]
    assert problem.path == "include[0]"
    assert str((tmp_path / "outside" / "lib.yaml").resolve()) in problem.message
    assert str((tmp_path / "project").resolve()) in problem.message
    assert "--allow-dir" in problem.message
    # allowed explicitly, it loads
    assert load_scenario(scenario, allow_dirs=[tmp_path / "outside"]).name == "small_soc"


def test_absolute_paths_are_judged_by_the_same_rule(tmp_path, small_soc):
    library = _write(tmp_path / "outside" / "lib.yaml", LIBRARY)
    scenario = _scenario_including(small_soc, tmp_path / "project", str(library))
    assert _only_problem(scenario)[0].path == "include[0]"
    scenario = _scenario_including(small_soc, tmp_path / "project", "/etc/passwd")
    assert "outside the allowed directories" in _only_problem(scenario)[0].message


def test_symlinks_are_resolved_before_the_check(tmp_path, small_soc):
    _write(tmp_path / "outside" / "lib.yaml", LIBRARY)
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(tmp_path / "outside" / "lib.yaml", project / "lib.yaml")
    scenario = _scenario_including(small_soc, project, "lib.yaml")
    problem = _only_problem(scenario)[0]
    assert str((tmp_path / "outside" / "lib.yaml").resolve()) in problem.message
    # a link pointing inside the allowed folder is fine
    _write(project / "real.yaml", LIBRARY)
    os.symlink(project / "real.yaml", project / "alias.yaml")
    assert load_scenario(_scenario_including(small_soc, project, "alias.yaml"))


def test_nested_includes_are_relative_to_the_including_file(tmp_path, small_soc):
    _write(tmp_path / "project" / "libs" / "leaf.yaml", LIBRARY)
    _write(tmp_path / "project" / "libs" / "mid.yaml", {"include": ["leaf.yaml"], "presets": {}})
    assert load_scenario(_scenario_including(small_soc, tmp_path / "project", "libs/mid.yaml"))
    # a nested include may not leave the allowed folders either
    _write(tmp_path / "elsewhere" / "leaf.yaml", LIBRARY)
    _write(
        tmp_path / "project" / "libs" / "bad.yaml",
        {"include": ["../../elsewhere/leaf.yaml"], "presets": {}},
    )
    problems = _only_problem(_scenario_including(small_soc, tmp_path / "project", "libs/bad.yaml"))
    assert any("outside the allowed directories" in p.message for p in problems)


def _with_trace_file(small_soc_cloud: dict, name: str) -> dict:
    doc = dict(small_soc_cloud)
    link = next(iter(doc["links"]))
    doc["links"] = {link: dict(doc["links"][link], bandwidth_trace_file=name)}
    return doc


def test_trace_files_follow_the_rule(tmp_path, phone_cloud):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "bw.csv").write_text("time_s,bandwidth_mbps\n0,10\n1,20\n")
    doc = _with_trace_file(phone_cloud, "../outside/bw.csv")
    scenario = _write(tmp_path / "project" / "s.yaml", doc)
    problems = _only_problem(scenario)
    link = next(iter(doc["links"]))
    assert [p.path for p in problems] == [f"links.{link}.bandwidth_trace_file"]
    assert "outside the allowed directories" in problems[0].message
    loaded = load_scenario(scenario, allow_dirs=[str(tmp_path / "outside")])
    assert loaded.platform.network.links[link].bandwidth_trace[1] == (1.0, 20e6)


def test_shipped_examples_include_the_shipped_library():
    library = shipped_library_dir()
    assert library is not None and (library / "devices" / "flagship_phone.yaml").is_file()
    assert library in allowed_dirs("/nonexistent")
    assert load_scenario(library / "examples" / "amdahl_cpu_cores.yaml").name


def test_cli_allow_dir(tmp_path, small_soc, capsys):
    _write(tmp_path / "outside" / "lib.yaml", LIBRARY)
    scenario = _scenario_including(small_soc, tmp_path / "project", "../outside/lib.yaml")
    assert main(["validate", str(scenario)]) == EXIT_INVALID
    assert "outside the allowed directories" in capsys.readouterr().out
    assert main(["validate", "--allow-dir", str(tmp_path / "outside"), str(scenario)]) == 0
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                str(scenario),
                "--allow-dir",
                str(tmp_path / "outside"),
                "-o",
                str(out),
                "--trace",
                "none",
            ]
        )
        == 0
    )
    header = (out / "ops.csv").read_text().strip()  # --trace none: the header only
    assert header == ",".join(OP_COLUMNS)


def test_sweeps_take_allow_dirs(tmp_path, small_soc):
    _write(tmp_path / "outside" / "lib.yaml", LIBRARY)
    scenario = _scenario_including(small_soc, tmp_path / "project", "../outside/lib.yaml")
    parameters = {"workload[0].count": [1, 2]}
    with pytest.raises(ScenarioError, match="outside the allowed directories"):
        prepare_sweep(scenario, parameters, executor="serial")
    prepared = prepare_sweep(
        scenario, parameters, allow_dirs=[tmp_path / "outside"], executor="serial"
    )
    assert len(prepared.tasks) == 2


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    name=st.one_of(
        st.text(max_size=30),
        st.lists(st.sampled_from(["..", ".", "a", "/", "//", "~", "\x00", "bw.csv"])).map("/".join),
    )
)
def test_any_written_trace_path_is_read_inside_the_allowed_folder_or_refused(
    tmp_path_factory, phone_cloud, name
):
    folder = tmp_path_factory.mktemp("paths")
    (folder / "project").mkdir()
    (folder / "project" / "bw.csv").write_text("0,10\n")
    (folder / "secret.csv").write_text("0,99\n")
    doc = _with_trace_file(phone_cloud, name)
    scenario = _write(folder / "project" / "s.yaml", doc)
    try:
        loaded = load_scenario(scenario)
    except ScenarioError as exc:
        assert all(p.path.startswith("links.") for p in exc.problems), exc.problems
        return
    link = next(iter(loaded.platform.network.links.values()))
    assert link.bandwidth_trace == ((0.0, 10e6),)  # never the secret one level up


def test_onnx_model_files_follow_the_rule(tmp_path, small_soc):
    shipped = shipped_library_dir() / "models" / "small_cnn.onnx"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "net.onnx").write_bytes(shipped.read_bytes())
    doc = dict(small_soc, models={"chain": {"onnx": "../outside/net.onnx"}})
    doc["workload"] = [
        dict(w, placement={"policy": "single", "unit": "phone.cpu"}) for w in small_soc["workload"]
    ]
    scenario = _write(tmp_path / "project" / "s.yaml", doc)
    problems = _only_problem(scenario)
    assert [p.path for p in problems] == ["models.chain.onnx"]
    assert "outside the allowed directories" in problems[0].message
    loaded = load_scenario(scenario, allow_dirs=[str(tmp_path / "outside")])
    assert len(loaded.models["chain"]) > 0
