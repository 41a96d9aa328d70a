"""The shipped host_cpu preset and its report: loadable, with provenance, fitted on the fit set."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibration.corpus import FIT, HOLDOUT
from calibration.device import NODE, UNIT, load_platform, read_calibration_comments
from calibration.report import REPORT_BEGIN, REPORT_END
from simulator.spec import validate_library

ROOT = Path(__file__).resolve().parents[2]
PRESET = ROOT / "scenarios" / "devices" / "host_cpu.yaml"
PRESET_2T = ROOT / "scenarios" / "devices" / "host_cpu_2t.yaml"
DOCS = ROOT / "docs" / "calibration.md"


@pytest.mark.parametrize(("path", "node"), [(PRESET, NODE), (PRESET_2T, f"{NODE}_2t")])
def test_preset_loads_with_the_scenario_loader(path, node):
    assert validate_library(path) == 1
    unit = load_platform(path, node).unit(f"{node}.{UNIT}")
    assert unit.kind == "cpu" and unit.peak_flops["fp32"] > 0 and unit.dispatch_s > 0
    assert all(0 < eff <= 1 for eff in unit.efficiency.values())
    assert unit.cores == int(read_calibration_comments(path)["threads"])


def test_preset_provenance():
    comments = read_calibration_comments(PRESET)
    for key in (
        "date",
        "host",
        "runtime",
        "threads",
        "ops_fitted",
        "op_mape_pct",
        "model_mape_pct",
        "peak_gflops_measured",
        "stream_gb_s_measured",
    ):
        assert comments.get(key), key
    assert comments["runtime"].startswith("onnxruntime")
    unit = load_platform(PRESET).unit(f"{NODE}.{UNIT}")
    assert unit.cores == int(comments["threads"])
    per_core = float(comments["peak_gflops_measured"]) * 1e9 / unit.cores
    assert unit.peak_flops["fp32"] == pytest.approx(per_core, rel=1e-5)
    fitted = set(comments["fit_models"].split(", "))
    assert fitted == {r.name for r in FIT}, (
        "the shipped preset was fitted on another fit corpus: regenerate it with "
        "`socsim calibrate all` on an idle machine (docs/calibration.md)"
    )
    assert not fitted & {r.name for r in HOLDOUT}


def test_report_covers_every_held_out_model():
    text = DOCS.read_text()
    report = text[text.index(REPORT_BEGIN) : text.index(REPORT_END)]
    for recipe in HOLDOUT:
        assert report.count(f"| {recipe.name} |") == 2  # at 1 and 2 threads
    for recipe in FIT:
        assert recipe.name not in report
    image = report.split("](")[-1].split(")")[0]
    assert (DOCS.parent / image).exists()
