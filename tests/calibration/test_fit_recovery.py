"""The fit recovers known parameters from synthetic measurements made with socsim's own cost."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.fit import (
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


def test_the_profilers_cost_is_bounded_by_the_fastest_kernel_and_floored():
    """Walls of zero time would want a constant of -(sum / ops); it stops at the fastest
    kernel (2 µs). Taking 2 µs off keeps half of a 3 µs kernel (1.5, not 1) and of a
    2 µs one (1, not 0); a 10 µs one becomes 8; model rows are untouched."""
    rows = pd.DataFrame(
        {"level": ["op", "op", "op", "model"], "model": ["m"] * 4,
         "median_s": [2e-6, 3e-6, 10e-6, 1e-9]}
    )  # fmt: skip
    ops = rows[rows["level"] == "op"]
    constant = fit_overhead(
        rows[rows["level"] == "model"], {"m": ops["median_s"].sum()}, {"m": 3}, 2e-6
    )
    assert constant == pytest.approx(-2e-6)
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
