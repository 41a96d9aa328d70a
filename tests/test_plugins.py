"""Plug-ins (issue 19 item 5): registries fed from Python and from installed packages'
entry points, accepted by YAML validation, seen by the workers of every sweep executor.

The example package is ``examples/plugin_package`` (docs/plugins.md). It is "installed"
without pip or network: the package and a ``.dist-info`` (its entry points read from the
package's own pyproject.toml) in a folder put on ``PYTHONPATH``, which is how a wheel
lands in site-packages. Entry points are read once per process, so the runs that need
them happen in a fresh interpreter. Installed, the package's entry points also allow its
scenario's ``plugins: [socsim_example_plugin.bursts]`` (a module of the same package);
tests/test_plugins_allowed.py tests the other ways a module is allowed, and refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simulator.errors import ScenarioError
from simulator.registry import PluginError, Registry
from simulator.scheduling import SCHEDULERS
from simulator.spec import parse_scenario

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples" / "plugin_package"
SCENARIO = PACKAGE / "scenario.yaml"


def install(site: Path, name: str, version: str, entry_points: dict, package: Path | None):
    """``package`` and a dist-info declaring ``entry_points`` (group -> name -> value)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, points in entry_points.items():
        lines += [f"[{group}]", *(f"{k} = {v}" for k, v in points.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    if package is not None:
        shutil.copytree(package, site / package.name)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    site = tmp_path_factory.mktemp("site")
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    install(
        site,
        project["name"],
        project["version"],
        project["entry-points"],
        PACKAGE / "socsim_example_plugin",
    )
    return site


# hand-worked (scenario.yaml's comment): a, c on the GPU (2 ms each), b on the CPU (1 ms);
# bursts of two at t = 0 and 2 ms. fcfs: r0 a[0,2] b[2,3] c[4,6]; r1 a[2,4] b[4,5] c[6,8];
# r2 a[8,10] b[10,11] c[12,14]; r3 a[10,12] b[12,13] c[14,16] -> 6, 8, 12, 14 ms.
# lifo: r1 a[0,2]; r3 a[2,4]; r2 a[4,6]; r3 c[6,8]; r2 c[8,10]; r1 c[10,12]; r0 a[12,14]
# b[14,15] c[15,17] -> 17, 12, 8, 6 ms.
EXPECTED = {"fcfs": (0.010, 0.014), "lifo": (0.01075, 0.017)}

SWEEP_SCRIPT = """
import json, sys
from simulator.sweep import run_sweep
executor, options, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
table = run_sweep(sys.argv[4], out, quiet=True, executor=executor, executor_options=options)
print(json.dumps(table[["scheduler", "status", "error", "requests", "latency_mean_s",
                        "latency_max_s"]].astype(str).to_dict("records")))
"""


def _sweep(site: Path, tmp_path: Path, executor: str, options: dict) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    out = tmp_path / f"{executor}-{'-'.join(map(str, options.values()))}"
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_SCRIPT, executor, json.dumps(options), str(out), SCENARIO],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    ("executor", "options"),
    [
        ("processes", {"workers": 1, "start_method": "spawn"}),  # the file's own executor
        ("processes", {"workers": 2, "start_method": "fork"}),
        ("serial", {}),
    ],
)
def test_example_package_runs_from_yaml_in_every_executor(site, tmp_path, executor, options):
    rows = _sweep(site, tmp_path, executor, options)
    assert [row["scheduler"] for row in rows] == ["fcfs", "lifo"]
    for row in rows:
        assert (row["status"], row["requests"]) == ("ok", "4"), row
        mean_s, max_s = EXPECTED[row["scheduler"]]
        assert float(row["latency_mean_s"]) == pytest.approx(mean_s, rel=1e-12)
        assert float(row["latency_max_s"]) == pytest.approx(max_s, rel=1e-12)


def test_example_package_runs_in_dask_workers(site, tmp_path):
    pytest.importorskip("distributed")
    rows = _sweep(site, tmp_path, "dask", {"workers": 1})
    assert [(r["status"], float(r["latency_mean_s"])) for r in rows] == [
        ("ok", pytest.approx(0.010, rel=1e-12)),
        ("ok", pytest.approx(0.01075, rel=1e-12)),
    ]


def test_without_the_package_the_names_are_unknown_with_the_file_and_path(tmp_path):
    # this process has no dist-info for the example: fastest_unit and lifo are unknown,
    # and the module under plugins: is no installed plug-in's, so it is not imported
    with pytest.raises(ScenarioError) as caught:
        from simulator.spec import load_scenario

        load_scenario(SCENARIO)
    found = {p.path: p for p in caught.value.problems}
    assert "socsim would import module 'socsim_example_plugin.bursts'" in (
        found["plugins[0]"].message
    )
    assert "--allow-plugin socsim_example_plugin.bursts" in found["plugins[0]"].message
    # allowed but not importable: the import is tried, and its failure reported
    with pytest.raises(ScenarioError) as caught:
        load_scenario(SCENARIO, allow_plugins=["socsim_example_plugin"])
    found = {p.path: p for p in caught.value.problems}
    assert "plug-in module 'socsim_example_plugin.bursts' failed to import" in (
        found["plugins[0]"].message
    )
    line = SCENARIO.read_text().splitlines().index("plugins: [socsim_example_plugin.bursts]")
    assert (found["plugins[0]"].file, found["plugins[0]"].line) == (str(SCENARIO), line + 1)
    assert "unknown placement policy 'fastest_unit'" in found["placement.policy"].message


