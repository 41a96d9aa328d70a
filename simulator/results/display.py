"""How a :class:`~simulator.results.RunResult` shows itself: a few lines of text for
``repr`` (the Python prompt, logs) and an HTML table for notebooks (``_repr_html_``).

Both show the headline figures and the size of every table, never the tables themselves
(a run's ``repr`` used to be every table's, 17,875 characters for the shipped AlexNet
example); the tables are attributes of the result.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

#: (summary key, label, unit, scale): the figures both views show, in display units
FIGURES = (
    ("latency_mean_s", "latency mean", "ms", 1e3),
    ("latency_p95_s", "latency p95", "ms", 1e3),
    ("energy_j", "energy (all nodes)", "J", 1.0),
    ("device_energy_per_inference_j", "device energy / inference", "mJ", 1e3),
)


def _figure(summary: Mapping[str, Any], key: str, unit: str, scale: float) -> str:
    value = summary.get(key)
    if not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value * scale:.4g} {unit}"


def _done(summary: Mapping[str, Any]) -> str:
    return f"{summary.get('completed', '?')}/{summary.get('requests', '?')}"


def table_sizes(tables: Mapping[str, Any]) -> dict[str, int]:
    """Rows of every table, by name (in the order of ``RunResult.tables()``)."""
    return {name: len(table) for name, table in tables.items()}


def text_view(summary: Mapping[str, Any], sizes: Mapping[str, int], trace: str) -> str:
    """``repr`` of a run: three lines (scenario; figures; table rows)."""
    figures = ", ".join(
        f"{label} {_figure(summary, key, unit, scale)}" for key, label, unit, scale in FIGURES
    )
    rows = " ".join(f"{name}={count}" for name, count in sizes.items())
    return (
        f"<RunResult scenario={summary.get('scenario', '?')!r} seed={summary.get('seed', '?')} "
        f"replicate={summary.get('replicate', '?')} trace={trace} "
        f"decision={summary.get('decision', '?')!r}\n"
        f"  requests done {_done(summary)}, {figures}\n"
        f"  tables (rows): {rows}>"
    )


def html_view(summary: Mapping[str, Any], sizes: Mapping[str, int], trace: str) -> str:
    """``_repr_html_`` of a run: the same figures and table sizes as two HTML tables;
    every text from the scenario is escaped."""
    esc = html.escape
    head = (
        f"<b>RunResult</b> <code>{esc(str(summary.get('scenario', '?')))}</code> "
        f"seed {esc(str(summary.get('seed', '?')))}, replicate "
        f"{esc(str(summary.get('replicate', '?')))}, trace {esc(trace)}"
    )
    figures = [("decision", str(summary.get("decision", "?"))), ("requests done", _done(summary))]
    figures += [(label, _figure(summary, key, unit, s)) for key, label, unit, s in FIGURES]
    left = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in figures)
    right = "".join(
        f"<tr><td><code>{esc(name)}</code></td><td>{count:,}</td></tr>"
        for name, count in sizes.items()
    )
    return (
        f"<div class='socsim-run'><p>{head}</p><table style='display:inline-table;"
        f"vertical-align:top;margin-right:2em'>{left}</table><table style='display:"
        f"inline-table;vertical-align:top'><tr><th>table</th><th>rows</th></tr>{right}"
        "</table></div>"
    )
