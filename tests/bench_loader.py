"""Import a script of ``bench/`` under a private name (``bench/`` is not a package, and
its module names, e.g. ``sweep`` and ``engine``, would shadow the test folders')."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """The module ``bench/<name>.py``, loaded once as ``socsim_bench_<name>``."""
    key = f"socsim_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
