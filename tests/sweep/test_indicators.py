"""Sweep rows carry the five indicators; techniques are sweepable; old folders are refused
clearly (issue 21 item 6)."""

from __future__ import annotations

import copy
import json
import math

import pytest
import yaml
from conftest import phone_cloud_document

from simulator.errors import SocsimError
from simulator.sweep import load_sweep_table, run_sweep

INT8 = [{"name": "quantize", "dtype": "int8", "accuracy_delta": -1.5}]


def _techniques_sweep(folder, fast=False):
    """Phone cpu (fp32) + an int8-only npu; a conv (1 GFLOP, 250,000 -> 1,000 elements)
    then a softmax (1,000 -> 1,000); placement: the npu, falling back to the cpu; the
    model's techniques swept: none, then int8 quantization (top-1 70 % - 1.5)."""
    document = copy.deepcopy(phone_cloud_document())
    document["nodes"]["phone"]["units"]["npu"] = {
        "kind": "npu",
        "peak_gflops": {"int8": 10},
        "idle_w": 0.1,
        "active_w": 1.0,
    }
    model = document["models"]["net"]
    model["accuracy_top1"] = 70.0
    model["ops"].append(
        {"name": "head", "kind": "softmax", "flops": 1e3, "input_elems": 1000, "output_elems": 1000}
    )
    document["placement"] = {"policy": "fallback", "preferred": "npu", "fallback": "cpu"}
    document["sweep"] = {
        "executor": {"name": "serial"},
        "fast": fast,
        "parameters": {"models.net.techniques": [[], INT8]},
    }
    path = folder / "techniques.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_sweep_rows_carry_accuracy_memory_and_flexibility(tmp_path):
    run_sweep(_techniques_sweep(tmp_path), tmp_path / "out")
    table = load_sweep_table(tmp_path / "out")
    names = list(table.columns)
    at = names.index("accuracy_top1")  # then the load figures (test_load_columns.py)
    assert names[at : at + 3] == ["accuracy_top1", "peak_memory_bytes", "flexibility"]
    fp32, int8 = table.iloc[0], table.iloc[1]
    # fp32: the int8-only npu runs neither op, both fall back to the cpu
    assert fp32.flexibility == 0.0
    assert fp32.accuracy_top1 == 70.0
    # the conv's input and output live on the cpu at once: (250,000 + 1,000) x 4 bytes
    assert fp32.peak_memory_bytes == 1_004_000
    # int8: the npu runs both ops; 70 - 1.5; the same tensors at 1 byte per element
    assert int8.flexibility == 1.0
    assert int8.accuracy_top1 == pytest.approx(68.5)
    assert int8.peak_memory_bytes == 251_000
    # latency and energy stay beside them: the npu (10 GFLOP/s) vs the cpu (1 GFLOP/s)
    assert int8.latency_p50_s < fp32.latency_p50_s


def test_fast_sweep_rows_have_accuracy_and_flexibility_but_no_memory_peak(tmp_path):
    run_sweep(_techniques_sweep(tmp_path, fast=True), tmp_path / "out")
    table = load_sweep_table(tmp_path / "out")
    assert table["flexibility"].tolist() == [0.0, 1.0]
    assert table["accuracy_top1"].tolist() == pytest.approx([70.0, 68.5])
    assert table["peak_memory_bytes"].isna().all()  # no engine ran


def test_error_rows_have_nan_indicators(tmp_path):
    path = _techniques_sweep(tmp_path)
    document = yaml.safe_load(path.read_text())
    # fp32 on the npu alone cannot run: an error row, the other point goes on
    document["placement"] = {"policy": "single", "unit": "npu"}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    run_sweep(path, tmp_path / "out")
    table = load_sweep_table(tmp_path / "out")
    assert table["status"].tolist() == ["error", "ok"]
    assert all(math.isnan(table.iloc[0][k]) for k in ("accuracy_top1", "flexibility"))
    assert table.iloc[1].flexibility == 1.0


def test_a_folder_written_before_the_indicators_is_refused_clearly(tmp_path):
    path = _techniques_sweep(tmp_path)
    run_sweep(path, tmp_path / "out")
    meta_path = tmp_path / "out" / "sweep.json"
    meta = json.loads(meta_path.read_text())
    meta["fingerprint_parts"]["version"] = 1  # as written before the indicator columns
    meta["fingerprint"] = "0123456789abcdef"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SocsimError, match="accuracy_top1, peak_memory_bytes and flexibility"):
        run_sweep(path, tmp_path / "out")
    run_sweep(path, tmp_path / "out", restart=True)  # the way on the message names
    assert len(load_sweep_table(tmp_path / "out")) == 2


def test_pareto_plot_takes_any_two_indicators_each_in_its_sense():
    import pandas as pd

    from analysis.sweep_plots import pareto_plot

    table = pd.DataFrame(
        {
            "point": [0, 1, 2, 3],
            "status": "ok",
            "decision": "device",
            "accuracy_top1": [70.0, 68.5, 69.0, 65.0],
            "peak_memory_bytes": [1_004_000, 251_000, 500_000, 600_000],
        }
    )
    # accuracy higher is better, memory lower: point 3 (65 %, 600 kB) is dominated by
    # point 1 (68.5 %, 251 kB); the other three each win on one axis
    figure = pareto_plot(table, x="accuracy", y="memory")
    axes = figure.axes[0]
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert "Pareto front (3)" in legend
    assert axes.get_title().startswith("accuracy–memory trade-off over 4 points")
    assert axes.get_xlabel().startswith("accuracy")
    # named by column, axes swapped: the same senses, the same front
    flipped = pareto_plot(table, x="peak_memory_bytes", y="accuracy_top1")
    assert "Pareto front (3)" in [t.get_text() for t in flipped.axes[0].get_legend().get_texts()]


def test_socsim_plot_pareto_with_indicator_flags(tmp_path):
    from simulator.cli import main

    run_sweep(_techniques_sweep(tmp_path), tmp_path / "out")
    out = tmp_path / "p.png"
    argv = ["plot", "pareto", str(tmp_path / "out"), "--x", "accuracy", "--y", "flexibility"]
    assert main([*argv, "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    status = main(["plot", "pareto", str(tmp_path / "out"), "--x", "accuracyy", "-o", str(out)])
    assert status != 0  # a column that does not exist: the message lists the columns
