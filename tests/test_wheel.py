"""Issue 21 item 1, its CI requirement: a non-editable install runs a scenario written
outside the repository.

A wheel is built from a copy of the source (``pip wheel --no-deps
--no-build-isolation``), installed into a fresh venv that sees this interpreter's
packages (``--system-site-packages``: numpy, SimPy... are not downloaded again), and
from an empty folder the venv's ``socsim`` prints its version, lists the presets from
inside the installed package, and runs a scenario that includes presets by name. About
7 s on the CI machine: not marked slow, so CI runs it.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what a build reads: the declarations and the packages with their library
SOURCE = ("setup.cfg", "setup.py", "pyproject.toml", "README.md", "MANIFEST.in")
PACKAGES = ("simulator", "analysis", "calibration", "scenarios")

SCENARIO = """\
name: outside
seed: 1
include: [preset:midrange_phone, preset:edge_gpu_server, preset:wifi]
nodes:
  phone: {preset: midrange_phone}
  edge: {preset: edge_gpu_server}
links:
  wlan: {preset: wifi, ends: [phone, edge]}
models:
  net: {zoo: mobilenet_v2, dtype: fp32}
workload:
  - {app: cam, model: net, source: phone, arrival: {process: periodic, period_ms: 200}, count: 1}
placement: {policy: offload, node: edge}
"""


def _run(argv: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_a_wheel_in_a_fresh_venv_runs_a_scenario_from_an_empty_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    source = tmp_path / "source"  # a copy: the build leaves build/ and *.egg-info behind
    source.mkdir()
    for name in SOURCE:
        shutil.copy2(ROOT / name, source / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    _run([*pip_wheel, "--no-index", "-w", dist, source], tmp_path, env)
    (wheel,) = dist.glob("socsim-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp_path, env)
    python, socsim = venv / "bin" / "python", venv / "bin" / "socsim"
    # --force-reinstall: this interpreter's own (editable) socsim is visible to the venv
    pip_install = [python, "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall"]
    _run([*pip_install, wheel], tmp_path, env)

    empty = tmp_path / "empty"
    empty.mkdir()
    found = _run([python, "-c", "import simulator; print(simulator.__file__)"], empty, env)
    package = Path(found.stdout.strip()).parent
    assert package.is_relative_to(venv), package  # the installed copy, not the repository
    assert (package / "py.typed").is_file()  # PEP 561: type checkers read the hints

    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    expected = f"socsim {parser['metadata']['version']}\n"
    assert _run([socsim, "--version"], empty, env).stdout == expected
    assert _run([python, "-m", "simulator", "--version"], empty, env).stdout == expected

    listed = _run([socsim, "presets"], empty, env).stdout
    assert listed.startswith(f"library {package / 'scenarios'}\n")
    for name in ("flagship_phone", "midrange_phone", "edge_gpu_server", "wifi", "lte"):
        assert f"  {name} " in listed
    assert _run([socsim, "presets", "wifi"], empty, env).stdout.startswith("# preset wifi")

    (empty / "study.yaml").write_text(SCENARIO)
    out = _run([socsim, "run", "study.yaml", "-o", "out", "--trace", "none"], empty, env)
    assert "decision                       edge" in out.stdout
    assert "completed                      1 of 1" in out.stdout
    assert (empty / "out" / "summary.json").is_file()
    # the editor schema from the installed package accepts the scenario as written
    _run([socsim, "schema", "-o", "scenario.schema.json"], empty, env)
    check = (
        "import json, jsonschema, yaml; jsonschema.validate("
        "yaml.safe_load(open('study.yaml')), json.load(open('scenario.schema.json')))"
    )
    _run([python, "-c", check], empty, env)
    # a shipped example, from inside the installed package (relative includes, ONNX file)
    example = package / "scenarios" / "examples" / "onnx_model_phone.yaml"
    _run([socsim, "validate", example], empty, env)
    # the shipped TFLite model too, importable from the installed package
    tflite = package / "scenarios" / "models" / "tiny_mobilenet_int8.tflite"
    imported = (
        "import sys; from simulator.graph import load_tflite; print(len(load_tflite(sys.argv[1])))"
    )
    assert _run([python, "-c", imported, tflite], empty, env).stdout == "13\n"
