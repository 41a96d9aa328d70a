"""Sweep rows re-scaled to the real networks' context (calibration.predictor_context)
and the per-thread default statistic, with hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.predictor_context import MIN_REFERENCE_S, apply_context, context_factors
from calibration.predictor_synth import synthetic_table
from calibration.statistic import resolve_statistic


def _rows(model: str, kind: str, ratios, flops_per_byte: float) -> list[dict]:
    """Rows of 1e6..(n)e6 bytes whose time is ``ratio`` x the fake law bytes x 1e-10 s."""
    return [
        {
            "model": model,
            "kind": kind,
            "bytes": 1e6 * (i + 1),
            "flops": flops_per_byte * 1e6 * (i + 1),
            "median_s": r * 1e-10 * 1e6 * (i + 1),
        }
        for i, r in enumerate(ratios)
    ]


def _law(train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """A "model trained on the sweeps" that always predicts bytes x 1e-10 s."""
    assert train["model"].str.startswith("sweep_").all()
    return test["bytes"].to_numpy() * 1e-10


def test_context_factors_by_hand():
    rows = pd.DataFrame(
        _rows("sweep_a", "activation", [1.0] * 6, 0.25)
        + _rows("zoo_r", "activation", [1.2, 1.3, 1.4, 1.5, 1.6], 0.25)  # own: median 1.4
        + _rows("sweep_a", "conv", [1.0] * 6, 10.0)
        + _rows("zoo_r", "conv", [0.9] * 5, 10.0)  # own 0.9; compute bound: not pooled
        + _rows("sweep_a", "pool", [1.0] * 6, 0.5)
        + _rows("zoo_r", "pool", [2.0, 2.0, 2.0], 0.5)  # 3 < 5 rows: pooled
        + _rows("sweep_a", "norm", [1.0] * 6, 0.5)  # no reference rows, memory bound
        + _rows("sweep_a", "fc", [1.0] * 6, 10.0)  # no reference rows, compute bound
        + _rows("zoo_r", "matmul", [3.0] * 6, 10.0)  # no sweep rows
    )
    factors = context_factors(rows, _law)
    # pooled: memory-bound reference ratios 1.2 1.3 1.4 1.5 1.6 2 2 2 -> (1.5 + 1.6) / 2
    assert factors == pytest.approx(
        {"activation": 1.4, "conv": 0.9, "pool": 1.55, "norm": 1.55, "fc": 1.0, "matmul": 1.0}
    )
    scaled = apply_context(rows, factors)
    sweep = rows["model"] == "sweep_a"
    norm = sweep & (rows["kind"] == "norm")
    assert np.allclose(scaled.loc[norm, "median_s"], 1.55 * rows.loc[norm, "median_s"])
    assert scaled.loc[~sweep, "median_s"].equals(rows.loc[~sweep, "median_s"])


def test_reference_kernels_under_the_profiler_resolution_are_not_evidence():
    """Six 2-5 µs reference reshapes (1 µs ticks) give no factor of their own: the kind
    takes the pooled memory-bound factor, here from the activations' 1.4."""
    fast = pd.DataFrame(_rows("zoo_r", "reshape", [2.0] * 6, 0.0)).assign(
        bytes=[1e4, 1.5e4, 2e4, 2.5e4, 1e4, 1.5e4]
    )
    fast["median_s"] = fast["bytes"] * 1e-10 * 2.0  # 2-5 µs, twice the law
    assert fast["median_s"].max() < MIN_REFERENCE_S
    rows = pd.concat(
        [
            pd.DataFrame(_rows("sweep_a", "reshape", [1.0] * 6, 0.0)),
            fast,
            pd.DataFrame(_rows("sweep_a", "activation", [1.0] * 6, 0.25)),
            pd.DataFrame(_rows("zoo_r", "activation", [1.2, 1.3, 1.4, 1.5, 1.6], 0.25)),
        ],
        ignore_index=True,
    )
    assert context_factors(rows, _law) == pytest.approx({"activation": 1.4, "reshape": 1.4})
    slow = rows.assign(median_s=rows["median_s"] * 10)  # 20-50 µs: now they count
    assert context_factors(slow, _law)["reshape"] == pytest.approx(20.0)


def test_no_reference_rows_no_change():
    rows = pd.DataFrame(
        _rows("sweep_a", "norm", [1.0] * 6, 0.5) + _rows("fit_b", "norm", [2.0] * 6, 0.5)
    )
    assert context_factors(rows, _law) == {"norm": 1.0}


