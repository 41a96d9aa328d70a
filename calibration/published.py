"""``socsim calibrate published``: the phone presets against published latencies.

The table ``calibration/data/published.csv`` holds every figure read from the public
sources (TensorFlow Lite benchmark tables, TF-slim MobileNet READMEs), one row per
(device, model, unit, dtype, threads), each with its source (repository, path, commit,
table/column) and a role: ``fit`` (the free parameters of the presets were fitted on it,
:mod:`calibration.published_fit`), ``holdout`` (never seen by the fit) or ``excluded``
(no zoo equivalent, or a configuration socsim has no dtype/backend for; the note says
which). A configuration is the tuple :data:`CONFIG`; a configuration is either fit or
hold-out, never both (:func:`check_disjoint`).

A row's prediction is socsim's lone-request estimate (equal to the engine's latency) of
the zoo model at the published options and dtype, with conv + BatchNorm + activation
fused as the TFLite converter does (:func:`simulator.graph.techniques.fusion.fuse`,
pattern ``conv_norm_act``), every op on the row's unit of the device preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "published.csv"
DEVICES_DIR = ROOT / "scenarios" / "devices"
#: Published device -> (preset file under scenarios/devices, preset node).
DEVICES: Mapping[str, tuple[str, str]] = {
    "Pixel 1": ("pixel1_sd821.yaml", "pixel1"),
    "Pixel 2": ("pixel2_sd835.yaml", "pixel2"),
    "Pixel 3": ("pixel3_sd845.yaml", "pixel3"),
    "Pixel 4": ("pixel4_sd855.yaml", "pixel4"),
}
TABLE_COLUMNS = (
    "device",
    "soc",
    "model",
    "zoo",
    "options",
    "unit",
    "api",
    "dtype",
    "threads",
    "published_ms",
    "source",
    "role",
    "note",
)
OUTPUT_COLUMNS = (
    "device",
    "model",
    "unit",
    "dtype",
    "threads",
    "published_ms",
    "predicted_ms",
    "error",
    "role",
    "source",
)
ROLES = ("fit", "holdout", "excluded")
#: What makes two rows the same configuration (two sources may publish one twice).
CONFIG = ("device", "zoo", "options", "unit", "dtype", "threads")
#: The issue's targets: share of hold-out rows within ±25 %, fit median |error|.
HOLDOUT_BAND = 0.25
HOLDOUT_SHARE = 0.80
FIT_MEDIAN = 0.10


def load_table(path: Path = DATA) -> pd.DataFrame:
    """The published-figures table, checked.

    Raises
    ------
    SocsimError
        On missing columns, an unknown role or device, a non-positive latency, a fit or
        hold-out row without a zoo model or unit, or a configuration in both roles.
    """
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in TABLE_COLUMNS if c not in table.columns]
    if missing:
        raise SocsimError(f"{path}: missing columns {missing}")
    table["published_ms"] = pd.to_numeric(table["published_ms"], errors="coerce")
    table["threads"] = pd.to_numeric(table["threads"], errors="coerce").astype("Int64")
    problems = []
    for i, row in table.iterrows():
        where = f"{path.name} row {i + 2}"
        if row["role"] not in ROLES:
            problems.append(f"{where}: role '{row['role']}' is not one of {ROLES}")
        if row["device"] not in DEVICES:
            problems.append(f"{where}: unknown device '{row['device']}'")
        if not row["published_ms"] > 0:
            problems.append(f"{where}: published_ms must be > 0")
        if row["role"] != "excluded" and not (row["zoo"] and row["unit"]):
            problems.append(f"{where}: a {row['role']} row needs a zoo model and a unit")
    if problems:
        raise SocsimError("; ".join(problems))
    check_disjoint(table)
    return table


def check_disjoint(table: pd.DataFrame) -> None:
    """Raise when a configuration (:data:`CONFIG`) is both a fit and a hold-out row."""
    used = table[table["role"].isin(("fit", "holdout"))]
    roles = used.groupby(list(CONFIG), dropna=False)["role"].nunique()
    both = roles[roles > 1]
    if len(both):
        raise SocsimError(f"configurations both fit and hold-out: {list(both.index)}")


def parse_options(text: str) -> dict[str, Any]:
    """``width_multiplier=0.5;resolution=160`` -> ``{"width_multiplier": 0.5, ...}``."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = part.partition("=")
        if not sep:
            raise SocsimError(f"zoo options: expected KEY=VALUE, got '{part}'")
        out[key] = int(value) if value.isdigit() else float(value)
    return out


@cache
def model_graph(zoo: str, options: str, dtype: str) -> ModelGraph:
    """The zoo model at the published options and dtype, conv+BN+activation fused."""
    from simulator.graph import build_zoo_model
    from simulator.graph.techniques.fusion import fuse

    return fuse(build_zoo_model(zoo, dtype, **parse_options(options)), ("conv_norm_act",))


