"""``socsim calibrate compare DIR1 DIR2``: how far two calibration runs agree.

The stability target is that two consecutive ``calibrate all`` runs predict every
hold-out model within ±3 % of each other. This reads two output folders
(``validation.csv``, ``validation_2t.csv`` and the ``reference*.csv`` of
:mod:`calibration.reference`) and says, per thread count, how far the predictions
moved, how far the measurements moved, and how far the host's own reference model
moved: predictions cannot agree better than the host they were fitted on.

Kernel by kernel (``kernels*.csv``) it says how many of the hold-out models' kernels the
two runs *measured* within ±10 % of each other: no predictor can be expected to match one
run's kernel measurements much more often than a second measurement of the same kernel
does, so this is the host's ceiling for the kernel-level accuracy figure.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.reference import spread
from simulator.errors import SocsimError

PREDICTED = "predicted_s_original"
#: Kernel-level agreement band (a share of kernels within ±10 %, as the report's).
KERNEL_BAND = 0.10


def _suffixes(folder: Path) -> dict[str, int]:
    """``{"": 1, "_2t": 2, ...}``: the thread counts a folder has validation tables of."""
    out = {}
    for path in sorted(folder.glob("validation*.csv")):
        match = re.fullmatch(r"validation(_(\d+)t)?\.csv", path.name)
        if match:
            out[match.group(1) or ""] = int(match.group(2) or 1)
    return out


def _read(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise SocsimError(f"compare: cannot read {path}: {exc}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SocsimError(f"compare: {path} lacks column(s) {missing}")
    return frame


def compare_tables(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Per model of both validation tables: predictions and measurements of each run and
    their changes (%, second / first - 1)."""
    columns = ["model", "measured_s", PREDICTED]
    joined = first[columns].merge(second[columns], on="model", suffixes=("_1", "_2"))
    joined["predicted_change_pct"] = (joined[f"{PREDICTED}_2"] / joined[f"{PREDICTED}_1"] - 1) * 100
    joined["measured_change_pct"] = (joined["measured_s_2"] / joined["measured_s_1"] - 1) * 100
    return joined


def _q1_within(first: Path, second: Path, suffix: str) -> float:
    """Largest change of a hold-out model's lower-quartile time (``q1_s`` of the
    ``holdout`` tables, %); NaN when either table lacks it."""
    tables = [Path(f) / f"holdout{suffix}.csv" for f in (first, second)]
    if not all(t.exists() for t in tables):
        return float("nan")
    one, two = (_read(t, ("level", "model")) for t in tables)
    if "q1_s" not in one.columns or "q1_s" not in two.columns:
        return float("nan")
    columns = ["model", "q1_s"]
    joined = one.loc[one["level"] == "model", columns].merge(
        two.loc[two["level"] == "model", columns], on="model"
    )
    return float((joined["q1_s_y"] / joined["q1_s_x"] - 1).abs().max() * 100)


def kernel_agreement(
    first: pd.DataFrame, second: pd.DataFrame, models: Collection[str]
) -> dict[str, float]:
    """How two runs' kernel tables (``model``, ``node``, ``measured_s``, ``predicted_s``)
    agree on the kernels of ``models``, as shares (0-1) within ±:data:`KERNEL_BAND`.

    Returns ``n`` (kernels in both tables), ``measured`` (the two measurements of a
    kernel within the band of each other, second / first - 1), ``predicted`` (the two
    predictions likewise) and ``accuracy_1`` / ``accuracy_2`` (each run's predictions
    within the band of its own measurements); all NaN when no kernel is in both.
    """
    columns = ["model", "node", "measured_s", "predicted_s"]
    joined = first.loc[first["model"].isin(models), columns].merge(
        second[columns], on=["model", "node"], suffixes=("_1", "_2")
    )
    if joined.empty:
        nan = float("nan")
        return {"n": 0, "measured": nan, "predicted": nan, "accuracy_1": nan, "accuracy_2": nan}

    def within(num: str, den: str) -> float:
        return float(((joined[num] / joined[den] - 1).abs() <= KERNEL_BAND + 1e-12).mean())

    return {
        "n": len(joined),
        "measured": within("measured_s_2", "measured_s_1"),
        "predicted": within("predicted_s_2", "predicted_s_1"),
        "accuracy_1": within("predicted_s_1", "measured_s_1"),
        "accuracy_2": within("predicted_s_2", "measured_s_2"),
    }


def _kernels(
    first: Path, second: Path, suffix: str, models: Collection[str]
) -> dict[str, float] | None:
    """:func:`kernel_agreement` of the folders' ``kernels{suffix}.csv``; None when either
    folder lacks it."""
    tables = [Path(f) / f"kernels{suffix}.csv" for f in (first, second)]
    if not all(t.exists() for t in tables):
        return None
    needed = ("model", "node", "measured_s", "predicted_s")
    one, two = (_read(t, needed) for t in tables)
    return kernel_agreement(one, two, models)


