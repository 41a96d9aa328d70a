"""The validation report: markdown tables and the predicted-vs-measured figure.

Every hold-out model is listed with its end-to-end error and its kernels' errors, at
each measured thread count; the fit set's own errors follow (a model's error on the
data it was fitted on is a floor, not a forecast).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.reference import contended
from calibration.statistic import STATISTIC_WORDS
from calibration.table import is_sweep
from calibration.validate import WITHIN, error_stats

REPORT_BEGIN = "<!-- calibration-report:begin (written by `socsim calibrate all`) -->"
REPORT_END = "<!-- calibration-report:end -->"
STABILITY_BEGIN = "<!-- calibration-stability:begin (written by `socsim calibrate compare`) -->"
STABILITY_END = "<!-- calibration-stability:end -->"


@dataclass(frozen=True)
class ThreadResult:
    """What validation found at one thread count.

    Attributes
    ----------
    threads : int
        intra-op threads of the runs.
    device : str
        The preset file predicted with (its node).
    provenance : Mapping[str, str]
        The preset's ``calibration.*`` comments.
    holdout, holdout_kernels : pandas.DataFrame
        :func:`~calibration.validate.validation_table` and
        :func:`~calibration.validate.kernel_table` of the hold-out models.
    fit, fit_kernels : pandas.DataFrame
        The same on the fit models.
    """

    threads: int
    device: str
    provenance: Mapping[str, str]
    holdout: pd.DataFrame
    holdout_kernels: pd.DataFrame
    fit: pd.DataFrame
    fit_kernels: pd.DataFrame

    def headline(self) -> dict[str, float]:
        e2e = error_stats(self.holdout["error_pct_original"])
        kernels = error_stats(self.holdout_kernels["error_pct"])
        return {
            "n": e2e["n"],
            "mape": e2e["mape"],
            "within_10": e2e["within_10"],
            "kernels": kernels["n"],
            "kernel_mape": kernels["mape"],
            "kernel_within_10": kernels["within_10"],
        }


def plot(series: Mapping[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Predicted vs measured (ms, log-log) with the ±10 % band, one marker per series.

    Each table has ``measured_s``, ``predicted_s_original`` and ``iqr_s``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    fig, ax = plt.subplots(figsize=(5.4, 4.8), dpi=120)
    ax.set_xscale("log")
    ax.set_yscale("log")
    low, high = np.inf, 0.0
    for i, (label, table) in enumerate(series.items()):
        measured = table["measured_s"].to_numpy(float) * 1e3
        predicted = table["predicted_s_original"].to_numpy(float) * 1e3
        ax.errorbar(
            measured,
            predicted,
            xerr=table["iqr_s"].to_numpy(float) * 1e3 / 2,
            fmt="os^"[i % 3],
            color=f"C{i}",
            ms=5,
            lw=0.8,
            label=label,
            zorder=3,
        )
        low, high = (
            min(low, measured.min(), predicted.min()),
            max(high, measured.max(), predicted.max()),
        )
    line = np.array([low * 0.8, high * 1.25])
    ax.plot(line, line, "k-", lw=1, label="predicted = measured")
    ax.fill_between(
        line, line * (1 - WITHIN), line * (1 + WITHIN), color="grey", alpha=0.25, label="±10 %"
    )
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FormatStrFormatter("%g"))
    ax.set_xlabel("measured median latency (ms)")
    ax.set_ylabel("socsim predicted latency (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _pct(value: float) -> str:
    return f"{value:+.1f} %"


def _share(stats: Mapping[str, float]) -> str:
    hits = round(stats["within_10"] * stats["n"])
    return f"{stats['within_10'] * 100:.0f} % ({hits} of {stats['n']})"


def _kernels_by_model(kernels: pd.DataFrame) -> dict[str, dict[str, float]]:
    if kernels.empty:
        return {}
    return {m: error_stats(g["error_pct"]) for m, g in kernels.groupby("model", sort=False)}


def time_within(kernels: pd.DataFrame) -> float:
    """Share of the measured kernel time in kernels predicted within ±10 % (NaN if none)."""
    if kernels.empty:
        return float("nan")
    hit = kernels["error_pct"].abs() <= WITHIN * 100
    return float(kernels.loc[hit, "measured_s"].sum() / kernels["measured_s"].sum())


def kind_section(kernels: pd.DataFrame) -> list[str]:
    """Hold-out kernels per op kind: count, within ±10 %, median error, share of time."""
    if kernels.empty:
        return []
    lines = [
        "| kind | kernels | within ±10 % | median error | share of kernel time |",
        "|---|---:|---:|---:|---:|",
    ]
    total = kernels["measured_s"].sum()
    for kind, group in kernels.groupby("kind", sort=True):
        stats = error_stats(group["error_pct"])
        lines.append(
            f"| {kind} | {stats['n']} | {stats['within_10'] * 100:.0f} % | "
            f"{_pct(float(group['error_pct'].median()))} | "
            f"{group['measured_s'].sum() / total * 100:.1f} % |"
        )
    return [*lines, ""]


def holdout_section(result: ThreadResult) -> list[str]:
    """Headline and per-model table of the hold-out models at one thread count."""
    e2e = error_stats(result.holdout["error_pct_original"])
    kernels = error_stats(result.holdout_kernels["error_pct"])
    per_model = _kernels_by_model(result.holdout_kernels)
    prov = result.provenance
    lines = [
        f"### {result.threads} intra-op thread(s): preset `{result.device}`",
        "",
        f"Measured {prov.get('date', '?')} on {prov.get('host', '?')}, "
        f"{prov.get('runtime', '?')} ({prov.get('notes', '')}). Each time is the "
        f"{STATISTIC_WORDS.get(prov.get('statistic', 'median'), 'median')} of its runs.",
        "",
        f"**Held-out real architectures: {e2e['n']}; end to end MAPE {e2e['mape']:.1f} %, "
        f"within ±10 %: {_share(e2e)}. Kernels: {kernels['n']}, MAPE {kernels['mape']:.1f} %, "
        f"within ±10 %: {_share(kernels)}, "
        f"{time_within(result.holdout_kernels) * 100:.0f} % of the kernel time.**",
        "",
    ]
    lines += [
        f"Kernel model: learned predictor `{prov['predictor']}`, the roofline for other kinds."
        if prov.get("predictor")
        else "Kernel model: the roofline (no learned predictor).",
        "",
    ]
    busy = False
    if prov.get("reference_speedup"):
        gain = float(prov["reference_speedup"])
        busy = contended(gain, result.threads)
        lines += [
            f"The reference model ran {gain:.2f}x as fast at {result.threads} threads as at 1"
            + (
                " (about 1.6x on two free cores): the extra threads found the cores busy, "
                "and these figures describe a contended host."
                if busy
                else "."
            ),
            "",
        ]
    if prov.get("parallel_fractions_measured"):
        lines += [
            "Amdahl parallel fractions measured per kind (1 vs "
            f"{result.threads} threads, fit kernels): {prov['parallel_fractions_measured']}"
            + (" (on that contended host: its figures, not the runtime's)." if busy else "."),
            "",
        ]
    lines += [
        "| model | measured ms (IQR) | predicted ms | error | ops | kernels within ±10 % | "
        "kernel MAPE | e2e − Σ kernels, µs per op |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    kernel_sum = (
        result.holdout_kernels.groupby("model")["measured_s"].agg(["sum", "size"])
        if len(result.holdout_kernels)
        else pd.DataFrame(columns=["sum", "size"])
    )
    for row in result.holdout.to_dict("records"):
        k = per_model.get(row["model"], {"n": 0, "mape": float("nan"), "within_10": float("nan")})
        gap = float("nan")
        if row["model"] in kernel_sum.index:
            total, count = kernel_sum.loc[row["model"]]
            gap = (row["measured_s"] - total) / count * 1e6
        lines.append(
            f"| {row['model']} | {row['measured_s'] * 1e3:.2f} ({row['iqr_s'] * 1e3:.2f}) | "
            f"{row['predicted_s_original'] * 1e3:.2f} | {_pct(row['error_pct_original'])} | "
            f"{row['ops_original']} | {_share(k) if k['n'] else '-'} | {k['mape']:.1f} % | "
            f"{gap:.1f} |"
        )
    return [*lines, "", *kind_section(result.holdout_kernels)]


def fit_section(results: list[ThreadResult]) -> list[str]:
    """The fit set's own errors, per group of models and thread count."""
    lines = [
        "### Fit set (the data the presets were fitted on)",
        "",
        "| threads | group | models | end-to-end MAPE | within ±10 % | kernels | kernel MAPE "
        "| kernels within ±10 % |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        groups = result.fit["model"].map(_group)
        kgroups = result.fit_kernels["model"].map(_group) if len(result.fit_kernels) else []
        for group in sorted(set(groups)):
            e2e = error_stats(result.fit.loc[groups == group, "error_pct_original"])
            kern = (
                error_stats(result.fit_kernels.loc[kgroups == group, "error_pct"])
                if len(result.fit_kernels)
                else error_stats([])
            )
            lines.append(
                f"| {result.threads} | {group} | {e2e['n']} | {e2e['mape']:.1f} % | "
                f"{e2e['within_10'] * 100:.0f} % | {kern['n']} | {kern['mape']:.1f} % | "
                f"{kern['within_10'] * 100:.0f} % |"
            )
    return [*lines, ""]


def _group(model: str) -> str:
    if is_sweep(model):
        return "kernel sweeps"
    if model.startswith("zoo_"):
        return "zoo CNNs"
    if model.startswith("real_"):
        return "published CNNs"
    return "synthetic networks"


def report_markdown(
    results: list[ThreadResult], image: str, seconds: float, refit: bool = False
) -> str:
    """The whole generated report (``refit``: the fit of an earlier run's tables)."""
    lines = []
    for result in results:
        lines += holdout_section(result)
    lines += fit_section(results)
    took = (
        f"`socsim calibrate all --refit` re-fitted the tables measured as stated above "
        f"in {seconds:.0f} s; measuring them is most of a full run (its time: 'Stability "
        "and noise')."
        if refit
        else f"`socsim calibrate all` took {seconds:.0f} s."
    )
    lines += [
        took,
        "",
        f"![predicted vs measured]({image})",
        "",
    ]
    return "\n".join(lines)


def single_markdown(table: pd.DataFrame, kernels: pd.DataFrame, image: str) -> str:
    """The report of one ``calibrate validate`` run (hold-out only)."""
    e2e = error_stats(table["error_pct_original"])
    lines = [
        f"**{e2e['n']} held-out models: MAPE {e2e['mape']:.1f} %, within ±10 %: {_share(e2e)}**",
        "",
        "| model | measured ms (IQR) | predicted ms | error |",
        "|---|---:|---:|---:|",
    ]
    for row in table.to_dict("records"):
        lines.append(
            f"| {row['model']} | {row['measured_s'] * 1e3:.3f} ({row['iqr_s'] * 1e3:.3f}) | "
            f"{row['predicted_s_original'] * 1e3:.3f} | {_pct(row['error_pct_original'])} |"
        )
    if len(kernels):
        k = error_stats(kernels["error_pct"])
        lines += ["", f"Kernels: {k['n']}, MAPE {k['mape']:.1f} %, within ±10 %: {_share(k)}."]
    return "\n".join([*lines, "", f"![predicted vs measured]({image})", ""])


def splice_report(
    docs: Path, report: str, begin: str = REPORT_BEGIN, end: str = REPORT_END
) -> None:
    """Replace the text between the ``begin`` and ``end`` markers of ``docs`` (append
    them if absent)."""
    text = docs.read_text() if docs.exists() else "# Calibration\n"
    block = f"{begin}\n{report}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    text = (
        pattern.sub(lambda _: block, text) if pattern.search(text) else text + "\n" + block + "\n"
    )
    docs.write_text(text)
