"""A scenario's ``plugins:`` imports only allowed modules (docs/security.md).

Allowed: a module of the package of an installed ``socsim.*`` entry point, a module this
process registered entries from, or one the user allows (``--allow-plugin``,
``allow_plugins=``), in the parent and in the workers of every sweep executor. Anything
else is a problem at ``plugins[i]`` and is never imported. (The example package's own
route, allowed by its entry points, is tests/test_plugins.py.)
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_plugins import install

from simulator.errors import ScenarioError
from simulator.plugins import plugin_allowed
from simulator.scheduling import SCHEDULERS
from simulator.spec import load_scenario

ROOT = Path(__file__).resolve().parents[1]

#: registers a scheduler when imported (a plug-in module that is not installed)
GATE_SCHED = '''
from simulator.plugins import register_scheduler


@register_scheduler("newest_first")
def newest_first(rid, position, priority, deadline_at_s, ready_s):
    """Newest request first (a free unit serves the smallest key)."""
    return (-rid, position)
'''

# Three 1 ms requests on one CPU arriving at 0, 0.25 and 0.5 ms. fcfs: r0 [0,1], r1 [1,2],
# r2 [2,3] -> 1, 1.75, 2.5 ms; newest_first: r0 [0,1], r2 [1,2], r1 [2,3] -> 1, 1.5,
# 2.75 ms. Same mean (1.75 ms: one unit, equal work), max 2.5 vs 2.75 ms.
SCENARIO = """\
name: gate
plugins: [{plugins}]
nodes: {{phone: {{role: device, units: {{cpu: {{kind: cpu}}}}}}}}
models: {{m: {{ops: [{{name: a, time_ms: {{cpu: 1}}}}]}}}}
workload:
  - {{app: x, model: m, source: phone, arrival: {{process: trace, times_ms: [0, 0.25, 0.5]}}}}
placement: {{policy: single, unit: cpu}}
scheduler: {scheduler}
sweep:
  parameters: {{scheduler: [fcfs, newest_first]}}
  executor: {{name: processes, workers: 1, start_method: spawn}}
"""
MAX_LATENCY_S = {"fcfs": 0.0025, "newest_first": 0.00275}


def scenario_file(folder: Path, plugins: str, scheduler: str = "fcfs") -> Path:
    path = folder / "scenario.yaml"
    path.write_text(SCENARIO.format(plugins=plugins, scheduler=scheduler))
    return path


@pytest.fixture
def modules(tmp_path, monkeypatch) -> Path:
    """A folder on ``sys.path`` with ``gate_sched`` and ``gate_side`` (which leaves a mark
    when imported); both are forgotten, and ``newest_first`` unregistered, afterwards."""
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "gate_sched.py").write_text(GATE_SCHED)
    mark = tmp_path / "imported"
    (folder / "gate_side.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(folder))
    for name in ("gate_sched", "gate_side"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield folder
    for name in ("gate_sched", "gate_side"):
        sys.modules.pop(name, None)
    SCHEDULERS._entries.pop("newest_first", None)


def test_a_module_not_allowed_is_a_problem_with_its_line_and_is_never_imported(modules, tmp_path):
    path = scenario_file(tmp_path, "gate_side, json")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    found = {p.path: p for p in caught.value.problems}
    side, stdlib = found["plugins[0]"], found["plugins[1]"]
    assert (side.file, side.line, stdlib.line) == (str(path), 2, 2)
    assert "socsim would import module 'gate_side', running its code" in side.message
    assert "--allow-plugin gate_side (allow_plugins=['gate_side'] in the library)" in (side.message)
    # json is imported already, but registered nothing: a file may not name it either
    assert "--allow-plugin json" in stdlib.message
    assert not (tmp_path / "imported").exists() and "gate_side" not in sys.modules


def test_allow_plugins_imports_the_module_and_suggests_a_near_allowed_name(modules, tmp_path):
    path = scenario_file(tmp_path, "gate_side")
    assert load_scenario(path, allow_plugins=["gate_side"]).plugins == ("gate_side",)
    assert (tmp_path / "imported").exists()
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario_file(tmp_path, "gate_sid"), allow_plugins=["gate_side"])
    (problem,) = caught.value.problems
    assert (problem.path, problem.suggestion) == ("plugins[0]", "gate_side")


@pytest.mark.parametrize(
    ("name", "allow", "allowed"),
    [
        ("my_pkg.policies", ["my_pkg.policies"], True),
        ("my_pkg.policies.sub", ["my_pkg.policies"], True),  # a submodule of an allowed one
        ("my_pkg", ["my_pkg.policies"], False),  # not the package above it
        ("my_pkg.policiesx", ["my_pkg.policies"], False),  # whole components only
        ("os", [], False),
        ("antigravity", ["os"], False),
    ],
)
def test_what_allow_plugins_allows(name, allow, allowed):
    assert plugin_allowed(name, allow) is allowed


def test_a_single_string_is_not_taken_for_a_list():
    from simulator.errors import SocsimError
    from simulator.spec import parse_scenario

    with pytest.raises(SocsimError, match=r"a list of module names.*write \['gate_side'\]"):
        parse_scenario({}, allow_plugins="gate_side")


def test_the_packages_of_installed_socsim_entry_points_are_allowed(tmp_path, monkeypatch):
    points = {
        "socsim.test_gate": {"f": "gate_ep.policies:f"},
        "console_scripts": {"tool": "evil_tool:main"},  # not a socsim plug-in
    }
    assert not plugin_allowed("gate_ep.bursts")
    install(tmp_path, "gate-ep", "1.0", points, None)
    monkeypatch.syspath_prepend(str(tmp_path))  # entry points are read again: new sys.path
    assert plugin_allowed("gate_ep.policies") and plugin_allowed("gate_ep.bursts")
    assert plugin_allowed("gate_ep")
    assert not plugin_allowed("gate_epx") and not plugin_allowed("evil_tool")


def test_a_module_this_process_registered_from_needs_no_opt_in(modules, tmp_path):
    path = scenario_file(tmp_path, "gate_sched", scheduler="newest_first")
    with pytest.raises(ScenarioError, match="--allow-plugin gate_sched"):
        load_scenario(path)
    importlib.import_module("gate_sched")  # the user's Python registers newest_first
    assert load_scenario(path).scheduler == "newest_first"


@pytest.mark.parametrize("command", ["run", "validate", "explain", "sweep", "score"])
def test_every_command_that_reads_scenarios_takes_allow_plugin(command):
    from simulator.cli import build_parser

    args = build_parser().parse_args(
        [command, "--allow-plugin", "a.b", "--allow-plugin", "c", "--allow-dir", "d", "s.yaml"]
    )
    assert (args.allow_plugins, args.allow_dirs) == (["a.b", "c"], ["d"])


def test_allow_plugin_on_the_command_line(modules, tmp_path, capsys):
    from simulator.cli import main

    path = str(scenario_file(tmp_path, "gate_side"))
    assert main(["validate", path]) == 1
    assert "plugins[0]: socsim would import module 'gate_side'" in capsys.readouterr().out
    assert not (tmp_path / "imported").exists()
    assert main(["validate", "--allow-plugin", "gate_side", path]) == 0
    assert (tmp_path / "imported").exists()
    with pytest.raises(SystemExit) as caught:
        main(["validate", "--allow-plugin", "gate side", path])
    assert caught.value.code == 2
    assert "'gate side' is not a module name" in capsys.readouterr().err


# -- sweeps: the decision reaches every executor's workers --------------------------------
SWEEP_SCRIPT = """
import importlib, json, sys
from simulator.sweep import run_sweep
executor, options, out, scenario, allow, first = sys.argv[1:]
if first:
    importlib.import_module(first)  # registered by this Python: allowed without opt-in
