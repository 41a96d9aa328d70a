"""What ``socsim --help`` and ``socsim validate`` import (issue 17, item 6).

The start-up time itself is measured in ``bench/`` and docs/performance.md; here the
modules imported are checked, which is deterministic: each check runs in a fresh
interpreter and reads ``sys.modules``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Packages that cost tenths of a second each to import and that no help text needs.
HEAVY = ("pandas", "numpy", "simpy", "networkx", "matplotlib", "onnx", "onnxruntime", "scipy")
#: The packages whose public names are imported on first use (simulator.lazy).
LAZY_PACKAGES = (
    "simulator",
    "simulator.spec",
    "simulator.output",
    "simulator.score",
    "simulator.sweep",
    "analysis",
)


def _heavy_imported_after(code: str) -> list[str]:
    """The HEAVY packages imported once ``code`` ran in a fresh interpreter."""
    probe = (
        f"import sys, json\n{code}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_help_of_every_subcommand_imports_no_heavy_package():
    code = (
        "from simulator.cli import build_parser\n"
        "parser = build_parser()\n"
        "parser.format_help()\n"
        "sub = next(a for a in parser._actions if a.dest == 'command')\n"
        "assert len(sub.choices) >= 9, sorted(sub.choices)\n"
        "for command in sub.choices.values():\n"
        "    command.format_help()\n"
    )
    assert _heavy_imported_after(code) == []


def test_help_loads_no_plugins():
    """Entry points are read on a registry's first lookup, never to print help."""
    code = (
        "import gc\n"
        "from simulator.cli import build_parser\n"
        "parser = build_parser()\n"
        "sub = next(a for a in parser._actions if a.dest == 'command')\n"
        "for command in sub.choices.values():\n"
        "    command.format_help()\n"
        "from simulator.registry import Registry\n"
        "loaded = [r.family for r in gc.get_objects()\n"
        "          if isinstance(r, Registry) and r.group and r._plugins_loaded]\n"
        "assert loaded == [], loaded\n"
    )
    assert _heavy_imported_after(code) == []


def test_validate_imports_neither_pandas_nor_the_engine():
    code = (
        "from simulator.cli import main\n"
        "assert main(['validate', 'scenarios/examples/alexnet_phone_cloud.yaml']) == 0\n"
    )
    heavy = _heavy_imported_after(code)
    # the model graph is networkx and numpy; the tables and SimPy belong to `run`
    assert not {"pandas", "simpy", "matplotlib", "onnx", "scipy"} & set(heavy), heavy


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_lazy_name_is_its_defining_modules_and_listed_by_dir(name):
    package = importlib.import_module(name)
    exports = package._EXPORTS
    assert package.__all__ == sorted(exports)
    for public, module in exports.items():
        assert getattr(package, public) is getattr(importlib.import_module(module), public)
        assert public in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        package.not_a_name  # noqa: B018


def test_from_import_of_a_lazy_name_works_in_a_fresh_interpreter():
    code = (
        "import simulator\n"
        "assert 'simulate' in dir(simulator) and 'simulate' not in vars(simulator)\n"
        "from simulator import ScenarioError, load_scenario, simulate\n"
        "assert simulator.simulate is simulate and 'simulate' in vars(simulator)\n"
    )
    assert "simpy" in _heavy_imported_after(code)
