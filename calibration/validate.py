"""``validate``: socsim's end-to-end predictions on held-out models vs measured medians.

For each held-out model the prediction is socsim's lone-request estimate with every op
on the calibrated ``host_cpu.cpu`` unit, for the graph the user would give socsim: the
original ONNX file imported with ``fuse="ort"`` (socsim's own model of ORT's fusions).
The graph of the nodes ORT actually ran (its saved optimised model, ``fuse="none"``) is
predicted too, which separates cost-model error from fusion-model error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.device import (
    UNIT,
    calibration_number,
    load_platform,
    node_of,
    predict_latency_s,
    read_calibration_comments,
)
from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph

WITHIN = 0.10


def check_held_out(models: list[str], device_path: Path) -> None:
    """Raise when a model to validate was one the device preset was fitted on."""
    fitted = read_calibration_comments(device_path).get("fit_models", "")
    used = {m.strip() for m in fitted.split(",") if m.strip()}
    shared = sorted(used & set(models))
    if shared:
        raise SocsimError(
            f"validation models {shared} were used to fit {device_path}; validate on held-out "
            "models only"
        )


def validation_table(
    measured: pd.DataFrame,
    device_path: Path,
    graphs: Mapping[str, Mapping[str, ModelGraph]],
    held_out: bool = True,
) -> pd.DataFrame:
    """One row per model: measured wall median and IQR, predictions and errors (%).

    ``graphs[model][variant]`` is the graph predicted under ``variant`` (``original``,
    ``optimized``); the error columns are ``error_pct_<variant>``. ``held_out=False``
    reports on the fit models themselves (the fit-set errors).
    """
    models = measured[measured["level"] == "model"]
    if models.empty:
        raise SocsimError("validate: the measurements have no end-to-end ('model') rows")
    if held_out:
        check_held_out(list(models["model"]), device_path)
    node = node_of(device_path)
    platform = load_platform(device_path, node)
    rows = []
    for record in models.to_dict("records"):
        name = record["model"]
        if name not in graphs:
            raise SocsimError(f"validate: no ONNX graph for measured model '{name}'")
        row = {"model": name, "measured_s": record["median_s"], "iqr_s": record["iqr_s"]}
        for variant, graph in graphs[name].items():
            predicted = predict_latency_s(graph, platform, node)
            row[f"ops_{variant}"] = len(graph)
            row[f"predicted_s_{variant}"] = predicted
            row[f"error_pct_{variant}"] = (predicted / record["median_s"] - 1.0) * 100
        rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, variant: str = "original") -> dict[str, float]:
    """``n``, ``mape`` (%), ``within_10`` (share of models within ±10 %), ``worst`` (%)."""
    errors = table[f"error_pct_{variant}"].to_numpy(float)
    return {
        "n": len(errors),
        "mape": float(np.mean(np.abs(errors))),
        "within_10": float(np.mean(np.abs(errors) <= WITHIN * 100)),
        "worst": float(errors[np.argmax(np.abs(errors))]),
    }


def kernel_table(
    measured: pd.DataFrame, device_path: Path, graphs: Mapping[str, ModelGraph]
) -> pd.DataFrame:
    """Kernel-level errors: every profiled node of ``measured`` against socsim's op time.

    ``graphs[model]`` is the graph ORT ran (``fuse="none"``: one op per profiled node,
    same names). The prediction is the unit's op time without the runtime's per-op
    overhead between kernels (``calibration.runtime_overhead_us_per_op``), which the
    profiler does not see, divided by the runtime scale (``calibration.runtime_scale``,
    1 in presets fitted before it), with the profiler's own cost per kernel
    (``calibration.profiler_us_per_kernel``), which it does see, added: a profiled
    kernel is compared with a profiled kernel.
    """
    from simulator.hardware.cost import op_time_s

    node = node_of(device_path)
    unit = load_platform(device_path, node).unit(f"{node}.{UNIT}")
    comments = read_calibration_comments(device_path)
    # profiled kernel = (op time - the runtime's overhead) / scale + the profiler's cost
    profiler_s = calibration_number(device_path, comments, "profiler_us_per_kernel", 0.0) * 1e-6
    overhead_s = calibration_number(device_path, comments, "runtime_overhead_us_per_op", 0.0) * 1e-6
    scale = calibration_number(device_path, comments, "runtime_scale", 1.0, low=1e-3)
    rows = []
    for record in measured[measured["level"] == "op"].to_dict("records"):
        graph = graphs.get(record["model"])
        if graph is None or record["node"] not in graph:
            continue
        predicted = (op_time_s(graph.op(record["node"]), unit) - overhead_s) / scale + profiler_s
        rows.append(
            {
                "model": record["model"],
                "node": record["node"],
                "kind": record["kind"],
                "op_type": record["op_type"],
                "measured_s": record["median_s"],
                "predicted_s": predicted,
                "error_pct": (predicted / record["median_s"] - 1.0) * 100,
            }
        )
    return pd.DataFrame(rows)


def error_stats(errors_pct) -> dict[str, float]:
    """``n``, ``mape`` (%), ``within_10`` (share within ±10 %) of percentage errors."""
    errors = np.abs(np.asarray(errors_pct, float))
    if not len(errors):
        return {"n": 0, "mape": float("nan"), "within_10": float("nan")}
    return {
        "n": len(errors),
        "mape": float(np.mean(errors)),
        "within_10": float(np.mean(errors <= WITHIN * 100)),
    }


def graphs_for(
    names: list[str],
    originals: Mapping[str, Path],
    optimized: Mapping[str, Path],
    loader: Callable[[Path, str], ModelGraph],
) -> dict[str, dict[str, ModelGraph]]:
    """``{model: {"original": fuse="ort" graph, "optimized": fuse="none" graph}}``."""
    out = {}
    for name in names:
        variants = {"original": loader(originals[name], "ort")}
        if name in optimized and Path(optimized[name]).exists():
            variants["optimized"] = loader(optimized[name], "none")
        out[name] = variants
    return out
