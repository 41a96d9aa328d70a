"""Sweep kernels re-scaled to the context of a real network, before a predictor trains.

A kernel sweep (:mod:`calibration.sweeps`) runs a dozen kernels in a model whose weights
and activations all fit in the host's last-level cache. Inside a real ImageNet CNN the
same kernel runs while megabytes of weights stream through that cache between layers,
and a memory-bound kernel pays for it. Measured on this host (1 thread, runs of
2026-12-03 16:15 UTC), a predictor trained on the sweeps alone predicts the zoo CNNs'
in-network kernels (the fit set's real architectures) with median ratios measured /
predicted of 1.26 (ReLU), 1.34 (Add), 1.40 (pooling), 1.13 (reshape), against 0.95-1.01
for conv, depthwise and FC; and the ratio grows with the network's weights, from
0.5-1.1 for the fit set's small synthetic networks (< 6 MB) to 1.3-1.5 above 40 MB.
docs/calibration.md ("Sweep context") has the table.

So, per op kind, a *context factor*: the median of measured / predicted over the
*reference* rows (in-network kernels of the real architectures: the zoo's CNNs and the
published fit architectures, :data:`REFERENCE_PREFIXES`, timed at :data:`MIN_REFERENCE_S`
or more) of a model trained on the sweep rows alone. A kind with fewer than
:data:`MIN_REFERENCE_ROWS` reference rows (BatchNorm before DPN-68 joined them: every
BN of the other networks is fused into a conv) takes the pooled factor of all memory-bound
reference rows (below :data:`MEMORY_BOUND_FLOP_PER_BYTE`) when its own rows are memory
bound, else 1. The sweep rows' times are multiplied by their kind's (or operator's,
below) factor and the
predictor trains on every row as before: the sweeps still give the shapes, the real
networks the level. A table with no sweep or no reference rows (imported profiles) is
left unchanged (every factor 1).

The kinds of :data:`BY_OPERATOR` take a factor per operator (key ``kind/op_type``):
the reshape kind holds Splits and Transposes, and a factor from DPN-68's Splits made
the sweeps' Transposes +26 to +30 % off their own measurements (runs E and F).

Views (reshapes that copy nothing, ``feat_view`` 1) neither give nor take a factor: they
move no bytes, so the cache has no hold on them. Before 2026-12-06 they took the reshape
factor, which the copying reshapes alone set once DPN-68's channel Splits joined the
reference networks (run B: 1.64 at 1 thread, which made every 3 µs Reshape a 5 µs one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from calibration.table import SWEEP_PREFIX

#: Model-name prefixes of the reference (real-network) rows: the zoo's CNNs and the
#: published fit architectures (calibration/corpus.py).
REFERENCE_PREFIXES = ("zoo_", "real_")
#: Fewest reference rows a kind needs for a factor of its own.
MIN_REFERENCE_ROWS = 5
#: A row below this arithmetic intensity (FLOP/B) is memory bound (pooled factor).
MEMORY_BOUND_FLOP_PER_BYTE = 1.0
#: Reference rows faster than this (s) are not evidence: ORT's profiler times kernels
#: in whole microseconds, so a 4 µs kernel's time is uncertain by ±0.5 µs (±12 %) even
#: read as grouped data (:func:`calibration.runstats.binned_time_stats`; by up to 25 %
#: before 2026-12-07). The zoo's only reshapes are six 2-5 µs Flattens, which gave
#: reshape factors from 1.13 to 1.62 between runs, scaling every sweep reshape (views
#: and copies).
MIN_REFERENCE_S = 10e-6
#: Kinds whose operators take a factor each (``kind/op_type``): ``reshape`` holds
#: operators as unlike as a Split and a Transpose.
BY_OPERATOR: tuple[str, ...] = ("reshape",)

#: ``fit_predict(train_rows, test_rows)``: predicted times (s) of ``test_rows`` by a model
#: trained on ``train_rows`` (one kind), or None when ``train_rows`` are too few.
FitPredict = Callable[[pd.DataFrame, pd.DataFrame], "np.ndarray | None"]


def _intensity(rows: pd.DataFrame) -> np.ndarray:
    nbytes = rows["bytes"].to_numpy(dtype=float)
    return np.divide(rows["flops"].to_numpy(dtype=float), nbytes, where=nbytes > 0,
                     out=np.zeros(len(rows)))  # fmt: skip


def _views(rows: pd.DataFrame) -> pd.Series:
    """True for the rows of views (a table without the ``feat_view`` column has none)."""
    if "feat_view" not in rows.columns:
        return pd.Series(False, index=rows.index)
    return rows["feat_view"].fillna(0.0).astype(float) == 1.0


def _keys(rows: pd.DataFrame) -> pd.Series:
    """Each row's factor key: its kind, or ``kind/op_type`` for the kinds of
    :data:`BY_OPERATOR` (a table without ``op_type``: the kind)."""
    kinds = rows["kind"].astype(str)
    if "op_type" not in rows.columns:
        return kinds
    split = kinds.isin(BY_OPERATOR)
    return kinds.where(~split, kinds + "/" + rows["op_type"].astype(str))


def context_factors(rows: pd.DataFrame, fit_predict: FitPredict) -> dict[str, float]:
    """The context factor of every kind of ``rows`` (see the module docstring), or of
    every operator of a kind in :data:`BY_OPERATOR` (key ``kind/op_type``).

    Parameters
    ----------
    rows : DataFrame
        Op rows with ``model``, ``kind``, ``median_s`` (s), ``flops``, ``bytes`` (and
        ``op_type``).
    fit_predict : callable
        Trains one kind's model on some rows and predicts others (:data:`FitPredict`).

    Returns
    -------
    dict of str to float
        Key -> factor (> 0); 1 for keys without sweep rows or without evidence.
    """
    names = rows["model"].astype(str)
    sweep = names.str.startswith(SWEEP_PREFIX)
    reference = names.str.startswith(REFERENCE_PREFIXES)
    keys = _keys(rows)
    ratios: dict[str, list[np.ndarray]] = {}
    memory_ratios = []
    for _kind, group in rows.groupby("kind", sort=True):
        # one model per kind, trained on all its sweep rows, as the predictor will be
        train, test = group[sweep[group.index]], group[reference[group.index]]
        test = test[(test["median_s"].to_numpy(dtype=float) >= MIN_REFERENCE_S) & ~_views(test)]
        if train.empty or test.empty:
            continue
        predicted = fit_predict(train, test)
        if predicted is None:
            continue
        ok = np.isfinite(predicted) & (predicted > 0)
        ratio = test["median_s"].to_numpy(dtype=float)[ok] / predicted[ok]
        test_keys = keys[test.index].to_numpy()[ok]
        for key in np.unique(test_keys):
            ratios.setdefault(str(key), []).append(ratio[test_keys == key])
        memory_ratios.append(ratio[_intensity(test)[ok] < MEMORY_BOUND_FLOP_PER_BYTE])
    pooled_rows = np.concatenate(memory_ratios) if memory_ratios else np.empty(0)
    pooled = float(np.median(pooled_rows)) if pooled_rows.size >= MIN_REFERENCE_ROWS else 1.0
    factors = {}
    for key, group in rows.groupby(keys, sort=True):
        own = np.concatenate(ratios.get(str(key), [np.empty(0)]))
        if not sweep[group.index].any():
            factors[str(key)] = 1.0
        elif own.size >= MIN_REFERENCE_ROWS:
            factors[str(key)] = float(np.median(own))
        elif np.median(_intensity(group)) < MEMORY_BOUND_FLOP_PER_BYTE:
            factors[str(key)] = pooled
        else:
            factors[str(key)] = 1.0
    return factors


def apply_context(rows: pd.DataFrame, factors: Mapping[str, float]) -> pd.DataFrame:
    """A copy of ``rows`` whose sweep rows' ``median_s`` is multiplied by their key's
    factor (:func:`context_factors`; keys not in ``factors``: 1; views: 1)."""
    out = rows.copy()
    sweep = out["model"].astype(str).str.startswith(SWEEP_PREFIX) & ~_views(out)
    scale = _keys(out)[sweep].map(lambda key: factors.get(str(key), 1.0))
    out.loc[sweep, "median_s"] = out.loc[sweep, "median_s"] * scale.astype(float)
    return out
