"""bench/predictor_cv.py: leave-one-network-out on a fit table (how sweep families are
chosen, docs/calibration.md "Choosing the corpus")."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from bench_loader import load_bench

from calibration.predictor_synth import synthetic_table

# predictor_cv imports its sibling by name (bench/ is sys.path[0] when it runs); bench/
# must not go on the tests' path (its engine.py and sweep.py would shadow test folders)
sys.modules.setdefault("predictor_eval", load_bench("predictor_eval"))
cv = load_bench("predictor_cv")


def _table() -> pd.DataFrame:
    """A sweep and two 'networks' of synthetic kernels (the same time law)."""
    parts = [
        synthetic_table(120, seed=0).assign(model="sweep_conv_0"),
        synthetic_table(40, seed=3).assign(model="zoo_a"),
        synthetic_table(40, seed=5).assign(model="fit_b"),
    ]
    return pd.concat(parts, ignore_index=True)


def test_each_network_is_predicted_by_a_predictor_trained_without_it():
    table = _table()
    result = cv.leave_one_network_out(table)
    assert sorted(result["network"]) == ["fit_b", "zoo_a"]  # sweeps always stay in
    for _, row in result.iterrows():
        n_rows = int((table["model"] == row["network"]).sum())
        assert row["kernels"] + row["uncovered"] == n_rows
        assert 0.0 <= row["within_10pct"] <= 1.0
    # the same law everywhere: held-out networks come out close (3 % noise)
    assert (result["sum_error_pct"].abs() < 15).all()
    assert np.isfinite(result["sum_error_pct"]).all()


def test_drop_removes_a_family_from_training_and_from_the_networks():
    table = _table()
    result = cv.leave_one_network_out(table, drop=["zoo_"])
    assert list(result["network"]) == ["fit_b"]
    kept = cv.leave_one_network_out(table)
    # another training set, another prediction of the same network
    assert (
        result.loc[result["network"] == "fit_b", "sum_error_pct"].item()
        != kept.loc[kept["network"] == "fit_b", "sum_error_pct"].item()
    )