def test_train_predictor_learns_the_reference_level():
    """Sweep rows at the formula's times, the same ops in a zoo network 1.3 x slower:
    the factor is 1.3 (the trees reproduce their training rows to well under 3 %), and
    the context-trained model predicts 1.3 x the plain one."""
    pytest.importorskip("sklearn")
    from calibration.predictor_fit import train_predictor
    from simulator.hardware.predictor import KernelPredictor

    sweep = synthetic_table(60, seed=0, noise=0.0).assign(model="sweep_conv_0")
    zoo = sweep.assign(model="zoo_net", median_s=1.3 * sweep["median_s"])
    settings = {"n_estimators": 200}
    both = pd.concat([sweep, zoo], ignore_index=True)
    with_context = train_predictor(both, kinds=["conv"], settings=settings, min_rows=10)
    factor = with_context["provenance"]["context_factors"]["fp32/1"]["conv"]
    assert factor == pytest.approx(1.3, rel=0.03)
    plain = train_predictor(both, kinds=["conv"], settings=settings, min_rows=10, context=False)
    assert "context_factors" not in plain["provenance"]
    # every conv row now stands for 1.3 x the formula: the mean prediction moves by ~1.3 / 1.15
    ratio = _mean_prediction(with_context, zoo) / _mean_prediction(plain, zoo)
    assert ratio == pytest.approx(1.3 / 1.15, rel=0.03)
    # a table without sweep rows is not touched
    alone = train_predictor(zoo, kinds=["conv"], settings=settings, min_rows=10)
    assert (
        alone["models"]
        == train_predictor(zoo, kinds=["conv"], settings=settings, min_rows=10, context=False)[
            "models"
        ]
    )
    assert KernelPredictor(with_context)


def _mean_prediction(artifact, table) -> float:
    from calibration.predictor_fit import group_data, predict_model

    model = artifact["models"][0]
    rows = table[table["kind"] == "conv"]
    return float(np.mean(predict_model(model, group_data(rows, model["features"]))))


@pytest.mark.parametrize(
    ("statistic", "threads", "expected"),
    [("auto", 1, "mean"), ("auto", 2, "median"), ("auto", 8, "median"), ("q1", 1, "q1"),
     ("median", 2, "median"), ("mean", 2, "mean")],
)  # fmt: skip
def test_resolve_statistic(statistic, threads, expected):
    assert resolve_statistic(statistic, threads) == expected


def test_auto_falls_back_to_the_median_for_a_table_without_its_column():
    """import-csv tables have one time per row; tables measured before 2026-12-07 have no
    trimmed mean. A statistic asked for by name is not replaced (reading it fails)."""
    assert resolve_statistic("auto", 1, ["median_s", "q1_s", "mean_s"]) == "mean"
    assert resolve_statistic("auto", 1, ["median_s", "q1_s"]) == "median"
    assert resolve_statistic("auto", 2, ["median_s"]) == "median"
    assert resolve_statistic("mean", 1, ["median_s"]) == "mean"


def test_resolve_statistic_refuses_bad_input():
    with pytest.raises(ValueError, match="one of"):
        resolve_statistic("mode", 1)
    with pytest.raises(ValueError, match="threads"):
        resolve_statistic("auto", 0)


def test_views_neither_give_nor_take_a_factor():
    """Copying reshapes at twice the law set the reshape factor 2; reference views at 5x
    (the 1 µs-resolution noise of a dispatch) are not evidence, and sweep views stay as
    measured (a view moves no bytes: no cache context)."""
    copies = _rows("sweep_a", "reshape", [1.0] * 6, 0.0) + _rows("zoo_r", "reshape", [2.0] * 5, 0.0)
    views = _rows("sweep_a", "reshape", [1.0] * 3, 0.0) + _rows("zoo_r", "reshape", [5.0] * 5, 0.0)
    rows = pd.DataFrame(
        [{**r, "feat_view": 0.0} for r in copies] + [{**r, "feat_view": 1.0} for r in views]
    )
    factors = context_factors(rows, _law)
    assert factors == pytest.approx({"reshape": 2.0})
    scaled = apply_context(rows, factors)
    copy = (rows["model"] == "sweep_a") & (rows["feat_view"] == 0.0)
    view = rows["feat_view"] == 1.0
    assert np.allclose(scaled.loc[copy, "median_s"], 2 * rows.loc[copy, "median_s"])
    assert scaled.loc[view, "median_s"].equals(rows.loc[view, "median_s"])


def test_reshape_operators_take_a_factor_each():
    """Reference Splits at twice the law give Splits 2; the sweeps' Transposes have no
    reference rows of their own and take the pooled memory-bound factor (here the
    activations' 1.4 and the Splits' 2: median of 1.2 1.3 1.4 1.5 1.6 2 2 2 2 2 = 1.8),
    not the Splits'; activations (not split by operator) keep their kind's key."""
    split = _rows("sweep_a", "reshape", [1.0] * 6, 0.0) + _rows("zoo_r", "reshape", [2.0] * 5, 0.0)
    transpose = _rows("sweep_a", "reshape", [1.0] * 4, 0.0)
    act = _rows("sweep_a", "activation", [1.0] * 6, 0.25)
    act += _rows("zoo_r", "activation", [1.2, 1.3, 1.4, 1.5, 1.6], 0.25)
    rows = pd.DataFrame(
        [{**r, "op_type": "Split"} for r in split]
        + [{**r, "op_type": "Transpose"} for r in transpose]
        + [{**r, "op_type": "Relu"} for r in act]
    )
    factors = context_factors(rows, _law)
    assert factors == pytest.approx(
        {"reshape/Split": 2.0, "reshape/Transpose": 1.8, "activation": 1.4}
    )
    scaled = apply_context(rows, factors)
    moved = scaled["median_s"] / rows["median_s"]
    sweep = rows["model"] == "sweep_a"
    assert np.allclose(moved[sweep & (rows["op_type"] == "Transpose")], 1.8)
    assert np.allclose(moved[sweep & (rows["op_type"] == "Split")], 2.0)
