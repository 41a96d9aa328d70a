"""The scorecard chart: five indicator panels, one bar per (combination, placement).

Built on a Figure with an Agg canvas (:func:`analysis.style.new_figure`), never through
pyplot, like every other figure of ``analysis/``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.style import new_figure, save_figure

#: (column, axis label, scale) of each panel, in the order of the five indicators.
PANELS: tuple[tuple[str, str, float], ...] = (
    ("accuracy_top1", "top-1 (%)", 1.0),
    ("latency_p50_s", "latency p50 (ms)", 1e3),
    ("device_inferences_per_j", "device inferences / J", 1.0),
    ("peak_memory_bytes", "peak memory (MB)", 1e-6),
    ("flexibility", "flexibility (native share)", 1.0),
)


def score_chart(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the five-panel bar chart of a scorecard to ``path`` (png, svg or pdf).

    Bars of Pareto-best rows are dark and their labels carry a ``*``; an unknown
    accuracy is drawn as a missing bar.
    """
    rows = zip(frame["combination"], frame["placement"], frame["pareto"], strict=True)
    labels = [f"{c} @ {p}{' *' if best else ''}" for c, p, best in rows]
    colours = ["#1f4e79" if best else "#9dc3e6" for best in frame["pareto"]]
    height = max(2.5, 0.3 * len(frame) + 1.0)
    fig = new_figure(4 * len(PANELS), height)
    axes = fig.subplots(1, len(PANELS), sharey=True)
    positions = range(len(frame))
    for ax, (column, label, scale) in zip(axes, PANELS, strict=True):
        values = frame[column].astype(float) * scale
        ax.barh(list(positions), values, color=colours)
        if column == "accuracy_top1" and values.notna().any():  # differences are small
            ax.set_xlim(max(0.0, values.min() - 5.0), values.max() + 1.0)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(list(positions), labels)
    axes[0].invert_yaxis()
    fig.suptitle("scorecard (* = Pareto-best over the five indicators)")
    return save_figure(fig, path)