table = run_sweep(scenario, out, quiet=True, executor=executor,
                  executor_options=json.loads(options), allow_plugins=json.loads(allow))
print(json.dumps(table[["scheduler", "status", "error", "latency_max_s"]].astype(str)
                 .to_dict("records")))
"""


def _python(tmp_path: Path, modules: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(modules), str(ROOT)]))
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def _check_rows(rows: list[dict]) -> None:
    assert [row["scheduler"] for row in rows] == ["fcfs", "newest_first"]
    for row in rows:
        assert row["status"] == "ok", row
        assert float(row["latency_max_s"]) == pytest.approx(
            MAX_LATENCY_S[row["scheduler"]], rel=1e-12
        )


@pytest.mark.parametrize(
    ("executor", "options", "allow", "first"),
    [
        ("processes", {"workers": 1, "start_method": "spawn"}, ["gate_sched"], ""),
        ("processes", {"workers": 1, "start_method": "spawn"}, [], "gate_sched"),
        ("processes", {"workers": 2, "start_method": "fork"}, ["gate_sched"], ""),
        ("serial", {}, ["gate_sched"], ""),
        ("dask", {"workers": 1}, ["gate_sched"], ""),
    ],
)
def test_a_sweep_carries_what_was_allowed_to_its_workers(
    modules, tmp_path, executor, options, allow, first
):
    if executor == "dask":
        pytest.importorskip("distributed")
    path = scenario_file(tmp_path, "gate_sched")
    out = tmp_path / "out"
    done = _python(
        tmp_path, modules, "-c", SWEEP_SCRIPT, executor, json.dumps(options), str(out),
        str(path), json.dumps(allow), first,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    _check_rows(json.loads(done.stdout.splitlines()[-1]))


def test_socsim_sweep_refuses_then_runs_with_allow_plugin_in_spawned_workers(modules, tmp_path):
    path = str(scenario_file(tmp_path, "gate_sched"))
    refused = _python(tmp_path, modules, "-m", "simulator.cli", "sweep", "-q", path)
    assert refused.returncode == 1
    assert "plugins[0]: socsim would import module 'gate_sched'" in refused.stdout + (
        refused.stderr
    )
    assert not (tmp_path / "runs").exists()  # refused before any folder or run
    out = tmp_path / "out"
    ran = _python(
        tmp_path, modules, "-m", "simulator.cli", "sweep", "-q", "-o", str(out),
        "--allow-plugin", "gate_sched", path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    with open(out / "sweep.csv", newline="") as handle:
        _check_rows(list(csv.DictReader(handle)))
