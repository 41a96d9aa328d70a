"""The fit recovers known parameters from synthetic measurements made with socsim's own cost."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.fit import (
    MIN_SCALE_MODELS,
    SCALE_MIN_THREADS,
    FitResult,
    HostRates,
    fit,
    fit_kernels,
    fit_overhead,
    make_unit,
    predict,
    row_op,
    split_overhead,
    without_profiler,
)
from calibration.table import is_sweep, make_table
from simulator.errors import SocsimError

RATES = HostRates({"fp32": 100e9}, 40e9, threads=1)
TRUE_EFF = {"conv": 0.6, "dwconv": 0.08, "matmul": 0.85, "fc": 0.3, "default": 0.5}
TRUE_BW_BPS = 0.7 * RATES.bandwidth_bps
TRUE_DISPATCH_S = 4e-6


def synthetic_rows(seed: int, noise: float = 0.03, outliers: int = 4) -> pd.DataFrame:
    """Ops spanning compute- and memory-bound and tiny (dispatch-bound) sizes."""
    rng = np.random.default_rng(seed)
    rows = []
    kinds = ["conv", "dwconv", "matmul", "fc", "elementwise", "reshape", "activation"]
    for i in range(240):
        kind = kinds[i % len(kinds)]
        scale = 10 ** rng.uniform(3, 8)  # 1e3 .. 1e8 FLOPs
        intensity = 10 ** rng.uniform(-1.5, 2.0)  # FLOP per byte
        flops = 0.0 if kind in ("elementwise", "reshape") else scale
        nbytes = scale / intensity
        if kind == "activation":  # 1 FLOP per 100 bytes: always memory-bound
            flops, nbytes = scale / 100, scale
        rows.append(
            {
                "level": "op",
                "model": f"m{i % 7}",
                "node": f"n{i}",
                "kind": kind,
                "op_type": "",
                "dtype": "fp32",
                "shapes": "",
                "flops": flops,
                "bytes": nbytes,
                "median_s": 1.0,
                "iqr_s": 0.0,
                "runs": 5,
                "threads": 1,
            }
        )
    frame = make_table(rows)
    unit = make_unit("cpu", RATES, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    times = predict(ops, unit) * np.exp(rng.normal(0, noise, len(ops)))
    bad = rng.choice(len(ops), outliers, replace=False)
    times[bad] *= 3.0  # preempted runs
    frame["median_s"] = times
    return frame


@pytest.mark.parametrize("seed", [1, 2])
def test_recovers_known_parameters(seed):
    eff, bandwidth, dispatch = fit_kernels(synthetic_rows(seed), RATES)
    for kind in ("conv", "dwconv", "matmul", "fc"):
        assert eff[kind] == pytest.approx(TRUE_EFF[kind], rel=0.05)
    assert bandwidth == pytest.approx(TRUE_BW_BPS, rel=0.05)
    assert dispatch == pytest.approx(TRUE_DISPATCH_S, rel=0.15)
    assert "elementwise" not in eff  # no FLOPs: no efficiency to fit
    assert "activation" not in eff  # never compute-bound: its efficiency is not identified
    geomean = np.exp(np.mean(np.log([eff[k] for k in ("conv", "dwconv", "matmul", "fc")])))
    assert eff["default"] == pytest.approx(geomean, rel=1e-12)


def test_exact_data_fits_exactly():
    eff, bandwidth, dispatch = fit_kernels(synthetic_rows(3, noise=0.0, outliers=0), RATES)
    assert eff["matmul"] == pytest.approx(0.85, rel=1e-4)
    assert bandwidth == pytest.approx(TRUE_BW_BPS, rel=1e-4)
    assert dispatch == pytest.approx(TRUE_DISPATCH_S, rel=1e-3)


def test_overhead_stage_recovers_per_op_gap():
    """Wall = sum of kernels + 7 µs per op: stage 2 finds the 7 µs, fit-set error ~0."""
    frame = synthetic_rows(4, noise=0.0, outliers=0)
    unit = make_unit("cpu", RATES, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    frame["median_s"] = predict(ops, unit)
    walls = []
    for _model, group in frame.groupby("model"):
        walls.append(
            {
                **group.iloc[0].to_dict(),
                "level": "model",
                "node": "",
                "kind": "",
                "median_s": group["median_s"].sum() + 7e-6 * len(group),
            }
        )
    result = fit(pd.concat([frame, make_table(walls)], ignore_index=True), RATES)
    assert result.overhead_s == pytest.approx(7e-6, rel=1e-3)
    assert result.dispatch_s == pytest.approx(TRUE_DISPATCH_S + 7e-6, rel=1e-3)
    assert result.model_stats["mape"] < 0.01
    assert result.model_stats["within_10"] == 1.0


def test_end_to_end_runs_faster_than_their_kernel_sums_give_the_profilers_cost():
    """Profiled kernels carry 1.5 µs each that the end-to-end runs do not pay (walls =
    sum - 1.5 µs x ops): stage 2's constant is -1.5 µs, i.e. profiler_s = 1.5 µs and no
    overhead, and stage 1 then fits the kernels without it: dispatch 4 - 1.5 = 2.5 µs,
    the efficiencies and bandwidth unchanged, the walls matched."""
    frame = synthetic_rows(4, noise=0.0, outliers=0)
    unit = make_unit("cpu", RATES, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    frame["median_s"] = predict(ops, unit)
    assert frame["median_s"].min() > 2 * 1.5e-6  # no kernel under the floor
    walls = [
        {
            **group.iloc[0].to_dict(),
            "level": "model",
            "node": "",
            "kind": "",
            "median_s": group["median_s"].sum() - 1.5e-6 * len(group),
        }
        for _model, group in frame.groupby("model")
    ]
    result = fit(pd.concat([frame, make_table(walls)], ignore_index=True), RATES)
    assert (result.overhead_s, result.profiler_s) == (0.0, pytest.approx(1.5e-6, rel=1e-3))
    assert result.kernel_dispatch_s == pytest.approx(TRUE_DISPATCH_S - 1.5e-6, rel=1e-3)
    assert result.bandwidth_bps == pytest.approx(TRUE_BW_BPS, rel=1e-3)
    assert result.efficiency["conv"] == pytest.approx(TRUE_EFF["conv"], rel=1e-3)
    assert result.model_stats["mape"] < 0.01


def test_stage_two_is_fitted_on_the_networks_not_the_sweeps():
    """Networks m0-m3 end 1.5 µs per op under their kernel sums, sweeps m4-m6 (renamed
    sweep_*) 5 µs over: the constant is the networks' (-1.5 µs: profiler_s 1.5 µs), not
    a compromise; a table of sweeps alone fits theirs (+5 µs of overhead)."""
    frame = synthetic_rows(4, noise=0.0, outliers=0)
    frame["model"] = frame["model"].replace({f"m{i}": f"sweep_x_{i}" for i in (4, 5, 6)})
    unit = make_unit("cpu", RATES, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    frame["median_s"] = predict(ops, unit)
    per_op = {True: 5e-6, False: -1.5e-6}
    walls = [
        {
            **group.iloc[0].to_dict(),
            "level": "model",
            "node": "",
            "kind": "",
            "median_s": group["median_s"].sum() + per_op[is_sweep(m)] * len(group),
        }
        for m, group in frame.groupby("model")
    ]
    table = pd.concat([frame, make_table(walls)], ignore_index=True)
    result = fit(table, RATES)
    assert (result.overhead_s, result.profiler_s) == (0.0, pytest.approx(1.5e-6, rel=1e-3))
    sweeps_only = table[table["model"].map(is_sweep)]
    assert fit(sweeps_only, RATES).overhead_s == pytest.approx(5e-6, rel=1e-3)


def test_runtime_scale_by_hand():
    """Six networks of 10 ops, kernel sums 1, 2, ..., 6 ms; walls = 1.05 x (sum - 10 x
    2 µs): stage 2 finds scale 1.05 and a profiler's cost of 2 µs (constant -2 µs). The
    kernel times an unprofiled run takes: 1.05 x (t - 2 µs), so a 100 µs kernel is
    102.9 µs and a 3 µs one 1.05 x 1.5 = 1.575 µs (half kept: under twice the cost).
    With four networks (fewer than MIN_SCALE_MODELS) the scale stays 1."""
    sums = {f"n{i}": i * 1e-3 for i in range(1, 7)}
    counts = dict.fromkeys(sums, 10)
    walls = pd.DataFrame(
        {"model": list(sums), "median_s": [1.05 * (v - 10 * 2e-6) for v in sums.values()]}
    )
    scale, constant = fit_overhead(walls, sums, counts, 3e-6)
    assert scale == pytest.approx(1.05, rel=1e-6)
    assert constant == pytest.approx(-2e-6, rel=1e-6)
    assert split_overhead(constant, scale) == (0.0, pytest.approx(2e-6, rel=1e-6))
    assert split_overhead(4e-6, 1.05) == (pytest.approx(4.2e-6), 0.0)
    rows = pd.DataFrame({"level": ["op", "op", "model"], "median_s": [100e-6, 3e-6, 1.0]})
    out = without_profiler(rows, 2e-6, 1.05)["median_s"].tolist()
    assert out == pytest.approx([102.9e-6, 1.575e-6, 1.0])
    few = walls.iloc[:4]
    assert fit_overhead(few, sums, counts, 3e-6)[0] == 1.0
    assert MIN_SCALE_MODELS == 5


def test_fit_takes_the_runtime_scale_at_two_threads_only():
    """Seven models whose walls are 1.05 x (kernel sum - 1.5 µs x ops): at two threads
    ``fit`` finds scale 1.05, the profiler's cost 1.5 µs, and fits the kernels x 1.05
    (dispatch 1.05 x (4 - 1.5) = 2.625 µs, bandwidth / 1.05, the walls matched); at one
    thread the scale stays 1 (SCALE_MIN_THREADS)."""
    rates = HostRates({"fp32": 100e9}, 40e9, threads=2)
    frame = synthetic_rows(4, noise=0.0, outliers=0)
    unit = make_unit("cpu", rates, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    frame["median_s"] = predict(ops, unit)
    assert frame["median_s"].min() > 2 * 1.5e-6 and frame["model"].nunique() >= 5
    walls = [
        {
            **group.iloc[0].to_dict(),
            "level": "model",
            "node": "",
            "kind": "",
            "median_s": 1.05 * (group["median_s"].sum() - 1.5e-6 * len(group)),
        }
        for _model, group in frame.groupby("model")
    ]
    table = pd.concat([frame, make_table(walls)], ignore_index=True)
    result = fit(table, rates)
    assert result.runtime_scale == pytest.approx(1.05, rel=1e-4)
    assert (result.overhead_s, result.profiler_s) == (0.0, pytest.approx(1.5e-6, rel=1e-3))
    assert result.kernel_dispatch_s == pytest.approx(1.05 * (TRUE_DISPATCH_S - 1.5e-6), rel=1e-3)
    assert result.bandwidth_bps == pytest.approx(TRUE_BW_BPS / 1.05, rel=1e-3)
    assert result.model_stats["mape"] < 0.01
    assert SCALE_MIN_THREADS == 2
    assert fit(table, RATES).runtime_scale == 1.0


def test_the_profilers_cost_is_bounded_by_the_fastest_kernel_and_floored():
    """Walls of zero time would want a constant of -(sum / ops); it stops at the fastest
    kernel (2 µs). Taking 2 µs off keeps half of a 3 µs kernel (1.5, not 1) and of a
    2 µs one (1, not 0); a 10 µs one becomes 8; model rows are untouched."""
    rows = pd.DataFrame(
        {"level": ["op", "op", "op", "model"], "model": ["m"] * 4,
         "median_s": [2e-6, 3e-6, 10e-6, 1e-9]}
    )  # fmt: skip
    ops = rows[rows["level"] == "op"]
    scale, constant = fit_overhead(
        rows[rows["level"] == "model"], {"m": ops["median_s"].sum()}, {"m": 3}, 2e-6
    )
    assert (scale, constant) == (1.0, pytest.approx(-2e-6))  # one model: no scale
    assert split_overhead(constant) == (0.0, pytest.approx(2e-6))
    assert split_overhead(3e-6) == (3e-6, 0.0)
    out = without_profiler(rows, 2e-6)
    assert out["median_s"].tolist() == pytest.approx([1e-6, 1.5e-6, 8e-6, 1e-9])
    assert without_profiler(rows, 0.0) is rows
    with pytest.raises(SocsimError, match="not both > 0"):
        FitResult({"default": 0.5}, 1e9, 1e-6, 1e-6, RATES, profiler_s=1e-6)


def test_recovers_with_threads_and_parallel_fractions():
    """4 threads, ops 90 % parallel: S(4) = 1 / (0.1 + 0.9 / 4) = 3.077 is socsim's, not eff's."""
    rates = HostRates({"fp32": 400e9}, 40e9, threads=4)
    frame = synthetic_rows(5, noise=0.0, outliers=0)
    frame["parallel_fraction"] = 0.9
    unit = make_unit("cpu", rates, TRUE_EFF, TRUE_BW_BPS, TRUE_DISPATCH_S)
    ops = [row_op(r, i) for i, r in enumerate(frame.to_dict("records"))]
    assert ops[0].parallel_fraction == 0.9
    frame["median_s"] = predict(ops, unit)
    eff, _, _ = fit_kernels(frame, rates)
    assert eff["matmul"] == pytest.approx(0.85, rel=1e-4)
    assert eff["dwconv"] == pytest.approx(0.08, rel=1e-4)


def test_validate_compares_kernels_as_the_profiler_saw_them(tmp_path):
    """A preset with runtime scale 1.05, the profiler's cost 2 µs, dispatch 1 µs, 1 GB/s:
    an activation moving 1 MB takes 1 + 1000 = 1001 µs in an unprofiled run, so the
    profiled kernel it predicts is 1001 / 1.05 + 2 = 955.33 µs; measured 955.33 µs is
    0 % off."""
    from calibration.device import write_device
    from calibration.table import Provenance
    from calibration.validate import kernel_table
    from simulator.graph.model import ModelGraph, Op

    result = FitResult({"default": 0.5}, 1e9, 1e-6, 0.0, RATES, profiler_s=2e-6, runtime_scale=1.05)
    device = tmp_path / "host_cpu.yaml"
    write_device(device, result, Provenance("2026-12-07", "test host", "onnxruntime 1.0", 1))
    op = Op("relu", "activation", input_elems=125_000, output_elems=125_000)
    assert op.bytes_moved == 1_000_000
    graph = ModelGraph("m", [op], [])
    expected_s = (1e-6 + 1e-3) / 1.05 + 2e-6
    measured = pd.DataFrame(
        [{"level": "op", "model": "m", "node": "relu", "kind": "activation",
          "op_type": "Relu", "median_s": expected_s}]
    )  # fmt: skip
    rows = kernel_table(measured, device, {"m": graph})
    assert rows["predicted_s"].iloc[0] == pytest.approx(expected_s, rel=1e-9)
    assert rows["error_pct"].iloc[0] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_a_hand_edited_runtime_scale_is_a_clear_error(tmp_path, value):
    """``validate`` reads the preset's ``# calibration.runtime_scale`` line: a value that
    is not a positive finite number is an error naming the file and the line."""
    from calibration.device import calibration_number, read_calibration_comments, write_device
    from calibration.table import Provenance

    device = tmp_path / "host_cpu.yaml"
    result = FitResult({"default": 0.5}, 1e9, 1e-6, 0.0, RATES, runtime_scale=1.05)
    write_device(device, result, Provenance("2026-12-07", "test host", "onnxruntime 1.0", 1))
    comments = read_calibration_comments(device)
    assert calibration_number(device, comments, "runtime_scale", 1.0, low=1e-3) == 1.05
    assert calibration_number(device, {}, "runtime_scale", 1.0) == 1.0  # older presets
    text = device.read_text().replace(
        "calibration.runtime_scale: 1.05", f"calibration.runtime_scale: {value}"
    )
    device.write_text(text)
    with pytest.raises(
        SocsimError, match=rf"host_cpu.yaml: '# calibration.runtime_scale: {value}' must"
    ):
        calibration_number(device, read_calibration_comments(device), "runtime_scale", 1.0, 1e-3)


def test_the_fit_costs_each_distinct_op_once():
    from calibration.fit import _distinct_ops
    from simulator.graph.model import Op

    ops = [
        Op("a", "conv", flops=1e6, input_elems=100),
        Op("b", "conv", flops=1e6, input_elems=100),  # same op as a, another name
        Op("c", "conv", flops=1e6, input_elems=101),
        Op("d", "pool", flops=1e6, input_elems=100),
        Op("e", "conv", flops=1e6, input_elems=100, parallel_fraction=0.5),
    ]
    distinct, inverse = _distinct_ops(ops)
    assert [op.name for op in distinct] == ["a", "c", "d", "e"]
    assert inverse.tolist() == [0, 0, 1, 2, 3]
