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

#: Few trees and folds: these tests check which rows train, not how well.
QUICK = {"settings": {"n_estimators": 10}, "folds": 2}


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
    result = cv.leave_one_network_out(table, **QUICK)
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
    result = cv.leave_one_network_out(table, drop=["zoo_"], **QUICK)
    assert list(result["network"]) == ["fit_b"]
    kept = cv.leave_one_network_out(table, **QUICK)
    # another training set, another prediction of the same network
    assert (
        result.loc[result["network"] == "fit_b", "sum_error_pct"].item()
        != kept.loc[kept["network"] == "fit_b", "sum_error_pct"].item()
    )


def _real_table() -> pd.DataFrame:
    """A sweep, a small network and three real CNNs of synthetic kernels."""
    parts = [synthetic_table(120, seed=0).assign(model="sweep_conv_0")]
    parts += [
        synthetic_table(30, seed=s).assign(model=m)
        for s, m in ((3, "zoo_a"), (5, "zoo_b"), (7, "real_c"), (9, "fit_d"))
    ]
    return pd.concat(parts, ignore_index=True)


def test_curve_trains_on_k_other_real_networks():
    table = _real_table()
    real = {"zoo_a", "zoo_b", "real_c"}
    curve = cv.real_network_curve(table, sizes=(0, 9), **QUICK)
    assert sorted(set(curve["network"])) == sorted(real)  # fit_ is no real CNN
    assert sorted(set(curve["k"])) == [0, 2]  # 9 is capped at the two others
    assert curve["memory_within_10pct"].between(0, 1).all()
    # every other real CNN: leave-one-network-out's training set
    lono = cv.leave_one_network_out(table, **QUICK).set_index("network")
    for _, row in curve.iterrows():
        if row["k"] == 2:
            assert row["within_10pct"] == lono.loc[row["network"], "within_10pct"]
        else:  # none: the sweep and the small network only
            alone = table[~table["model"].isin(real - {row["network"]})]
            expected = cv.leave_one_network_out(alone, **QUICK).set_index("network")
            assert row["within_10pct"] == expected.loc[row["network"], "within_10pct"]


def test_each_thread_count_is_read_in_its_own_statistic(tmp_path):
    """auto: the trimmed mean for 1-thread rows, the median for 2-thread rows (as the
    fit reads them); a table without mean_s falls back to its median."""
    from calibration.table import make_table, write_table

    rows = synthetic_table(8, seed=0).assign(model="zoo_a")
    rows = pd.concat([rows.assign(threads=1), rows.assign(threads=2)], ignore_index=True)
    rows["median_s"] = 1.0
    rows["mean_s"] = 2.0
    path = tmp_path / "fit.csv"
    write_table(make_table(rows.to_dict("records")), path)
    read = cv._read(str(path), "auto")
    assert read.loc[read["threads"] == 1, "median_s"].eq(2.0).all()  # the mean
    assert read.loc[read["threads"] == 2, "median_s"].eq(1.0).all()  # the median
    assert len(read) == len(rows)
    write_table(make_table(rows.drop(columns="mean_s").to_dict("records")), path)
    assert cv._read(str(path), "auto")["median_s"].eq(1.0).all()