@pytest.fixture
def lifo_from_python():
    from simulator.plugins import register_scheduler

    @register_scheduler("lifo_py")
    def lifo_py(rid, position, priority, deadline_at_s, ready_s):
        """Newest request first."""
        return (-rid, position)

    yield lifo_py
    del SCHEDULERS._entries["lifo_py"]  # leave the registry as other tests know it


BASE = {
    "name": "p",
    "nodes": {"phone": {"role": "device", "units": {"cpu": {"kind": "cpu"}}}},
    "models": {"m": {"ops": [{"name": "a", "time_ms": {"cpu": 1}}]}},
    "workload": [
        {
            "app": "x",
            "model": "m",
            "source": "phone",
            "arrival": {"process": "trace", "times_ms": [0, 0]},
        }
    ],
    "placement": {"policy": "single", "unit": "cpu"},
}


def test_a_scheduler_registered_from_python_is_valid_yaml(lifo_from_python):
    scenario = parse_scenario(dict(BASE, scheduler="lifo_py"))
    assert scenario.scheduler == "lifo_py"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(dict(BASE, scheduler="lifo_pyy"))
    (problem,) = caught.value.problems
    assert problem.path == "scheduler"
    assert problem.suggestion == "lifo_py"  # the nearest valid choice includes plug-ins
    assert "'lifo_py'" in problem.message and "'fcfs'" in problem.message


def test_python_registration_refuses_a_taken_name(lifo_from_python):
    from simulator.errors import SocsimError
    from simulator.plugins import register_scheduler

    with pytest.raises(SocsimError, match="unit scheduler 'fcfs' is already registered"):
        register_scheduler("fcfs", lifo_from_python)


def _fresh_registry(site: Path, monkeypatch, group: str, points: dict, files: dict) -> Registry:
    for name, text in files.items():
        (site / name).write_text(textwrap.dedent(text))
    install(site, "broken-plugin", "0.2", {group: points}, None)
    monkeypatch.syspath_prepend(str(site))
    registry = Registry("thing", group)
    registry.add("builtin", lambda: 0)
    return registry


def test_a_plugin_that_fails_to_import_names_its_entry_point(tmp_path, monkeypatch):
    registry = _fresh_registry(
        tmp_path, monkeypatch, "socsim.test_a", {"bad": "no_such_module_xyz:f"}, {}
    )
    with pytest.raises(PluginError) as caught:
        registry.get("builtin")
    text = str(caught.value)
    assert "plug-in entry point 'bad = no_such_module_xyz:f'" in text
    assert "group 'socsim.test_a', package 'broken-plugin 0.2'" in text
    assert "failed to load: ModuleNotFoundError" in text
    with pytest.raises(PluginError):  # reported again, not forgotten
        "builtin" in registry  # noqa: B015


@pytest.mark.parametrize(
    ("points", "module", "message"),
    [
        ({"builtin": "plug_c:f"}, "def f(): pass\n", "a thing 'builtin' is already registered"),
        ({"g": "plug_c"}, "x = 1\n", "importing module 'plug_c' registered no thing 'g'"),
        ({"f": "plug_c:f"}, "def f(): pass\nf.options = 3\n", "must be a simulator.schema"),
    ],
)
def test_bad_plugins_are_reported_naming_the_entry_point(
    tmp_path, monkeypatch, points, module, message
):
    monkeypatch.delitem(sys.modules, "plug_c", raising=False)
    registry = _fresh_registry(
        tmp_path, monkeypatch, "socsim.test_c", points, {"plug_c.py": module}
    )
    with pytest.raises(PluginError, match=message) as caught:
        registry.names()
    assert f"plug-in entry point '{next(iter(points))} = " in str(caught.value)
    monkeypatch.delitem(sys.modules, "plug_c", raising=False)


def test_an_entry_point_function_gets_its_options_and_loads_once(tmp_path, monkeypatch):
    module = """
        from simulator.schema import Field, Number, Record
        CALLS = []
        def f(): return 1
        f.options = Record({"k": Field(Number())}, name="f options")
    """
    monkeypatch.delitem(sys.modules, "plug_d", raising=False)
    registry = _fresh_registry(
        tmp_path, monkeypatch, "socsim.test_d", {"f": "plug_d:f"}, {"plug_d.py": module}
    )
    assert registry.names() == ("builtin", "f")
    assert list(registry.schemas()["f"].fields) == ["k"]
    assert registry.get("f").function() == 1
    assert registry._from_entry_points == {"f"}
    monkeypatch.delitem(sys.modules, "plug_d", raising=False)


def test_a_ready_made_scenario_imports_its_plugins_where_it_runs(tmp_path, monkeypatch):
    """A remote Dask worker gets the scenario made in the parent: run_task imports the
    modules it lists before running it."""
    from simulator.sweep.execute import Task, run_task

    (tmp_path / "plug_e.py").write_text("IMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plug_e", raising=False)
    scenario = parse_scenario(dict(BASE, plugins=["plug_e"]), allow_plugins=["plug_e"])
    assert scenario.plugins == ("plug_e",)
    del sys.modules["plug_e"]  # as in a fresh worker
    # checked where the scenario was made: the worker needs no allow_plugins of its own
    row = run_task(Task(point=0, replicate=0, values={}, seed=0, scenario=scenario))
    assert row["status"] == "ok" and sys.modules["plug_e"].IMPORTED
    monkeypatch.delitem(sys.modules, "plug_e", raising=False)
