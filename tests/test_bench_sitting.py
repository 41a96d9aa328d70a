"""bench/sitting.py writes docs/performance.md and bench/baseline.json from the benches'
outputs: every placeholder of the template resolves, the targets' statuses follow the
figures, and the baseline carries this sitting's values (smoke: the median of three).
The benches themselves are not run here (tests/test_bench_smoke.py does that)."""

from __future__ import annotations

import json

import pytest
from bench_loader import load_bench

sitting = load_bench("sitting")

ENGINE = {
    "ratio_ours_over_bare": 2.4,
    "ratio_ours_over_bare_paired_median": 2.35,
    "ratio_simulate_over_bare": 1.6,
    "ratio_ours_wall_over_heapq_limit": 2.9,
    "ops_per_s": {"bare": 100000.0},
    "ops_per_s_median": {"bare": 99000.0},
}
SECONDS = {"100": 0.01, "1000": 0.1, "10000": 0.9}
OUTPUTS = {
    "engine": ENGINE,
    "engine_1000": {**ENGINE, "ratio_ours_over_bare": 3.0, "ratio_simulate_over_bare": 2.5},
    "dvfs_window": {"bench": "dvfs_window"},
    "loader": {
        "load_pure_over_libyaml": 3.3,
        "yaml_pure_over_libyaml": 4.0,
        "help_over_bare_python": 2.8,
        "seconds": {"this checkout": 0.1},
    },
    "placement": {
        "seconds": {p: SECONDS for p in ("heft", "cpop", "split_point", "min_cut", "peft")}
    },
    "sweep": {"ratios": {"processes / serial": 1.6, "fast processes / fast serial": 2.0}},
    "scale": {
        "trace_bytes_per_row": 55.0,
        "runs": [{"level": "full", "requests": 2000, "run_mib": 130.0}],
    },
    "sweep_resume": {
        "points": 10000, "rows_at_kill": 4000, "resume_s": 30.0, "uninterrupted_s": 50.0
    },
    "fleet": {
        "devices": 1000, "duration_s": 60.0, "rate_hz": 1.0, "requests": 60000,
        "wall_s": 61.0, "cpu_s": 20.0, "target_s": 60.0,
    },
}  # fmt: skip


@pytest.fixture
def perf(tmp_path, monkeypatch):
    out = tmp_path / "perf"
    out.mkdir()
    for name, data in OUTPUTS.items():
        (out / f"{name}.txt").write_text(f"{name} line one\n{name} line two\n{json.dumps(data)}\n")
    smokes = [{**ENGINE, "ratio_ours_over_bare": r} for r in (1.1, 1.3, 1.2)]
    (out / "engine_smoke.json").write_text(json.dumps(smokes))
    monkeypatch.setattr(sitting, "OUT", out)
    return {"when": "2026-12-03 18:00 UTC", "load_min": 1.0, "load_max": 1.5, "commit": "abc1234"}


def test_every_placeholder_resolves_and_statuses_follow_the_figures(perf):
    page = sitting.render(perf)
    assert "{{" not in page and "}}" not in page
    assert "commit `abc1234`, 2026-12-03 18:00 UTC" in page and "1.0–1.5" in page
    # 2.4 against 2.5: 4 % short; simulate 1.6 >= 1.5; sweep 1.6 < 1.7
    assert "| **2.40** best/best, 2.35 median of per-round pairs | not met (4 % short) |" in page
    assert "| `simulate()` ≥ 1.5 × bare | **1.60** | met |" in page
    assert "| **1.60 ×** (fast path 2.00 ×) | not met |" in page
    # the resume: 6,000 pending rows in 30 s = 60 % of 50 s for 60 % of the rows
    assert "the resume ran the\n6,000 pending rows in 30.0 s, 60 % of" in page
    assert "for 60 % of its rows" in page
    assert "scale line one\nscale line two" in page  # an output block, its JSON line left out
    # 61 s for the fleet against its 60 s target
    assert "| **61.0 s** wall (20.0 s CPU) | not met |" in page


def test_the_baseline_takes_this_sittings_values_and_the_smoke_median(perf):
    baseline = sitting.refill_baseline(perf)
    engine = baseline["engine"]["ratio_ours_over_bare"]
    assert engine["value"] == 2.4 and engine["smoke"] == 1.2 and engine["better"] == "higher"
    assert baseline["engine"]["ratio_ours_wall_over_heapq_limit"]["better"] == "lower"
    assert baseline["sweep"]["ratios.processes / serial"]["value"] == 1.6
    assert "smoke" not in baseline["loader"]["load_pure_over_libyaml"]
    assert "2026-12-03 18:00 UTC" in engine["source"]
