"""Judging a calibration corpus on the fit set alone: leave one network out.

``python bench/predictor_cv.py FIT.csv [--drop PREFIX ...] [--statistic auto]`` trains
the kernel predictor (context factors included, as ``socsim calibrate fit`` does) on
every fit model but one *network* (the zoo CNNs ``zoo_*``, the published fit
architectures ``real_*`` and the small synthetic networks ``fit_*``; the sweeps and
microbenchmarks always stay in), predicts that network's in-network kernels and
prints, per network, the error of the summed kernel time and the share of its kernels
within ±10 %. ``--drop sweep_narrow_`` leaves a family of sweeps out of every training
set, so two corpora are compared on the same held-out networks. The hold-out table is
never read: this is how sweep families are chosen (docs/calibration.md, "Choosing the
corpus").

Kernels of kinds the predictor has no model for (the roofline predicts them) are left
out of both sums and counted in ``uncovered``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from predictor_eval import predicted_times_s  # a sibling script: bench/ is sys.path[0]

from calibration.predictor_fit import op_rows, train_predictor
from calibration.table import STATISTIC_CHOICES, read_table, resolve_statistic

#: Model-name prefixes of the networks left out one at a time.
NETWORK_PREFIXES = ("zoo_", "real_", "fit_")
#: The real CNNs among them: the zoo's and the published fit architectures.
REAL_PREFIXES = ("zoo_", "real_")


def leave_one_network_out(table: pd.DataFrame, drop: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (network, threads): summed-kernel error (%), kernels within ±10 %
    (share), kernels predicted and uncovered, for a predictor trained without it.

    Parameters
    ----------
    table : DataFrame
        A fit measurement table (``read_table``), ``median_s`` holding the statistic.
    drop : sequence of str
        Model-name prefixes removed from every training set (and from the networks).
    """
    rows = table[~table["model"].astype(str).str.startswith(tuple(drop))] if drop else table
    networks = sorted({m for m in rows["model"].astype(str) if m.startswith(NETWORK_PREFIXES)})
    held_rows = op_rows(rows)
    out = []
    for name in networks:
        artifact = train_predictor(rows[rows["model"] != name])
        mine = held_rows[held_rows["model"] == name].reset_index(drop=True)
        predicted = predicted_times_s(artifact, mine)
        for threads, part in mine.groupby("threads"):
            p = predicted[mine["threads"] == threads]
            covered = ~np.isnan(p)
            measured = part["median_s"].to_numpy(float)[covered]
            errors = p[covered] / measured - 1.0
            out.append(
                {
                    "network": name,
                    "threads": int(threads),
                    "sum_error_pct": 100 * (p[covered].sum() / measured.sum() - 1.0),
                    "within_10pct": float(np.mean(np.abs(errors) <= 0.10)),
                    "kernels": int(covered.sum()),
                    "uncovered": int((~covered).sum()),
                }
            )
    return pd.DataFrame(out)


def _read(path: str, statistic: str) -> pd.DataFrame:
    """The table with each thread count's rows in the statistic it is fitted with."""
    parts = []
    for s in ("median", "q1"):
        frame = read_table(Path(path), statistic=s)
        keep = [resolve_statistic(statistic, int(t)) == s for t in frame["threads"]]
        parts.append(frame[np.asarray(keep, dtype=bool)])
    return pd.concat(parts).sort_index()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+", help="fit tables (e.g. fit.csv fit_2t.csv)")
    parser.add_argument("--drop", action="append", default=[], help="model-name prefix")
    parser.add_argument("--statistic", choices=STATISTIC_CHOICES, default="auto")
    args = parser.parse_args(argv)
    for path in args.tables:
        result = leave_one_network_out(_read(path, args.statistic), args.drop)
        with pd.option_context("display.width", 200, "display.precision", 2):
            print(f"{path} (dropped: {args.drop or 'nothing'})")
            print(result.to_string(index=False))
            names = result["network"].str
            parts = (
                ("zoo CNNs", result[names.startswith("zoo_")]),
                ("real CNNs (zoo + published)", result[names.startswith(REAL_PREFIXES)]),
                ("all networks", result),
            )
            for label, part in parts:
                if part.empty:
                    continue
                mape = part["sum_error_pct"].abs().mean()
                within = (part["within_10pct"] * part["kernels"]).sum() / part["kernels"].sum()
                print(f"  {label}: summed-kernel MAPE {mape:.1f} %, kernels within ±10 % "
                      f"{100 * within:.1f} %")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
