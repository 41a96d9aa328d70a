"""Training learned per-kernel latency predictors from a measurement table.

API (for ``socsim calibrate``; pure given its inputs, no I/O but :func:`write_predictor`)::

    from calibration.predictor_fit import train_predictor
    from calibration.predictor_file import write_predictor
    artifact = train_predictor(table, provenance=prov)   # dict, the JSON artifact
    write_predictor(artifact, Path("scenarios/devices/host_cpu.predictor.json"))
    # the device YAML's unit then says:  predictor: {file: host_cpu.predictor.json}
    # and simulator.hardware.predictor.load_predictor(path) reads it back (checked).

``table`` is the measurement table (:mod:`calibration.table`; a DataFrame or rows) whose
``level == "op"`` rows carry ``kind``, ``dtype``, ``threads``, ``median_s``, ``flops``,
``bytes`` and the feature columns ``feat_<name>`` that :func:`calibration.measure.model_rows`
writes with :func:`simulator.hardware.kernel_features.feature_columns` (the same function
the simulator predicts with). One model is trained per (kind, dtype, threads) with at
least ``min_rows`` rows having every feature of the kind; ops of other kinds stay on the
roofline. docs/predictors.md specifies the artifact and explains the choices below.

Defaults: gradient-boosted trees (scikit-learn ``GradientBoostingRegressor``, 200 trees
of depth 4) on ``log(time / baseline)``, where ``baseline`` is a per-kind roofline
fitted to the same rows: a tree outside its training range returns a constant factor
on that roofline instead of a constant time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibration.predictor_context import apply_context, context_factors
from calibration.table import network_rows
from simulator.errors import SocsimError
from simulator.hardware.kernel_features import (
    FEATURES,
    GRAPH_FEATURES,
    feature_column,
    kind_features,
)
from simulator.hardware.predictor import kernel_times_s
from simulator.hardware.predictor_format import FORMAT, TARGETS, VERSION, check_model

METHODS = ("gbt", "rf")
#: Per method: the scikit-learn estimator's settings (random_state is added).
DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gbt": {"n_estimators": 200, "max_depth": 4, "learning_rate": 0.05, "min_samples_leaf": 2},
    "rf": {"n_estimators": 100, "max_depth": 10, "min_samples_leaf": 2, "max_features": 1.0},
}
#: Percentile of the achieved FLOP/s and B/s a kind's baseline uses (robust to outliers).
RATE_PERCENTILE = 90.0


class NothingToTrainError(SocsimError):
    """No (kind, dtype, threads) group of a table has enough complete op rows to train on."""


def _estimator(method: str, random_state: int, settings: Mapping[str, Any]):
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    params = {**DEFAULTS[method], **settings, "random_state": random_state}
    if method == "gbt":
        return GradientBoostingRegressor(loss="squared_error", **params)
    return RandomForestRegressor(n_jobs=None, **params)


def fit_baseline(flops: np.ndarray, nbytes: np.ndarray, times: np.ndarray) -> dict[str, float]:
    """A kind's roofline-like baseline from its rows: ``fixed_s`` = half the fastest
    time, the FLOP and byte rates = the :data:`RATE_PERCENTILE` th percentile achieved
    (1 when the kind does no FLOPs / moves no bytes)."""

    def rate(work: np.ndarray) -> float:
        busy = times > 0
        achieved = work[busy & (work > 0)] / times[busy & (work > 0)]
        return float(np.percentile(achieved, RATE_PERCENTILE)) if achieved.size else 1.0

    return {
        "fixed_s": float(0.5 * times.min()),
        "flop_rate_per_s": rate(flops),
        "byte_rate_per_s": rate(nbytes),
    }


def export_trees(model, method: str) -> tuple[dict[str, Any], list[dict[str, list]]]:
    """(ensemble, trees) of a fitted scikit-learn GBT or random forest, as JSON data."""
    if method == "gbt":
        ensemble = {
            "combine": "sum",
            "offset": float(np.ravel(model.init_.constant_)[0]),
            "scale": float(model.learning_rate),
        }
        estimators = [stage[0] for stage in model.estimators_]
    else:
        ensemble = {"combine": "mean", "offset": 0.0, "scale": 1.0}
        estimators = list(model.estimators_)
    trees = []
    for estimator in estimators:
        tree = estimator.tree_
        leaf = tree.children_left == -1
        trees.append(
            {
                "feature": np.where(leaf, -1, tree.feature).tolist(),
                "threshold": np.where(leaf, 0.0, tree.threshold).tolist(),
                "left": tree.children_left.tolist(),
                "right": tree.children_right.tolist(),
                "value": np.where(leaf, tree.value[:, 0, 0], 0.0).tolist(),
            }
        )
    return ensemble, trees


def op_rows(table: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The ``level == "op"`` rows of a measurement table with a positive time, measured
    inside a network (:func:`calibration.table.network_rows`).

    Raises
    ------
    SocsimError
        When a needed column is missing (no feature columns: measured before socsim wrote
        them; re-run ``socsim calibrate measure``). A missing graph feature column
        (:data:`~simulator.hardware.kernel_features.GRAPH_FEATURES`, e.g. one added since
        the table was measured) is not an error: its rows lack that feature.
    """
    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    needed = ["level", "kind", "dtype", "threads", "median_s", "flops", "bytes"]
    needed += [feature_column(name) for name in FEATURES if name not in GRAPH_FEATURES]
    missing = [c for c in needed if c not in frame.columns]
    # a graph feature added after the table was measured: its ops lack it, as ops costed
    # outside a graph do, and training leaves it out of every kind (``names_for``)
    absent = [feature_column(n) for n in GRAPH_FEATURES if feature_column(n) not in frame]
    if absent and not missing:
        frame = frame.assign(**dict.fromkeys(absent, np.nan))
    if missing:
        raise SocsimError(
            f"the measurement table lacks column(s) {missing} that predictor training "
            "needs (tables measured before feature columns existed: measure again)"
        )
    frame = frame[(frame["level"] == "op") & (frame["median_s"] > 0)]
    return network_rows(frame).reset_index(drop=True)


