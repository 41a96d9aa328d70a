"""Intervals of Monte Carlo results: per app of ``socsim run --samples`` and per sweep
point of a sweep with ``mc_samples`` (docs/uncertainty.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

ALL_APPS = "*"
#: Figures of a ``samples`` row that get an interval.
METRICS = (
    "latency_mean_s",
    "latency_p50_s",
    "latency_p95_s",
    "request_energy_j",
    "request_device_energy_j",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
)
#: Quantiles of an interval (percent): a 90 % central interval and the median.
QUANTILES = (5, 50, 95)


def intervals(table: pd.DataFrame, nominal: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per app and metric: the nominal run's value, then mean, sd and the
    :data:`QUANTILES` over the samples (numpy's linear interpolation), and how many
    samples had a value."""
    nominal_of = {(row["app"], m): row[m] for row in nominal for m in METRICS}
    out = []
    for app, rows in table.groupby("app", sort=False):
        for metric in METRICS:
            base = {
                "app": app,
                "metric": metric,
                "nominal": nominal_of.get((app, metric), math.nan),
            }
            out.extend(_interval(base, rows[metric]))
    return pd.DataFrame(out)


def _interval(base: dict[str, Any], column: pd.Series) -> list[dict[str, Any]]:
    """``[{**base, mean, sd, p5, p50, p95, samples}]`` over the column's values, or
    ``[]`` when it has none (percentiles: numpy's linear interpolation)."""
    values = column.dropna().to_numpy(dtype=float)
    if not len(values):
        return []
    quantiles = np.percentile(values, QUANTILES)
    return [
        {
            **base,
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
            **{f"p{q}": float(v) for q, v in zip(QUANTILES, quantiles, strict=True)},
            "samples": len(values),
        }
    ]


#: Figures of a sweep row that get an interval per sweep point.
SWEEP_METRICS = (
    "latency_mean_s",
    "latency_p95_s",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
)


def sweep_intervals(table: pd.DataFrame, paths: Sequence[str], samples: int) -> pd.DataFrame:
    """Per sweep point (``point // samples``) and metric of :data:`SWEEP_METRICS`: mean,
    sd and :data:`QUANTILES` over the point's ok rows (its samples x replicates), with
    the point's swept values, its most frequent ``decision`` and the share of its
    samples that took it."""
    ok = table[table["status"] == "ok"]
    out = []
    for sweep_point, part in ok.groupby(ok["point"] // samples, sort=True):
        decisions = part["decision"].astype(str).value_counts()
        # most frequent; ties broken alphabetically so the table is deterministic
        decision = sorted(decisions[decisions == decisions.max()].index)[0]
        first = part.iloc[0]
        base = {"sweep_point": int(sweep_point), **{path: first[path] for path in paths}}
        base.update(decision=decision, decision_share=float(decisions[decision] / len(part)))
        for metric in SWEEP_METRICS:
            out.extend(_interval({**base, "metric": metric}, part[metric]))
    return pd.DataFrame(out)


#: Rows of the printed interval table (the CSV has every metric).
SHOWN = (
    "latency_mean_s",
    "latency_p95_s",
    "request_device_energy_j",
    "device_energy_per_inference_j",
)


def shown_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """The printed view of :func:`intervals`: a few metrics, in ms and mJ."""
    rows = table[table["metric"].isin(SHOWN)].copy()
    if table["app"].nunique() == 2:  # one app: its "*" rows repeat it but for the window
        window = rows["metric"].str.endswith("_per_inference_j")
        rows = rows[(rows["app"] != ALL_APPS) | window]
    columns = ["nominal", "mean", *(f"p{q}" for q in QUANTILES)]
    for column in columns:
        rows[column] = (rows[column] * 1e3).map(lambda v: f"{v:.4g}")
    rows["metric"] = rows["metric"].map(
        lambda m: (
            m.removesuffix("_s") + " (ms)" if m.endswith("_s") else m.removesuffix("_j") + " (mJ)"
        )
    )
    return rows[["app", "metric", *columns, "samples"]]


__all__ = [
    "ALL_APPS",
    "METRICS",
    "QUANTILES",
    "SHOWN",
    "SWEEP_METRICS",
    "intervals",
    "shown_intervals",
    "sweep_intervals",
]
