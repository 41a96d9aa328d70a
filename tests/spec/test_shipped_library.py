"""Issue 21 item 1: presets by name from any folder, `socsim presets`, one version.

The wheel itself (built, installed in a fresh venv, run from an empty folder) is
tests/test_wheel.py; here the same lookups run from the source tree.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest
import yaml

import simulator
from simulator import load_scenario, simulate
from simulator.cli import main
from simulator.errors import ScenarioError, SocsimError
from simulator.exitcodes import EXIT_INVALID
from simulator.spec.library import preset_text, resolve_include, shipped_presets
from simulator.spec.paths import PathNotAllowedError, allowed_dirs, shipped_library_dir

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "scenarios"

OUTSIDE = """\
name: outside
seed: 1
include: [{includes}]
nodes:
  phone: {{preset: midrange_phone}}
  edge: {{preset: edge_gpu_server}}
links:
  wlan: {{preset: wifi, ends: [phone, edge]}}
models:
  net: {{zoo: mobilenet_v2, dtype: fp32}}
workload:
  - app: cam
    model: net
    source: phone
    arrival: {{process: periodic, period_ms: 200}}
    count: 2
placement: {{policy: offload, node: edge}}
"""


def _defined_presets() -> dict[str, tuple[str, str]]:
    """name -> (section, file relative to the library), read with plain PyYAML."""
    found = {}
    for folder in ("devices", "networks"):
        for path in sorted((LIBRARY / folder).glob("*.yaml")):
            presets = (yaml.safe_load(path.read_text()) or {}).get("presets") or {}
            for section in ("nodes", "links"):
                for name in presets.get(section) or {}:
                    found[name] = (section, f"{folder}/{path.name}")
    return found


def test_the_index_holds_every_preset_of_the_library():
    entries = shipped_presets()
    defined = _defined_presets()
    assert {n: (e.section, e.relative) for n, e in entries.items()} == defined
    assert {"flagship_phone", "jetson_agx_orin", "pixel3", "wifi", "lte"} <= set(entries)
    assert shipped_library_dir() == LIBRARY


def test_a_scenario_outside_the_repository_includes_presets_by_name(tmp_path):
    by_name = tmp_path / "by_name.yaml"
    by_name.write_text(
        OUTSIDE.format(includes="preset:midrange_phone, preset:edge_gpu_server, preset:wifi")
    )
    # the same scenario naming the library's files by absolute path
    by_path = tmp_path / "by_path.yaml"
    files = ("devices/midrange_phone.yaml", "devices/edge_gpu_server.yaml", "networks/wifi.yaml")
    by_path.write_text(OUTSIDE.format(includes=", ".join(str(LIBRARY / f) for f in files)))
    first = simulate(load_scenario(by_name)).summary
    second = simulate(load_scenario(by_path)).summary
    for key in ("decision", "latency_mean_s", "device_energy_j", "energy_j"):
        assert first[key] == second[key], key
    # and from the command line, from that folder
    assert main(["run", str(by_name), "-o", str(tmp_path / "run"), "--trace", "none"]) == 0


def test_an_unknown_preset_name_is_a_problem_at_its_include(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(OUTSIDE.format(includes="preset:midrange_phone, preset:wfi"))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    text = str(caught.value)
    assert f"{path}:3: include[1]: 'preset:wfi': no shipped preset 'wfi'" in text
    assert "(did you mean 'wifi'?)" in text and "socsim presets" in text
    assert main(["validate", str(path)]) == EXIT_INVALID


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "networks/wifi.yaml"])
def test_a_preset_include_names_presets_only(name, tmp_path):
    """``preset:`` reaches nothing but the library's preset files (docs/security.md)."""
    with pytest.raises(SocsimError, match="no shipped preset"):
        resolve_include(f"preset:{name}", tmp_path, allowed_dirs(tmp_path))


def test_a_preset_include_keeps_the_allowed_directories(tmp_path):
    # a caller that allows only the scenario's folder: the library file is refused too
    with pytest.raises(PathNotAllowedError):
        resolve_include("preset:wifi", tmp_path, (tmp_path.resolve(),))
    assert resolve_include("preset:wifi", tmp_path, allowed_dirs(tmp_path)) == (
        LIBRARY / "networks/wifi.yaml"
    )


def test_presets_command_lists_and_prints(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"library {LIBRARY}\nnodes\n")
    for name, (_, relative) in _defined_presets().items():
        assert f"  {name}" in out and relative in out
    assert f"{len(_defined_presets())} presets" in out
    assert main(["presets", "wifi"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# preset wifi (links) in {LIBRARY / 'networks/wifi.yaml'}:")
    body = yaml.safe_load(text)  # the comment lines aside, the preset as written
    file = yaml.safe_load((LIBRARY / "networks/wifi.yaml").read_text())
    assert body == {"wifi": file["presets"]["links"]["wifi"]}
    assert main(["presets", "pixel33"]) == EXIT_INVALID
    assert "no shipped preset 'pixel33' (did you mean 'pixel3'?)" in capsys.readouterr().err


def test_every_preset_prints_as_its_own_mapping():
    for name, entry in shipped_presets().items():
        file = yaml.safe_load(entry.path.read_text())
        assert yaml.safe_load(preset_text(entry)) == {name: file["presets"][entry.section][name]}, (
            name
        )


def _setup_cfg_version() -> str:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser["metadata"]["version"]


def test_one_version_everywhere(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    expected = installed_version("socsim")
    assert capsys.readouterr().out == f"socsim {expected}\n"
    assert simulator.__version__ == expected == _setup_cfg_version()
    assert "__version__ =" not in (ROOT / "simulator/__init__.py").read_text()


def test_python_dash_m_simulator():
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"socsim {_setup_cfg_version()}\n"
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "presets", "wifi"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("# preset wifi (links)")
