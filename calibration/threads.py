"""Amdahl parallel fractions per op kind, from the same kernels timed at 1 and n threads.

For one kernel with times ``t1`` (1 thread) and ``tn`` (n threads), Amdahl's law
``tn / t1 = (1 - p) + p / n`` gives ``p = (1 - tn / t1) / (1 - 1 / n)``, clipped to
[0, 1] (a kernel slower with more threads has p = 0). A kind's fraction is the median
over its kernels, each weighted by its 1-thread time (the kernels that dominate
latency decide).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibration.table import network_rows


def kernel_fractions(one: pd.DataFrame, many: pd.DataFrame, threads: int) -> pd.DataFrame:
    """Per kernel measured in both tables (inside a network:
    :func:`calibration.table.network_rows`): ``model, node, kind, t1_s, tn_s, p``."""
    keys = ["model", "node"]
    a = network_rows(one[one["level"] == "op"])[[*keys, "kind", "median_s"]]
    b = many[many["level"] == "op"][[*keys, "median_s"]]
    joined = a.merge(b, on=keys, suffixes=("_1", "_n"))
    ratio = joined["median_s_n"] / joined["median_s_1"]
    p = ((1.0 - ratio) / (1.0 - 1.0 / threads)).clip(0.0, 1.0)
    return pd.DataFrame(
        {
            "model": joined["model"],
            "node": joined["node"],
            "kind": joined["kind"],
            "t1_s": joined["median_s_1"],
            "tn_s": joined["median_s_n"],
            "p": p,
        }
    )


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value at half the total weight (values sorted ascending)."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def parallel_fractions(one: pd.DataFrame, many: pd.DataFrame, threads: int) -> dict[str, float]:
    """Kind -> time-weighted median Amdahl parallel fraction (kinds in both tables)."""
    kernels = kernel_fractions(one, many, threads)
    return {
        str(kind): weighted_median(g["p"].to_numpy(float), g["t1_s"].to_numpy(float))
        for kind, g in kernels.groupby("kind", sort=True)
    }
