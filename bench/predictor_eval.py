"""Choosing a predictor: methods and targets compared on held-out kernels.

``python bench/predictor_eval.py FIT.csv HOLDOUT.csv`` trains every (method,
target) on the fit table's op rows and prints, per kind, the MAPE and the share within
±10 % on the hold-out table's op rows (kernels of models the fit never saw), next to the
roofline-free baseline. ``--synthetic`` does the same on :mod:`calibration.predictor_synth`
tables, the hold-out being shapes twice as large (extrapolation). docs/predictors.md
quotes its output.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from calibration.predictor_fit import METHODS, error_summary, op_rows, train_predictor
from calibration.predictor_synth import synthetic_table
from calibration.table import read_table
from simulator.hardware.kernel_features import feature_column
from simulator.hardware.predictor import KernelPredictor, PredictorRangeWarning, kernel_times_s
from simulator.hardware.predictor_format import TARGETS


def predicted_times_s(artifact: dict, rows: pd.DataFrame) -> np.ndarray:
    """Each op row's kernel time (s) predicted by ``artifact``; NaN where none of its
    models applies (another kind, dtype or thread count, or a feature missing: the
    roofline would predict it)."""
    predictor = KernelPredictor(artifact, "<evaluation>")
    out = np.full(len(rows), np.nan)
    for model_list in predictor._models.values():
        for model in model_list:
            columns = [feature_column(n) for n in model.features]
            pick = (
                (rows["kind"] == model.kind).to_numpy()
                & (rows["dtype"] == model.dtype).to_numpy()
                & (rows["threads"] == model.threads).to_numpy()
                & rows[columns].notna().all(axis=1).to_numpy()
            )
            if not pick.any():
                continue
            group = rows[pick]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PredictorRangeWarning)
                out[pick] = kernel_times_s(
                    model, group[columns].to_numpy(float), group["flops"], group["bytes"]
                )
    return out


def held_out_errors(
    fit: pd.DataFrame, holdout: pd.DataFrame, method: str, target: str, **train
) -> pd.DataFrame:
    """Per (kind, dtype, threads) the MAPE (%) and share within ±10 % on ``holdout``'s op
    rows of a predictor trained on ``fit``; the rows of kinds it has no model for are
    left out (the roofline predicts them)."""
    artifact = train_predictor(fit, method=method, target=target, **train)
    rows = op_rows(holdout)
    rows = rows.assign(predicted_s=predicted_times_s(artifact, rows)).dropna(subset=["predicted_s"])
    out = []
    for (kind, _, _), group in rows.groupby(["kind", "dtype", "threads"], sort=False):
        errors = group["predicted_s"].to_numpy(float) / group["median_s"].to_numpy(float) - 1.0
        out.append({"kind": kind, "rows": len(group), **error_summary(np.asarray(errors))})
    return pd.DataFrame(out)


def compare(fit: pd.DataFrame, holdout: pd.DataFrame, **train) -> pd.DataFrame:
    """:func:`held_out_errors` of every method and target, side by side."""
    frames = []
    for method in METHODS:
        for target in TARGETS:
            frame = held_out_errors(fit, holdout, method, target, **train)
            frames.append(frame.assign(method=method, target=target))
    return pd.concat(frames, ignore_index=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="*", help="FIT.csv HOLDOUT.csv")
    parser.add_argument("--synthetic", action="store_true", help="synthetic tables instead")
    parser.add_argument("--min-rows", type=int, default=20)
    args = parser.parse_args(argv)
    if args.synthetic:
        fit, holdout = synthetic_table(80, seed=0), synthetic_table(40, seed=5, scale=2.0)
    elif len(args.tables) == 2:
        fit, holdout = (read_table(p) for p in args.tables)
    else:
        parser.error("give FIT.csv HOLDOUT.csv, or --synthetic")
    result = compare(fit, holdout, min_rows=args.min_rows)
    table = result.pivot_table(
        index="kind", columns=["method", "target"], values=["mape_pct", "within_10pct"]
    )
    with pd.option_context(
        "display.width", 250, "display.max_columns", None, "display.precision", 3
    ):
        print(table)
        overall = result.assign(w=result["rows"] * result["mape_pct"])
        summary = overall.groupby(["method", "target"])[["w", "rows"]].sum()
        print("\nrow-weighted MAPE (%):")
        print((summary["w"] / summary["rows"]).round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