def load_device(device: str, devices_dir: Path = DEVICES_DIR):
    """(platform, node) of a published device's preset."""
    from calibration.device import load_platform

    file_name, node = DEVICES[device]
    return load_platform(devices_dir / file_name, node), node


def check_threads(row: Mapping[str, Any], platform, node: str) -> None:
    """Raise when a CPU row's thread count is not the preset unit's core count."""
    unit = platform.unit(f"{node}.{row['unit']}")
    if row["unit"] == "cpu" and unit.cores != row["threads"]:
        raise SocsimError(
            f"{row['device']} {row['model']}: published with {row['threads']} threads, "
            f"preset unit has {unit.cores} cores"
        )


def compare(table: pd.DataFrame, devices_dir: Path = DEVICES_DIR) -> pd.DataFrame:
    """Predict every fit and hold-out row; :data:`OUTPUT_COLUMNS`.

    ``error`` = (predicted - published) / published, a fraction.
    """
    from calibration.device import predict_latency_s

    used = table[table["role"].isin(("fit", "holdout"))]
    platforms = {d: load_device(d, devices_dir) for d in sorted(set(used["device"]))}
    rows = []
    for row in used.to_dict("records"):
        platform, node = platforms[row["device"]]
        check_threads(row, platform, node)
        graph = model_graph(row["zoo"], row["options"], row["dtype"])
        predicted_ms = predict_latency_s(graph, platform, node, row["unit"]) * 1e3
        rows.append(
            {
                **{c: row[c] for c in OUTPUT_COLUMNS if c in row},
                "predicted_ms": predicted_ms,
                "error": (predicted_ms - row["published_ms"]) / row["published_ms"],
            }
        )
    return pd.DataFrame(rows, columns=list(OUTPUT_COLUMNS))


def summary(result: pd.DataFrame) -> dict[str, float]:
    """Row counts, hold-out share within ±25 %, median |error| of fit and hold-out rows."""
    fit = result[result["role"] == "fit"]["error"].abs()
    hold = result[result["role"] == "holdout"]["error"].abs()
    return {
        "fit_rows": len(fit),
        "holdout_rows": len(hold),
        "fit_median_abs": float(np.median(fit)) if len(fit) else float("nan"),
        "holdout_median_abs": float(np.median(hold)) if len(hold) else float("nan"),
        "holdout_within": float(np.mean(hold <= HOLDOUT_BAND)) if len(hold) else float("nan"),
    }


def residual_spread(result: pd.DataFrame, role: str = "holdout") -> pd.DataFrame:
    """The spread of the presets' prediction errors, per (device, unit, dtype).

    Over the ``role`` rows of :func:`compare`'s result: ``rows``, ``bias`` (mean of
    ``log(published / predicted)``) and ``rms`` (its root mean square: bias and scatter
    together). A preset turns ``rms`` into the sd of its unit's peak for that dtype,
    ``sd = rms x peak`` (latency ~ 1 / peak for the compute-bound ops, so a relative
    latency error ``e`` is a relative peak error ``-e`` to first order;
    docs/uncertainty.md).
    """
    rows = result[result["role"] == role]
    log_error = np.log(rows["published_ms"] / rows["predicted_ms"])
    groups = log_error.groupby([rows["device"], rows["unit"], rows["dtype"]], sort=True)
    out = groups.agg(rows="count", bias="mean", rms=lambda e: float(np.sqrt(np.mean(e**2))))
    return out.reset_index()


def plot(result: pd.DataFrame, path: Path) -> Path:
    """Predicted vs published (log-log), fit and hold-out marked, ±25 % band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 5.5))
    low = 0.7 * min(result["published_ms"].min(), result["predicted_ms"].min())
    high = 1.4 * max(result["published_ms"].max(), result["predicted_ms"].max())
    line = np.array([low, high])
    ax.plot(line, line, color="black", linewidth=0.8)
    ax.fill_between(line, line * (1 - HOLDOUT_BAND), line * (1 + HOLDOUT_BAND), alpha=0.12)
    for role, marker in (("fit", "o"), ("holdout", "^")):
        part = result[result["role"] == role]
        for device, group in part.groupby("device"):
            ax.scatter(
                group["published_ms"],
                group["predicted_ms"],
                marker=marker,
                s=26,
                label=f"{device} {role}",
                facecolors="none" if role == "fit" else None,
                edgecolors="C" + str(sorted(DEVICES).index(device)),
                color="C" + str(sorted(DEVICES).index(device)),
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("published latency (ms)")
    ax.set_ylabel("socsim predicted latency (ms)")
    ax.set_title("Phone presets vs published TFLite latencies (band: ±25 %)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(out: Path, table_path: Path = DATA, devices_dir: Path = DEVICES_DIR) -> pd.DataFrame:
    """Compare, write ``out/published.csv`` and ``out/published.png``; the result table."""
    result = compare(load_table(table_path), devices_dir)
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "published.csv", index=False, float_format="%.6g")
    plot(result, out / "published.png")
    return result
