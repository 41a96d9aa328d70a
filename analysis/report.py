"""``socsim report``: one self-contained HTML page of a run folder or a sweep.

Figures are embedded as base64 PNG (or inline SVG data), tables as HTML; the page
needs no other file.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.kinds import PLOTS, decision_map_views, kinds_for, make_plot
from analysis.sources import Source, load_source
from analysis.style import figure_bytes
from simulator.output import visible_bidi, write_text

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f0f0f0; } img { max-width: 100%; }
.note { color: #666; font-size: 0.85em; }
"""
IMAGE_FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
# why latency climbs with the load (a fleet sweep), tabulated when not all NaN
LOAD_METRICS = ("airtime_utilisation", "edge_utilisation", "cloud_utilisation")
# summary columns a sweep report tabulates per point (when the table has them)
SWEEP_METRICS = (
    "latency_mean_s",
    "latency_p95_s",
    "throughput_rps",
    "energy_per_inference_j",
    "device_energy_per_inference_j",
    "deadline_met_rate",
    "dropped",
    *LOAD_METRICS,
)


def _figure_html(
    kind: str, source: Source, fmt: str, anchor: str = "", where: str = "", **options: Any
) -> str:
    figure = make_plot(kind, source, **options)
    data = base64.b64encode(figure_bytes(figure, fmt)).decode("ascii")
    caption = html.escape(PLOTS.get(kind).doc + (f", where {where}" if where else ""))
    return (
        f'<figure id="plot-{kind}{anchor}"><img alt="{kind}" src="data:{IMAGE_FORMATS[fmt]};'
        f'base64,{data}"><figcaption>{kind}: {caption}</figcaption></figure>'
    )


def _figures_html(source: Source, fmt: str) -> list[str]:
    """Every figure of ``source``; a sweep's decision maps as :func:`decision_map_views`
    says, with its notes (a map left out is said, never silent)."""
    parts = []
    for kind in kinds_for(source):
        if kind != "decision_map":
            parts.append(_figure_html(kind, source, fmt))
            continue
        views, notes = decision_map_views(source)
        parts += [f'<p class="note">{html.escape(note)}</p>' for note in notes]
        for index, view in enumerate(views):
            anchor = f"-{index + 1}" if view.fixed else ""
            parts.append(
                _figure_html(kind, view.source, fmt, anchor, view.fixed, x=view.x, y=view.y)
            )
    if source.kind == "sweep" and "decision_map" not in kinds_for(source):
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in decision_map_views(source)[1]]
    return parts


def _table_html(frame: pd.DataFrame, max_rows: int = 200) -> str:
    shown = frame.head(max_rows)
    text = shown.to_html(index=False, float_format=lambda v: f"{v:.6g}", na_rep="", border=0)
    if len(frame) > max_rows:
        text += f'<p class="note">first {max_rows} of {len(frame)} rows</p>'
    return text


def _run_tables(source: Source) -> list[tuple[str, pd.DataFrame]]:
    run = source.require_run()
    summary = run["summary"].T.reset_index()
    summary.columns = ["key", "value"]
    return [
        ("summary", summary),
        ("apps", run["apps"]),
        ("units", run["units"]),
        ("energy", run["energy"]),
    ]


def _sweep_tables(source: Source) -> list[tuple[str, pd.DataFrame]]:
    sweep = source.require_sweep()
    ok = sweep.ok
    metrics = [
        m for m in SWEEP_METRICS if m in ok and (m not in LOAD_METRICS or ok[m].notna().any())
    ]
    keys = ["point", *sweep.parameters]
    per_point = ok.groupby(keys, sort=True, dropna=False).agg(
        replicates=("replicate", "count"),
        decision=("decision", lambda s: ", ".join(sorted(set(map(str, s))))),
        **{m: (m, "mean") for m in metrics},
    )
    tables = [("points (means over replicates)", per_point.reset_index())]
    failed = sweep.table.drop(index=ok.index)
    if len(failed):
        columns = [c for c in (*keys, "replicate", "error") if c in failed]
        tables.append((f"failed runs ({len(failed)})", failed[columns]))
    return tables


def build_report(path: str | Path, fmt: str = "png") -> str:
    """The HTML page of a run folder or a sweep: every applicable figure and the tables.

    Parameters
    ----------
    path : str or Path
        A folder ``socsim run`` wrote, or a sweep folder / table.
    fmt : {"png", "svg"}
        How figures are embedded.

    Raises
    ------
    SocsimError
        When ``path`` is neither a run nor a sweep, or a figure cannot be drawn.
    """
    source = load_source(path)
    title = f"socsim {source.kind} report: {html.escape(str(source.path))}"
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>",
    ]
    if source.kind == "sweep":
        sweep = source.require_sweep()
        parts.append(
            f"<p>{sweep.table['point'].nunique()} points, {len(sweep.table)} runs, "
            f"{len(sweep.ok)} ok; swept: {html.escape(', '.join(sweep.parameters))}</p>"
        )
    parts.append("<h2>figures</h2>")
    parts += _figures_html(source, fmt)
    tables = _run_tables(source) if source.kind == "run" else _sweep_tables(source)
    for name, frame in tables:
        parts.append(f"<h2>{html.escape(name)}</h2>{_table_html(frame)}")
    parts.append("</body></html>")
    return visible_bidi("\n".join(parts))  # no U+202E reorders what the reader sees


def write_report(path: str | Path, out: str | Path, fmt: str = "png") -> Path:
    """Write :func:`build_report` of ``path`` to ``out``; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_text(out, build_report(path, fmt))  # staged, renamed when complete
