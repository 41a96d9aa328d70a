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

from calibration.device import load_platform, predict_latency_s, read_calibration_comments
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
) -> pd.DataFrame:
    """One row per model: measured wall median and IQR, predictions and errors (%).

    ``graphs[model][variant]`` is the graph predicted under ``variant`` (``original``,
    ``optimized``); the error columns are ``error_pct_<variant>``.
    """
    models = measured[measured["level"] == "model"]
    if models.empty:
        raise SocsimError("validate: the measurements have no end-to-end ('model') rows")
    check_held_out(list(models["model"]), device_path)
    platform = load_platform(device_path)
    rows = []
    for record in models.to_dict("records"):
        name = record["model"]
        if name not in graphs:
            raise SocsimError(f"validate: no ONNX graph for measured model '{name}'")
        row = {"model": name, "measured_s": record["median_s"], "iqr_s": record["iqr_s"]}
        for variant, graph in graphs[name].items():
            predicted = predict_latency_s(graph, platform)
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


def plot(table: pd.DataFrame, path: Path, variants: tuple[str, ...] = ("original",)) -> Path:
    """Predicted vs measured (ms, log-log) with the ±10 % band; written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured_ms = table["measured_s"].to_numpy(float) * 1e3
    fig, ax = plt.subplots(figsize=(5.2, 4.6), dpi=120)
    ax.set_xscale("log")
    ax.set_yscale("log")
    styles = {
        "original": {"marker": "o", "color": "C0"},
        "optimized": {"marker": "s", "facecolors": "none", "edgecolors": "C1", "s": 60},
    }
    for variant in variants:
        ax.scatter(
            measured_ms,
            table[f"predicted_s_{variant}"] * 1e3,
            zorder=3,
            label=f"predicted ({variant} graph)",
            **styles.get(variant, {"marker": "^"}),
        )
    low = min(measured_ms.min(), *(table[f"predicted_s_{v}"].min() * 1e3 for v in variants))
    high = max(measured_ms.max(), *(table[f"predicted_s_{v}"].max() * 1e3 for v in variants))
    line = np.array([low * 0.8, high * 1.25])
    ax.plot(line, line, "k-", lw=1, label="predicted = measured")
    ax.fill_between(
        line, line * (1 - WITHIN), line * (1 + WITHIN), color="grey", alpha=0.25, label="±10 %"
    )
    ax.errorbar(
        measured_ms,
        table[f"predicted_s_{variants[0]}"] * 1e3,
        xerr=table["iqr_s"].to_numpy(float) * 1e3 / 2,
        fmt="none",
        ecolor="C0",
        lw=0.8,
    )
    from matplotlib.ticker import FormatStrFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_formatter(FormatStrFormatter("%g"))
        axis.set_tick_params(which="minor", labelsize=7)
    ax.set_xlabel("measured median latency (ms)")
    ax.set_ylabel("socsim predicted latency (ms)")
    ax.set_title("Held-out models on host_cpu (bars: IQR of the runs)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _fmt_pct(value: float) -> str:
    return f"{value:+.1f} %"


def report_markdown(
    table: pd.DataFrame,
    provenance: Mapping[str, str],
    image: str,
    variants: tuple[str, ...] = ("original", "optimized"),
) -> str:
    """The validation report (markdown): headline figures, per-model table, plot."""
    heads = {v: summary(table, v) for v in variants}
    main = heads[variants[0]]
    lines = [
        f"Measured on **{provenance.get('host', '?')}** with {provenance.get('runtime', '?')}, "
        f"{provenance.get('threads', '?')} intra-op thread(s), {provenance.get('date', '?')}.",
        "",
        f"**Held-out models: {main['n']}; MAPE {main['mape']:.1f} %; within ±10 %: "
        f"{main['within_10'] * 100:.0f} % ({round(main['within_10'] * main['n'])} of "
        f"{main['n']}); worst {_fmt_pct(main['worst'])}** (graph: `{variants[0]}`).",
        "",
    ]
    for variant in variants[1:]:
        s = heads[variant]
        lines.append(
            f"With the `{variant}` graph: MAPE {s['mape']:.1f} %, within ±10 % "
            f"{s['within_10'] * 100:.0f} %, worst {_fmt_pct(s['worst'])}."
        )
    header = "| model | measured ms (IQR) |"
    rule = "|---|---:|"
    for variant in variants:
        header += f" ops {variant} | predicted ms {variant} | error {variant} |"
        rule += "---:|---:|---:|"
    lines += ["", header, rule]
    for row in table.to_dict("records"):
        text = f"| {row['model']} | {row['measured_s'] * 1e3:.3f} ({row['iqr_s'] * 1e3:.3f}) |"
        for variant in variants:
            text += (
                f" {row[f'ops_{variant}']} | {row[f'predicted_s_{variant}'] * 1e3:.3f} |"
                f" {_fmt_pct(row[f'error_pct_{variant}'])} |"
            )
        lines.append(text)
    lines += ["", f"![predicted vs measured]({image})", ""]
    return "\n".join(lines)


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