def compare_folders(first: Path, second: Path) -> list[dict]:
    """One summary per thread count both folders validated.

    Each has ``threads``, ``table`` (:func:`compare_tables`), ``within_pct`` (largest
    prediction change, absolute), ``worst`` (its model), ``tracking_pts`` (largest
    difference, in percentage points, between a model's prediction change and its
    measurement change: how far the method moved apart from the host) and
    ``tracking_worst`` (its model), ``measured_within_pct``,
    ``reference_change_pct`` (the reference model's median of round medians, second /
    first - 1; NaN without reference tables), ``reference_spread_pct`` (the larger
    within-run spread of the two) and ``kernels`` (:func:`kernel_agreement` over the
    hold-out models' kernels; None without kernel tables).

    Raises
    ------
    SocsimError
        When a folder is missing, or the two share no validated thread count or model.
    """
    for folder in (first, second):
        if not Path(folder).is_dir():
            raise SocsimError(f"compare: no folder {folder}")
    mine, theirs = _suffixes(first), _suffixes(second)
    common = [s for s in mine if s in theirs]
    if not common:
        raise SocsimError(
            f"compare: {first} and {second} have no validation table of the same thread "
            "count (validation.csv, validation_2t.csv: written by `socsim calibrate all`)"
        )
    out = []
    for suffix in common:
        needed = ("model", "measured_s", PREDICTED)
        name = f"validation{suffix}.csv"
        table = compare_tables(_read(first / name, needed), _read(second / name, needed))
        if table.empty:
            raise SocsimError(f"compare: the two {name} share no model")
        worst = int(np.argmax(table["predicted_change_pct"].abs().to_numpy()))
        gap = (table["predicted_change_pct"] - table["measured_change_pct"]).abs().to_numpy()
        summary = {
            "threads": mine[suffix],
            "table": table,
            "within_pct": float(table["predicted_change_pct"].abs().max()),
            "worst": str(table["model"].iloc[worst]),
            "tracking_pts": float(gap.max()),
            "tracking_worst": str(table["model"].iloc[int(np.argmax(gap))]),
            "measured_within_pct": float(table["measured_change_pct"].abs().max()),
            "reference_change_pct": float("nan"),
            "reference_spread_pct": float("nan"),
            "q1_within_pct": _q1_within(first, second, suffix),
            "kernels": _kernels(first, second, suffix, set(table["model"])),
        }
        refs = [Path(f) / f"reference{suffix}.csv" for f in (first, second)]
        if all(r.exists() for r in refs):
            one, two = (spread(_read(r, ("median_s",))) for r in refs)
            summary["reference_change_pct"] = (two["median_s"] / one["median_s"] - 1) * 100
            summary["reference_spread_pct"] = max(one["spread_pct"], two["spread_pct"])
        out.append(summary)
    return out


def compare_markdown(first: Path, second: Path, summaries: list[dict]) -> str:
    """The comparison as markdown: a headline per thread count and its per-model table."""
    lines = [f"Two calibration runs compared: `{first}` and `{second}`.", ""]
    for s in summaries:
        reference = (
            f"the host's reference model moved {s['reference_change_pct']:+.1f} % "
            f"(within a run its round medians spread up to {s['reference_spread_pct']:.1f} %)"
            if np.isfinite(s["reference_change_pct"])
            else "no reference model measured"
        )
        q1 = (
            f" (their lower quartiles within {s['q1_within_pct']:.1f} %)"
            if np.isfinite(s["q1_within_pct"])
            else ""
        )
        lines += [
            f"**{s['threads']} thread(s): two runs agree within {s['within_pct']:.1f} % "
            f"(worst {s['worst']}); the measurements within {s['measured_within_pct']:.1f} %"
            f"{q1}; {reference}. Each prediction moved with its own measurement within "
            f"{s['tracking_pts']:.1f} points (worst {s['tracking_worst']}).**",
            "",
        ]
        kernels = s.get("kernels")
        if kernels and kernels["n"]:
            lines += [
                f"Kernels of these models ({kernels['n']}): the two runs measured "
                f"{kernels['measured'] * 100:.1f} % of them within ±10 % of each other (no "
                "prediction can be expected to match one run's kernels much more often), "
                f"predicted {kernels['predicted'] * 100:.1f} % within ±10 % of each other; "
                f"each run's predictions within ±10 % of its own measurements: "
                f"{kernels['accuracy_1'] * 100:.1f} % and {kernels['accuracy_2'] * 100:.1f} %.",
                "",
            ]
        lines += [
            "| model | predicted ms, run 1 | run 2 | change "
            "| measured ms, run 1 | run 2 | change |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for row in s["table"].to_dict("records"):
            lines.append(
                f"| {row['model']} | {row[f'{PREDICTED}_1'] * 1e3:.2f} | "
                f"{row[f'{PREDICTED}_2'] * 1e3:.2f} | {row['predicted_change_pct']:+.1f} % | "
                f"{row['measured_s_1'] * 1e3:.2f} | {row['measured_s_2'] * 1e3:.2f} | "
                f"{row['measured_change_pct']:+.1f} % |"
            )
        lines.append("")
    return "\n".join(lines)
