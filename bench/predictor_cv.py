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

``--curve 0,2,5,10 [--seeds 2]`` asks instead whether more real networks in the corpus
would help: each real CNN is predicted by a predictor trained on the sweeps, the small
fit networks and ``k`` of the other real CNNs drawn at random (one draw per seed), and
the mean share of kernels within ±10 % is printed per ``k``, for all kernels and for the
memory-bound ones (every kind but conv and fc). docs/calibration.md, "More real
networks".

Kernels of kinds the predictor has no model for (the roofline predicts them) are left
out of both sums and counted in ``uncovered``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from predictor_eval import predicted_times_s  # a sibling script: bench/ is sys.path[0]

from calibration.predictor_fit import op_rows, train_predictor
from calibration.statistic import STATISTIC_CHOICES, resolve_statistic
from calibration.table import read_table

#: Model-name prefixes of the networks left out one at a time.
NETWORK_PREFIXES = ("zoo_", "real_", "fit_")
#: The real CNNs among them: the zoo's and the published fit architectures.
REAL_PREFIXES = ("zoo_", "real_")


def leave_one_network_out(
    table: pd.DataFrame, drop: Sequence[str] = (), **train: Any
) -> pd.DataFrame:
    """One row per (network, threads): summed-kernel error (%), kernels within ±10 %
    (share), kernels predicted and uncovered, for a predictor trained without it.

    Parameters
    ----------
    table : DataFrame
        A fit measurement table (``read_table``), ``median_s`` holding the statistic.
    drop : sequence of str
        Model-name prefixes removed from every training set (and from the networks).
    **train
        Passed to :func:`~calibration.predictor_fit.train_predictor` (tests: fewer trees).
    """
    rows = table[~table["model"].astype(str).str.startswith(tuple(drop))] if drop else table
    networks = sorted({m for m in rows["model"].astype(str) if m.startswith(NETWORK_PREFIXES)})
    held_rows = op_rows(rows)
    out = []
    for name in networks:
        artifact = train_predictor(rows[rows["model"] != name], **train)
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


#: Kinds left out of the curve's memory-bound share (compute-bound, predicted well).
COMPUTE_KINDS = ("conv", "fc")


def real_network_curve(
    table: pd.DataFrame, sizes: Sequence[int], seeds: Sequence[int] = (0,), **train: Any
) -> pd.DataFrame:
    """One row per (network, k, seed, threads) for each real CNN (:data:`REAL_PREFIXES`):
    the share of its kernels within ±10 % (all, and of the kinds but
    :data:`COMPUTE_KINDS`) when the predictor is trained on every other model but the
    real CNNs, plus ``k`` of the others drawn at random (``numpy`` generator seeded
    ``seed``; ``k`` is capped at their number).

    With ``k`` = every other real CNN this is :func:`leave_one_network_out`'s training
    set; with ``k`` = 0 the predictor knows the sweeps and the small networks only.
    """
    rows = op_rows(table)
    real = sorted({m for m in table["model"].astype(str) if m.startswith(REAL_PREFIXES)})
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for name in real:
            others = [m for m in real if m != name]
            order = [others[i] for i in rng.permutation(len(others))]
            mine = rows[rows["model"] == name].reset_index(drop=True)
            for k in sorted({min(int(k), len(others)) for k in sizes}):
                left_out = set(order[k:]) | {name}
                artifact = train_predictor(table[~table["model"].isin(left_out)], **train)
                predicted = predicted_times_s(artifact, mine)
                ok = np.abs(predicted / mine["median_s"].to_numpy(float) - 1.0) <= 0.10
                memory = ~mine["kind"].isin(COMPUTE_KINDS).to_numpy()
                for threads in sorted(set(mine["threads"])):
                    mask = (mine["threads"] == threads).to_numpy()
                    out.append(
                        {
                            "network": name,
                            "k": k,
                            "seed": seed,
                            "threads": int(threads),
                            "within_10pct": float(ok[mask].mean()),
                            "memory_within_10pct": float(ok[mask & memory].mean())
                            if (mask & memory).any()
                            else np.nan,
                            "kernels": int(mask.sum()),
                        }
                    )
    return pd.DataFrame(out)


def _print_curve(result: pd.DataFrame) -> None:
    """Per (threads, k): kernel-weighted shares within ±10 % over networks and seeds."""
    for (threads, k), part in result.groupby(["threads", "k"]):
        weights = part["kernels"]
        share = (part["within_10pct"] * weights).sum() / weights.sum()
        memory = part["memory_within_10pct"].mean()
        print(f"  {threads} thread(s), k = {k:2d}: kernels within ±10 % {100 * share:.1f} %, "
              f"memory-bound kinds {100 * memory:.1f} % (mean over networks)")  # fmt: skip


def _read(path: str, statistic: str) -> pd.DataFrame:
    """The table with each thread count's rows in the statistic it is fitted with
    (:func:`calibration.statistic.resolve_statistic`, as ``socsim calibrate fit``)."""
    plain = read_table(Path(path))
    parts = []
    for threads, rows in plain.groupby("threads"):
        chosen = resolve_statistic(statistic, int(threads), plain.columns)
        parts.append(read_table(Path(path), statistic=chosen).loc[rows.index])
    return pd.concat(parts).sort_index()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+", help="fit tables (e.g. fit.csv fit_2t.csv)")
    parser.add_argument("--drop", action="append", default=[], help="model-name prefix")
    parser.add_argument("--statistic", choices=STATISTIC_CHOICES, default="auto")
    parser.add_argument("--curve", help="comma-separated numbers of other real CNNs")
    parser.add_argument("--seeds", type=int, default=1, help="random draws per --curve k")
    args = parser.parse_args(argv)
    if args.curve is not None:
        try:
            sizes = [int(k) for k in args.curve.split(",")]
        except ValueError:
            parser.error(f"--curve takes comma-separated whole numbers, got {args.curve!r}")
        if any(k < 0 for k in sizes) or args.seeds < 1:
            parser.error("--curve sizes must be 0 or more and --seeds at least 1")
        for path in args.tables:
            print(f"{path}: real CNNs predicted with k other real CNNs in the corpus")
            table = _read(path, args.statistic)
            if args.drop:
                table = table[~table["model"].astype(str).str.startswith(tuple(args.drop))]
            _print_curve(real_network_curve(table, sizes, range(args.seeds)))
        return 0
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