def _fit_model(
    key: tuple[str, str, int],
    names: Sequence[str],
    data: Mapping[str, np.ndarray],
    method: str,
    target: str,
    random_state: int,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON model of one (kind, dtype, threads) fitted to ``data`` (arrays ``x``,
    ``flops``, ``bytes``, ``times``), without its ``training`` entry."""
    x, flops, nbytes, times = data["x"], data["flops"], data["bytes"], data["times"]
    baseline = fit_baseline(flops, nbytes, times)
    y = np.log(times)
    if target == "log_ratio":
        rates = np.maximum(
            flops / baseline["flop_rate_per_s"], nbytes / baseline["byte_rate_per_s"]
        )
        y = y - np.log(baseline["fixed_s"] + rates)
    estimator = _estimator(method, random_state, settings).fit(x, y)
    ensemble, trees = export_trees(estimator, method)
    kind, dtype, threads = key
    low, high = x.min(axis=0), x.max(axis=0)
    return {
        "kind": kind,
        "dtype": dtype,
        "threads": int(threads),
        "features": list(names),
        "target": target,
        "baseline": baseline,
        "ensemble": ensemble,
        "trees": trees,
        "range": {n: [float(a), float(b)] for n, a, b in zip(names, low, high, strict=True)},
    }


def predict_model(model: Mapping[str, Any], data: Mapping[str, np.ndarray]) -> np.ndarray:
    """Kernel times (s) a JSON ``model`` predicts for ``data``, through the simulator's
    own checked walker (so cross-validation measures what the simulator will do)."""
    checked = check_model({**model, "training": {}}, dict.fromkeys(model["features"]))
    return kernel_times_s(checked, data["x"], data["flops"], data["bytes"])


def _subset(data: Mapping[str, np.ndarray], index: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[index] for k, v in data.items()}


def cross_validate(
    key: tuple[str, str, int],
    names: Sequence[str],
    data: Mapping[str, np.ndarray],
    method: str = "gbt",
    target: str = "log_ratio",
    random_state: int = 0,
    settings: Mapping[str, Any] | None = None,
    folds: int = 5,
) -> np.ndarray:
    """Out-of-fold relative errors ``predicted / measured - 1`` of every row (K-fold,
    shuffled with ``random_state``)."""
    from sklearn.model_selection import KFold

    predicted = np.empty_like(data["times"])
    splitter = KFold(n_splits=folds, shuffle=True, random_state=random_state)
    for train, test in splitter.split(data["x"]):
        model = _fit_model(
            key, names, _subset(data, train), method, target, random_state, settings or {}
        )
        predicted[test] = predict_model(model, _subset(data, test))
    return predicted / data["times"] - 1.0


def error_summary(errors: np.ndarray) -> dict[str, float]:
    """MAPE (%) and the share within ±10 % of relative errors."""
    return {
        "mape_pct": float(100.0 * np.mean(np.abs(errors))),
        "within_10pct": float(np.mean(np.abs(errors) <= 0.10)),
    }


def group_data(rows: pd.DataFrame, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays x (features in ``names`` order), flops, bytes, times of table rows."""
    return {
        "x": rows[[feature_column(n) for n in names]].to_numpy(dtype=np.float64),
        "flops": rows["flops"].to_numpy(dtype=np.float64),
        "bytes": rows["bytes"].to_numpy(dtype=np.float64),
        "times": rows["median_s"].to_numpy(dtype=np.float64),
    }


def train_predictor(
    table: pd.DataFrame | Sequence[Mapping[str, Any]],
    *,
    method: str = "gbt",
    target: str = "log_ratio",
    kinds: Sequence[str] | None = None,
    features: Mapping[str, Sequence[str]] | None = None,
    min_rows: int = 20,
    folds: int = 5,
    random_state: int = 0,
    settings: Mapping[str, Any] | None = None,
    overhead_s: float = 0.0,
    provenance: Mapping[str, Any] | None = None,
    context: bool = True,
) -> dict[str, Any]:
    """Fit one model per (kind, dtype, threads) of the table's op rows: the artifact.

    Parameters
    ----------
    table : DataFrame or sequence of row mappings
        A measurement table with feature columns (see the module docstring).
    method : {"gbt", "rf"}
        Gradient-boosted trees or a random forest (scikit-learn).
    target : {"log_ratio", "log_time"}
        What the trees learn: ``log(time / baseline)`` or ``log(time)``.
    kinds : sequence of str, optional
        Kinds to train (default: every kind with enough rows).
    features : mapping kind -> feature names, optional
        Overrides :func:`~simulator.hardware.kernel_features.kind_features` (whose
        context features a group trains without when none of its rows has them).
    min_rows : int
        Fewest rows (having every feature of the kind) a model is trained on; smaller
        groups are listed under ``provenance.skipped`` and stay on the roofline.
    folds : int
        K of the K-fold cross-validation whose error each model records.
    random_state : int
        Seeds the trees and the folds: same inputs, same artifact byte for byte.
    settings : mapping, optional
        Estimator settings over :data:`DEFAULTS` (``n_estimators``, ``max_depth``...).
    overhead_s : float
        The runtime's per-op overhead between kernels (s; the end-to-end fit's), added
        to every predicted op.
    provenance : mapping, optional
        Date, host, runtime, threads, notes (e.g. :meth:`calibration.table.Provenance.to_dict`).
    context : bool
        Re-scale the sweep rows to the real networks' context first
        (:mod:`calibration.predictor_context`; the factors go to
        ``provenance.context_factors``); no effect on a table without sweep rows.

    Returns
    -------
    dict
        The artifact (JSON data); see docs/predictors.md.

    Raises
    ------
    SocsimError
        On an unknown method, target or feature, missing columns, or no trainable group.
    """
    import sklearn

    if method not in METHODS:
        raise SocsimError(f"predictor method must be one of {METHODS}, got {method!r}")
    if target not in TARGETS:
        raise SocsimError(f"predictor target must be one of {TARGETS}, got {target!r}")
    if not (math.isfinite(overhead_s) and overhead_s >= 0):
        raise SocsimError(f"overhead_s must be finite and >= 0, got {overhead_s}")
    unknown = [n for names in (features or {}).values() for n in names if n not in FEATURES]
    if unknown:
        raise SocsimError(f"unknown predictor feature(s) {unknown}; known: {list(FEATURES)}")
    settings = dict(settings or {})

    def names_for(kind: str, group: pd.DataFrame) -> tuple[str, ...]:
        """The kind's features: ``features`` if given, else the defaults without a
        graph-stamped feature no row has (a table of ops measured outside a graph)."""
        if features is not None and kind in features:
            return tuple(features[kind])
        return tuple(
            n
            for n in kind_features(kind)
            if n not in GRAPH_FEATURES or group[feature_column(n)].notna().any()
        )

    def fit_predict(train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray | None:
        kind = str(train["kind"].iloc[0])
        names = names_for(kind, train)
        columns = [feature_column(n) for n in names]
        train = train.dropna(subset=columns)
        if len(train) < max(min_rows, folds):
            return None
        key = (kind, str(train["dtype"].iloc[0]), int(train["threads"].iloc[0]))
        data = group_data(train, names)
        model = _fit_model(key, names, data, method, target, random_state, settings)
        complete = test[columns].notna().all(axis=1).to_numpy()
        out = np.full(len(test), np.nan)
        out[complete] = predict_model(model, group_data(test[complete], names))
        return out

    rows = op_rows(table)
    factors: dict[str, dict[str, float]] = {}
    if context and not rows.empty:
        parts = []
        for (dtype, threads), part in rows.groupby(["dtype", "threads"], sort=True):
            found = context_factors(part, fit_predict)
            factors[f"{dtype}/{int(threads)}"] = found
            parts.append(apply_context(part, found))
        rows = pd.concat(parts).sort_index()
    models: list[dict] = []
    skipped: list[dict[str, Any]] = []
    used: set[str] = set()
    for (kind, dtype, threads), group in rows.groupby(["kind", "dtype", "threads"], sort=True):
        if kinds is not None and kind not in kinds:
            continue
        names = names_for(str(kind), group)
        complete = group.dropna(subset=[feature_column(n) for n in names])
        if len(complete) < max(min_rows, folds):
            skipped.append({"kind": kind, "dtype": dtype, "threads": int(threads),
                            "rows": len(complete)})  # fmt: skip
            continue
        key = (str(kind), str(dtype), int(threads))
        data = group_data(complete, names)
        errors = cross_validate(key, names, data, method, target, random_state, settings, folds)
        model = _fit_model(key, names, data, method, target, random_state, settings)
        model["training"] = {
            "rows": len(complete),
            "method": method,
            "estimator": {**DEFAULTS[method], **settings, "random_state": random_state},
            "cv_folds": folds,
            **{f"cv_{k}": v for k, v in error_summary(errors).items()},
        }
        models.append(model)
        used.update(names)
    if not models:
        raise NothingToTrainError(
            f"no (kind, dtype, threads) group has {min_rows} complete op rows to train on "
            f"(groups: {skipped})"
        )
    meta = {**(provenance or {}), "trainer": f"scikit-learn {sklearn.__version__}"}
    meta["skipped"] = skipped
    if factors:
        meta["context_factors"] = {
            group: {kind: round(value, 6) for kind, value in found.items()}
            for group, found in factors.items()
        }
    return _artifact({n: FEATURES[n][0] for n in FEATURES if n in used}, overhead_s, meta, models)


def _artifact(defined: Mapping, overhead_s: float, provenance: Mapping, models: list) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "features": dict(defined),
        "provenance": dict(provenance),
        "overhead_s": float(overhead_s),
        "models": models,
    }
