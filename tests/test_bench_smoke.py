"""The benchmark scripts still run against the current library (they are not imported by
anything else, so an API change would otherwise break them unnoticed), and their ratios
are compared with ``bench/baseline.json``: a figure > 10 % worse is PRINTED in the test
output (``bench/compare.py``), never failed on — timings are no assertions on a shared
machine, and smoke runs are small workloads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bench_loader import load_bench

BENCH = Path(__file__).resolve().parents[1] / "bench"
compare = load_bench("compare")


@pytest.mark.parametrize(
    ("script", "args", "expected"),
    [
        (
            "engine.py",
            ["--requests", "4", "--repeat", "1", "--json"],
            "requirement ours >= 0.5 x bare",
        ),
        ("placement.py", ["--sizes", "20", "--repeat", "1", "--json"], "ops"),
        ("dvfs_window.py", ["--decisions", "50", "--json"], "ops"),
        ("loader.py", ["--smoke", "--json"], "ratio pure/libyaml"),
        ("sharing_tables.py", ["--help"], "docs/sharing.md"),
        ("sweep.py", ["--bandwidths", "1", "--rounds", "1"], "speed-up processes / serial"),
        ("memory_series.py", ["--requests", "4", "--repeat", "1"], "logged / plain"),
        ("fleet.py", ["--devices", "5", "--duration", "2", "--json"], "socsim run --trace none"),
    ],
)
def test_bench_script_runs(script, args, expected, capsys):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout
    if "--json" in args:
        record = compare.last_json(done.stdout)
        lines = compare.regressions(Path(script).stem, record, smoke=True)
        with capsys.disabled():  # shown in CI's output whatever pytest's capture setting
            for line in lines:
                print(f"\n[smoke run] {line}", end="")


def test_compare_prints_only_figures_more_than_10_percent_worse():
    baseline = {
        "b": {
            "speed": {"value": 2.0, "better": "higher"},
            "cost": {"value": 1.0, "better": "lower"},
            "nested.ratio": {"value": 1.0},
        }
    }
    record = {"speed": 1.81, "cost": 1.09, "nested": {"ratio": 0.5}}
    lines = compare.regressions("b", record, baseline)
    assert len(lines) == 1 and "nested.ratio = 0.5, 50 % worse" in lines[0]
    record = {"speed": 1.79, "cost": 1.11, "nested": {"ratio": 1.2}}
    assert [
        line.split(":")[1].split("=")[0].strip()
        for line in compare.regressions("b", record, baseline)
    ] == [
        "speed",
        "cost",
    ]
    assert "not in its JSON line" in compare.regressions("b", {"speed": 3}, baseline)[1]
    assert compare.regressions("b", None, baseline) == [
        "bench b: no JSON line to compare with bench/baseline.json"
    ]
    assert compare.regressions("unknown", None, baseline) == []
    baseline["b"]["speed"]["smoke"] = 1.0  # a smoke run is compared with its own figure
    assert (
        compare.regressions(
            "b", {"speed": 0.95, "cost": 1, "nested": {"ratio": 1}}, baseline, smoke=True
        )
        == []
    )
    assert (
        len(
            compare.regressions(
                "b", {"speed": 0.85, "cost": 1, "nested": {"ratio": 1}}, baseline, smoke=True
            )
        )
        == 1
    )


def test_the_baseline_names_benches_with_json_lines_and_directions():
    baseline = compare.load_baseline()
    assert {"engine", "loader"} <= set(baseline)
    for figures in baseline.values():
        for figure in figures.values():
            assert figure["value"] > 0 and figure.get("better", "higher") in ("higher", "lower")
            assert figure["source"]
    assert compare.last_json('text\n{"bench": "x", "r": 1}\nmore text\n') == {"bench": "x", "r": 1}
