"""Training kernel predictors: the numpy walker equals scikit-learn, training is
deterministic, a synthetic formula is learned, the artifact round-trips."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from calibration.predictor_file import artifact_bytes, write_predictor
from calibration.predictor_fit import export_trees, train_predictor
from calibration.predictor_synth import synthetic_ops, synthetic_table, synthetic_time_s
from calibration.table import make_table, read_table, write_table
from simulator.errors import SocsimError
from simulator.hardware.predictor import (
    KernelPredictor,
    PredictorRangeWarning,
    load_predictor,
    predict_raw,
)
from simulator.hardware.predictor_format import PredictorFormatError, check_model

pytest.importorskip("sklearn")
FAST = {"n_estimators": 30}


def _walker_model(estimator, method, n_features):
    ensemble, trees = export_trees(estimator, method)
    names = ["flops", "bytes", "weight_bytes", "input_bytes", "output_bytes"][:n_features]
    raw = {
        "kind": "conv",
        "dtype": "fp32",
        "threads": 1,
        "features": names,
        "target": "log_time",
        "baseline": {"fixed_s": 0.0, "flop_rate_per_s": 1.0, "byte_rate_per_s": 1.0},
        "ensemble": ensemble,
        "trees": trees,
        "range": {n: [0.0, 1.0] for n in names},
        "training": {},
    }
    return check_model(raw, dict.fromkeys(names))


@pytest.mark.parametrize("method", ["gbt", "rf"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_walker_equals_scikit_learn(method, seed):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    rng = np.random.default_rng(seed)
    x = rng.lognormal(0, 3, size=(300, 4))
    y = np.log1p(x[:, 0]) * np.sin(x[:, 1]) + (x[:, 2] > 1.5) + rng.normal(0, 0.1, 300)
    cls = GradientBoostingRegressor if method == "gbt" else RandomForestRegressor
    estimator = cls(n_estimators=25, max_depth=5, random_state=seed).fit(x, y)
    model = _walker_model(estimator, method, 4)
    probe = np.vstack([x[:50], rng.lognormal(0, 4, size=(200, 4))])  # seen and unseen rows
    ours = predict_raw(model.forest, model.combine, model.offset, model.scale, probe)
    np.testing.assert_allclose(ours, estimator.predict(probe), rtol=1e-12, atol=1e-12)


def test_training_is_deterministic_byte_for_byte():
    table = synthetic_table(30, seed=3)
    kwargs = {"settings": FAST, "random_state": 7, "provenance": {"date": "d"}, "folds": 2}
    first = train_predictor(table, kinds=["conv", "fc"], **kwargs)
    second = train_predictor(table, kinds=["conv", "fc"], **kwargs)
    assert artifact_bytes(first) == artifact_bytes(second)
    assert artifact_bytes(first, compress=True) == artifact_bytes(second, compress=True)


def test_a_synthetic_formula_is_learned_and_provenance_recorded(tmp_path):
    table = synthetic_table(60, seed=0)
    artifact = train_predictor(
        table,
        settings={"n_estimators": 80},
        folds=3,
        provenance={"host": "synthetic"},
        overhead_s=2e-6,
    )
    kinds = {m["kind"]: m for m in artifact["models"]}
    assert sorted(kinds) == ["conv", "dwconv", "elementwise", "fc"]
    assert artifact["provenance"]["host"] == "synthetic"
    assert artifact["provenance"]["trainer"].startswith("scikit-learn ")
    for model in kinds.values():
        assert model["training"]["rows"] == 60 and model["training"]["cv_folds"] == 3
        assert 0 < model["training"]["cv_mape_pct"] < 30
    path = write_predictor(artifact, tmp_path / "host.predictor.json.gz")
    predictor = load_predictor(path)
    held_out = synthetic_ops(30, seed=11)
    errors = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictorRangeWarning)  # a few shapes lie outside
        for op in held_out:
            time_s = predictor.time_s(op, 1)
            errors.append(abs((time_s - 2e-6) / synthetic_time_s(op) - 1))
    # measured on this synthetic table (3 % noise): MAPE about 4 %, the roofline's far worse
    assert np.mean(errors) < 0.10


def test_small_groups_stay_on_the_roofline_and_are_listed():
    table = synthetic_table(30, seed=1)
    fc = table["kind"] == "fc"
    table = pd.concat([table[~fc], table[fc].head(8)])  # fc: 8 rows only
    artifact = train_predictor(table, settings=FAST, min_rows=20, folds=2)
    assert "fc" not in {m["kind"] for m in artifact["models"]}
    assert {"kind": "fc", "dtype": "fp32", "threads": 1, "rows": 8} in artifact["provenance"][
        "skipped"
    ]


def test_a_table_measured_before_a_graph_feature_existed_trains_without_it():
    """``inputs`` came after tables with every other feature column had been measured:
    a refit of such a table trains every kind without it instead of failing."""
    table = synthetic_table(30, seed=1)
    kwargs = {"settings": FAST, "folds": 2, "random_state": 0}
    old = train_predictor(table.drop(columns=["feat_inputs"]), **kwargs)
    assert all("inputs" not in model["features"] for model in old["models"])
    assert artifact_bytes(old) == artifact_bytes(train_predictor(table, **kwargs))


def test_training_errors_are_clear():
    table = synthetic_table(10, seed=1)
    with pytest.raises(SocsimError, match="lacks column"):
        train_predictor(table.drop(columns=["feat_kernel"]))
    with pytest.raises(SocsimError, match="method must be one of"):
        train_predictor(table, method="svm")
    with pytest.raises(SocsimError, match=r"no \(kind, dtype, threads\) group has 50"):
        train_predictor(table, min_rows=50)
    with pytest.raises(SocsimError, match="unknown predictor feature"):
        train_predictor(table, features={"conv": ["flops", "colour"]}, min_rows=5)


def test_write_predictor_refuses_an_artifact_that_would_not_load(tmp_path):
    artifact = train_predictor(synthetic_table(20, seed=2), settings=FAST, min_rows=10)
    artifact["models"][0]["trees"][0]["left"][0] = 0
    with pytest.raises(PredictorFormatError, match="left"):
        write_predictor(artifact, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_feature_columns_survive_the_measurement_table(tmp_path):
    rows = synthetic_table(3, seed=4).to_dict("records")
    rows.append({**rows[0], "feat_kernel": float("nan")})
    path = tmp_path / "m.csv"
    write_table(make_table(rows), path)
    back = read_table(path)
    assert back["feat_flops"].tolist() == [r["feat_flops"] for r in rows]
    assert np.isnan(back["feat_kernel"].iloc[-1])
    assert KernelPredictor(train_predictor(back, settings=FAST, min_rows=3, folds=2))
