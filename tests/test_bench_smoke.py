"""The benchmark scripts still run against the current library (they are not imported by
anything else, so an API change would otherwise break them unnoticed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        ("engine.py", ["--requests", "4", "--repeat", "1"], "requirement ours >= 0.5 x bare"),
        ("placement.py", ["--sizes", "20", "--repeat", "1"], "ops"),
        ("dvfs_window.py", ["--decisions", "50"], "ops"),
        ("sharing_tables.py", ["--help"], "docs/sharing.md"),
        ("sweep.py", ["--bandwidths", "1", "--rounds", "1"], "speed-up processes / serial"),
    ],
)
def test_bench_script_runs(script, args, expected):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout
