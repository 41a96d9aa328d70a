"""Scorecard pieces: Pareto marking, technique labels, the API and ``socsim score``."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.errors import PlacementError, ScenarioError
from simulator.graph.techniques import apply_techniques
from simulator.placement.base import PlacementSpec
from simulator.score import Combination, describe, pareto_mask, score_rows, score_scenario
from simulator.spec import load_scenario, parse_scenario


def test_pareto_mask_over_five_indicators():
    frame = pd.DataFrame(
        {
            "accuracy_top1": [70.0, 70.0, 69.0, math.nan, 70.0],
            "latency_p50_s": [1.0, 2.0, 0.5, 0.1, 1.0],
            "device_inferences_per_j": [10.0, 10.0, 10.0, 50.0, 10.0],
            "peak_memory_bytes": [100, 100, 100, 10, 100],
            "flexibility": [1.0, 1.0, 1.0, 1.0, 1.0],
        }
    )
    # row 1 is dominated by row 0; rows 0 and 4 are equal (both kept); an unknown
    # accuracy counts as the worst, so row 3 survives only by its other indicators
    assert pareto_mask(frame).tolist() == [True, False, True, True, True]


def test_describe_lists_techniques_in_order():
    techniques = [{"name": "quantize", "dtype": "int8", "accuracy_delta": None}, {"name": "fuse"}]
    assert describe(techniques) == "quantize(dtype=int8) > fuse"
    assert describe([]) == "(none)"


def test_score_rows_api_and_errors():
    scenario = load_scenario("scenarios/score/quantization.yaml")
    combos = {"int8": Combination(techniques=({"name": "quantize", "dtype": "int8"},))}
    frame = score_rows(scenario, combos, {"cpu": PlacementSpec("single", {"unit": "cpu_big"})})
    assert frame[["combination", "placement"]].values.tolist() == [["int8", "cpu"]]
    assert frame.loc[0, "accuracy_top1"] == pytest.approx(69.658)  # 69.758 - 0.1
    assert frame.loc[0, "target_unit"] == "phone.cpu_big"
    with pytest.raises(ScenarioError, match=r"score\.combinations\.x\.model"):
        score_rows(scenario, {"x": Combination(model="nope")}, {})
    with pytest.raises(PlacementError):
        score_rows(
            scenario, {"fp32": Combination()}, {"npu": PlacementSpec("single", {"unit": "npu"})}
        )


def test_socsim_score_writes_table_and_charts(tmp_path, capsys):
    status = main(
        [
            "score",
            "scenarios/score/fallback.yaml",
            "-o",
            str(tmp_path),
            "--format",
            "png",
            "--format",
            "svg",
        ]
    )
    assert status == 0
    table = pd.read_csv(tmp_path / "scorecard.csv")
    assert table["placement"].tolist() == ["cpu_only", "npu_with_fallback"]
    assert (tmp_path / "scorecard.png").stat().st_size > 0
    assert (tmp_path / "scorecard.svg").read_text().startswith("<?xml")
    assert "npu_with_fallback" in capsys.readouterr().out
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # built without pyplot, like every analysis figure


def test_fused_ops_without_fused_kernels_fall_back_and_count_against_flexibility():
    doc = yaml.safe_load(Path("scenarios/score/fallback.yaml").read_text())
    doc["nodes"]["phone"]["units"]["npu"] = {"fused_kernels": False}
    doc["score"]["combinations"] = {"fused": {"techniques": [{"name": "fuse"}]}}
    doc["score"]["placements"] = {"npu": doc["score"]["placements"]["npu_with_fallback"]}
    scenario = parse_scenario(doc, base_dir=Path("scenarios/score"))
    row = score_scenario(scenario).iloc[0]
    graph, _ = apply_techniques(scenario.models["encoder"], [{"name": "fuse"}])
    fused = sum(bool(op.fused) for op in graph)
    softmax = sum(op.kind == "softmax" for op in graph)
    assert fused > 0 and row.custom_ops == fused
    assert row.unsupported_ops == fused + softmax  # each falls back to the CPU
    assert row.flexibility == pytest.approx((len(graph) - fused - softmax) / len(graph))
