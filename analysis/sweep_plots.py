"""Figures over a sweep table: the offload decision map, the Pareto front, sweep curves.

Every function takes the table (one row per point × replicate, the columns of
``analysis.sources``), uses its ``status == "ok"`` rows, and returns a Figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from analysis.pareto import pareto_front
from analysis.sources import require_columns, require_rows
from analysis.style import (
    colours,
    fit_titles,
    format_value,
    label_of,
    log_axis,
    new_figure,
    scaled,
    short,
    unit_of,
)
from simulator.errors import SocsimError
from simulator.output.cells import cell_columns

# metrics where more is better; every other metric (latency, energy) is minimised
HIGHER_IS_BETTER = ("throughput_rps", "inferences_per_j", "device_inferences_per_j")
#: the Monte Carlo sample of a row (simulator.sweep.design.MC_COLUMN; docs/uncertainty.md)
MC_COLUMN = "mc_sample"
#: how far a cell won by a share p of the samples fades to white: (1 - p) x this
_FADE = 0.9


def _ok_rows(table: pd.DataFrame, columns: Sequence[str], what: str) -> pd.DataFrame:
    require_columns(table, columns, what)
    rows = table[table["status"] == "ok"] if "status" in table else table
    require_rows(rows, f"{what} (rows with status 'ok')")
    # a mapping-valued parameter (a table from the Python API) as its canonical text
    return cell_columns(rows, columns)


def _one_point_per_cell(rows: pd.DataFrame, keys: Sequence[str]) -> None:
    """Refuse cells that mix sweep points: a third parameter varies inside them."""
    if "point" not in rows:
        return
    counts = rows.groupby(list(keys), sort=True)["point"].nunique()
    if counts.max() <= 1:
        return
    cell = rows.set_index(list(keys)).loc[[counts.idxmax()]]
    # the contract puts the swept parameters between `point` and `replicate`
    columns = list(rows.columns)
    span = (
        columns[columns.index("point") + 1 : columns.index("replicate")]
        if "replicate" in columns
        else []
    )
    varying = [c for c in span if c not in keys and cell[c].nunique() > 1]
    raise SocsimError(
        f"decision map: a cell of {' × '.join(keys)} holds {counts.max()} sweep points; "
        f"{', '.join(varying) or 'another parameter'} also varies: keep one value "
        "(socsim plot --where PATH=VALUE) or compare over it (--by PATH)"
    )


def _better_is_higher(metric: str) -> bool:
    return metric in HIGHER_IS_BETTER or metric.endswith("_rate")


def _log_scale(values: pd.Series) -> bool:
    """A numeric axis spanning 20× or more of positive values reads best in log (an
    ``unbounded`` figure, inf, has no place on the axis and does not count)."""
    numeric = pd.to_numeric(values, errors="coerce").replace([math.inf, -math.inf], math.nan)
    numeric = numeric.dropna()
    return bool(len(numeric)) and numeric.min() > 0 and numeric.max() / numeric.min() >= 20


def _mode(labels: pd.Series) -> str:
    counts = labels.astype(str).value_counts()
    # most frequent; ties broken alphabetically so the map is deterministic
    return sorted(counts[counts == counts.max()].index)[0]


def _winners(
    rows: pd.DataFrame, x: str, y: str, by: str | None, metric: str, latency: str, energy: str
) -> pd.DataFrame:
    """One row per (x, y) cell: ``winner`` label, mean latency and energy of the winner."""
    if by is None:
        cells = rows.groupby([x, y], sort=True)
        out = cells[[latency, energy]].mean()
        out["winner"] = cells["decision"].agg(_mode)
        return out.reset_index()
    columns = list(dict.fromkeys([metric, latency, energy]))  # the metric may be one of them
    means = rows.groupby([x, y, by], sort=True)[columns].mean().reset_index()
    means = means.dropna(subset=[metric])
    require_rows(means, f"decision map: the rows with a value of {metric!r}")
    cells = means.groupby([x, y], sort=True)[metric]
    # the first best in sort order of `by`: ties resolve the same way every time
    picks = cells.idxmax() if _better_is_higher(metric) else cells.idxmin()
    out = means.loc[picks.to_numpy()].copy()
    out["winner"] = out[by].map(format_value)
    return out[[x, y, latency, energy, "winner"]].reset_index(drop=True)


def _sampled_winners(
    rows: pd.DataFrame, x: str, y: str, by: str | None, metric: str, latency: str, energy: str
) -> pd.DataFrame:
    """:func:`_winners` per Monte Carlo sample, then per cell the winner of most samples
    (ties alphabetically), the ``probability`` = share of the cell's samples it wins, and
    its mean latency and energy over the samples it wins."""
    per_sample = []
    for sample, part in rows.groupby(MC_COLUMN, sort=True):
        won = _winners(part, x, y, by, metric, latency, energy)
        per_sample.append(won.assign(**{MC_COLUMN: sample}))
    everything = pd.concat(per_sample, ignore_index=True)
    out = []
    for (x_value, y_value), cell in everything.groupby([x, y], sort=True):
        winner = _mode(cell["winner"])
        won = cell[cell["winner"].astype(str) == winner]
        out.append(
            {
                x: x_value,
                y: y_value,
                latency: won[latency].mean(),
                energy: won[energy].mean(),
                "winner": winner,
                "probability": len(won) / len(cell),
            }
        )
    return pd.DataFrame(out)


def _text_colour(hex_colour: str, fade: float = 0.0) -> str:
    r, g, b = (c + (1.0 - c) * fade for c in to_rgb(hex_colour))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def decision_map(
    table: pd.DataFrame,
    x: str,
    y: str,
    by: str | None = None,
    metric: str = "latency_mean_s",
    latency: str = "latency_mean_s",
    energy: str = "device_energy_per_inference_j",
    title: str | None = None,
) -> Figure:
    """The winning placement per cell of a two-parameter sweep, as a categorical heatmap.

    Each cell is coloured by its winner and annotated with the winner's mean
    ``latency`` and ``energy`` over replicates. A table with Monte Carlo samples (a
    ``mc_sample`` column, ``sweep.mc_samples``) is decided per sample: a cell's winner
    is the one that wins most samples, the cell is faded toward white by the share of
    samples it loses and annotated with the share it wins (``P 0.85``).

    Parameters
    ----------
    table : DataFrame
        A sweep table (one row per point × replicate).
    x, y : str
        The two swept parameters (column names, i.e. scenario paths).
    by : str, optional
        A column the points compete over (e.g. ``placement.policy``): the winner of a
        cell is the value of ``by`` with the best mean ``metric``. Without it, the
        winner is the cell's ``decision`` label (the most frequent over replicates).
    metric : str
        Picks the winner when ``by`` is given; minimised, except throughput,
        inferences per joule and rates, which are maximised.
    latency, energy : str
        The summary columns written in each cell.
    title : str, optional
        Replaces the default title.

    Returns
    -------
    Figure

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or no row is ok.
    """
    needed = [x, y, latency, energy, *([by, metric] if by else ["decision"])]
    rows = _ok_rows(table, needed, "decision map: the sweep table")
    sampled = MC_COLUMN in rows and rows[MC_COLUMN].nunique() > 1
    keys = [x, y, *([by] if by else []), *([MC_COLUMN] if MC_COLUMN in rows else [])]
    _one_point_per_cell(rows, keys)
    if sampled:
        cells = _sampled_winners(rows, x, y, by, metric, latency, energy)
    else:
        cells = _winners(rows, x, y, by, metric, latency, energy)
    xs, ys = sorted(cells[x].unique()), sorted(cells[y].unique())
    order = list(dict.fromkeys(cells.sort_values([x, y])["winner"]))
    palette = colours(order)
    code = {name: i for i, name in enumerate(order)}
    grid = np.full((len(ys), len(xs)), np.nan)
    for row in cells.itertuples(index=False):
        values = dict(zip(cells.columns, row, strict=True))
        grid[ys.index(values[y]), xs.index(values[x])] = code[values["winner"]]

    figure = new_figure(max(6.5, 0.85 * len(xs) + 3.0), max(4.0, 0.65 * len(ys) + 2.0))
    axes = figure.add_subplot()
    cmap = ListedColormap([palette[name] for name in order]).with_extremes(bad="#dddddd")
    axes.imshow(
        np.ma.masked_invalid(grid),
        cmap=cmap,
        vmin=-0.5,
        vmax=len(order) - 0.5,
        origin="lower",
        aspect="auto",
        interpolation="nearest",
    )
    if sampled:  # a white veil, opaque where the winner loses many samples
        veil = np.zeros((len(ys), len(xs), 4))
        veil[..., :3] = 1.0
        for row in cells.itertuples(index=False):
            values = dict(zip(cells.columns, row, strict=True))
            fade = (1.0 - values["probability"]) * _FADE
            veil[ys.index(values[y]), xs.index(values[x]), 3] = fade
        axes.imshow(veil, origin="lower", aspect="auto", interpolation="nearest")
    lat_unit, lat_scale = unit_of(latency)
    en_unit, en_scale = unit_of(energy)
    size = 9 if len(xs) <= 10 else 8 if len(xs) <= 14 else 7
    for row in cells.itertuples(index=False):
        values = dict(zip(cells.columns, row, strict=True))
        text = (
            f"{short(values[latency] * lat_scale)} {lat_unit}\n"
            f"{short(values[energy] * en_scale)} {en_unit}"
        )
        fade = 0.0
        if sampled:
            text += f"\nP {values['probability']:.2f}"
            fade = (1.0 - values["probability"]) * _FADE
        axes.text(
            xs.index(values[x]),
            ys.index(values[y]),
            text,
            ha="center",
            va="center",
            fontsize=size,
            color=_text_colour(palette[values["winner"]], fade),
        )
    axes.set_xticks(range(len(xs)), [format_value(v) for v in xs])
    axes.set_yticks(range(len(ys)), [format_value(v) for v in ys])
    axes.set_xlabel(label_of(x))
    axes.set_ylabel(label_of(y))
    what = f"best {by} by {label_of(metric)}" if by else "winning decision"
    shares = ""
    if sampled:
        samples = rows[MC_COLUMN].nunique()
        shares = f";\nP: the share of {samples} Monte Carlo samples it wins, pale when low"
    axes.set_title(
        title or f"{what} per cell\n(cells: {label_of(latency)}, {label_of(energy)}{shares})",
    )
    handles = [Patch(facecolor=palette[name], label=name) for name in order]
    if np.isnan(grid).any():
        handles.append(Patch(facecolor="#dddddd", label="no ok run"))
    figure.legend(handles=handles, title=by or "decision", loc="outside right center")
    return fit_titles(figure)


def pareto_plot(
    table: pd.DataFrame,
    latency: str = "latency_mean_s",
    energy: str = "device_energy_per_inference_j",
    colour: str = "decision",
    title: str | None = None,
    x: str | None = None,
    y: str | None = None,
) -> Figure:
    """Two indicators against each other, one marker per sweep point, the front highlighted.

    ``x`` and ``y`` name any two columns or indicators (``accuracy``, ``latency``,
    ``energy``, ``memory``, ``flexibility``: :data:`simulator.score.card.INDICATOR_COLUMNS`);
    by default latency (``latency``) against energy (``energy``). Each point is the mean of
    its replicates (points are told apart by ``point`` when the table has it, otherwise
    every row is a point). Markers are coloured by ``colour`` (a categorical column, the
    decision by default); the front (:func:`analysis.pareto.pareto_front`, each axis in
    its sense: :func:`simulator.score.card.sense`, e.g. accuracy and flexibility higher
    is better) is ringed and joined by a step line.

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or no row is ok.
    """
    from simulator.score.card import INDICATOR_COLUMNS, sense

    x = INDICATOR_COLUMNS.get(x, x) if x else latency
    y = INDICATOR_COLUMNS.get(y, y) if y else energy
    rows = _ok_rows(table, [x, y, colour], "pareto: the sweep table")
    if "point" in rows:
        points = rows.groupby("point", sort=True).agg(
            {x: "mean", y: "mean", colour: lambda s: _mode(s)}
        )
    else:
        points = rows[[x, y, colour]].copy()
    empty = [c for c in (x, y) if not points.empty and points[c].isna().all()]
    if empty:
        raise SocsimError(
            f"pareto: no point has a value of {' or '.join(empty)} (all {len(points)} are "
            "NaN): energy columns are NaN when the sweep ran on the fast path (--fast, "
            "docs/sweeps.md) or no unit declares power; plot other columns with --x/--y, "
            "or sweep without --fast"
        )
    points = points.dropna(subset=[x, y])
    require_rows(points, "pareto: the points with both metrics")
    x_raw, y_raw = points[x].to_numpy(float), points[y].to_numpy(float)
    front = pareto_front(-sense(x) * x_raw, -sense(y) * y_raw)  # both as costs
    xs, ys = scaled(x_raw, x), scaled(y_raw, y)
    labels = points[colour].astype(str).to_numpy()
    palette = colours(labels)  # first appearance in point order, as the decision map

    figure = new_figure(7.5, 5.0)
    axes = figure.add_subplot()
    for name, hue in palette.items():
        mine = labels == name
        axes.scatter(xs[mine], ys[mine], s=28, color=hue, alpha=0.8, label=name, zorder=2)
    order = np.argsort(xs[front], kind="stable")
    fx, fy = xs[front][order], ys[front][order]
    # the staircase bounds what is reachable: from a front point, rightwards when a
    # larger x costs more (the next point's y holds only from its own x on)
    where: Literal["post", "pre"] = "post" if sense(x) < 0 else "pre"
    axes.step(fx, fy, where=where, color="black", linewidth=1.2, zorder=3)
    axes.scatter(
        fx,
        fy,
        s=90,
        facecolors="none",
        edgecolors="black",
        linewidths=1.5,
        zorder=4,
        label=_front_label(x_raw[front], y_raw[front]),
    )
    if _log_scale(pd.Series(xs)):
        log_axis(axes, "x")
    if _log_scale(pd.Series(ys)):
        log_axis(axes, "y")
    axes.set_xlabel(label_of(x))
    axes.set_ylabel(label_of(y))
    axes.set_title(title or f"{_indicator(x)}–{_indicator(y)} trade-off over {len(points)} points")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(title=colour, fontsize=8)
    return fit_titles(figure)


def _indicator(column: str) -> str:
    """The indicator a column measures, for a title (``latency_mean_s`` -> ``latency``)."""
    from simulator.score.card import INDICATOR_COLUMNS

    for name, known in INDICATOR_COLUMNS.items():
        if column == known or column.startswith(name) or f"_{name}" in column:
            return name
    return "energy" if column.endswith("_per_j") else column


def _front_label(latency: np.ndarray, energy: np.ndarray) -> str:
    """``Pareto front (N)`` counting distinct (latency, energy) pairs: equal points all stay
    on the front (neither dominates) but draw one ring; the ties are said apart."""
    distinct = len(set(zip(latency.tolist(), energy.tolist(), strict=True)))
    ties = len(latency) - distinct
    return f"Pareto front ({distinct})" + (f"; {ties} more point(s) tie" if ties else "")


def sweep_curves(
    table: pd.DataFrame,
    x: str,
    metric: str = "latency_mean_s",
    group: str | Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """A metric against one swept parameter, one line per group, replicate spread as bands.

    The line is the mean over the rows of each (group, x); the band spans their least
    and greatest value (the replicates, and any other parameter not in ``group``). With
    one row per marker there is no band (and the title says so).

    Parameters
    ----------
    table : DataFrame
        A sweep table.
    x : str
        The swept parameter on the horizontal axis (numeric, or categorical such as a
        policy name).
    metric : str
        The summary column on the vertical axis.
    group : str or sequence of str, optional
        The column(s) whose values make separate lines (e.g. ``placement.policy``).

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or no row is ok.
    """
    groups = [group] if isinstance(group, str) else list(group or ())
    rows = _ok_rows(table, [x, metric, *groups], "curves: the sweep table")
    numeric = pd.api.types.is_numeric_dtype(rows[x])
    positions = {v: i for i, v in enumerate(sorted(rows[x].unique()))}
    keys = [*groups, x] if groups else [x]
    stats = rows.groupby(keys, sort=True)[metric].agg(["mean", "min", "max", "count"])
    stats = stats.reset_index()
    # a band needs two runs behind a marker: one replicate per point spans nothing
    banded = bool((stats["count"] > 1).any())
    figure = new_figure(7.5, 4.8)
    axes = figure.add_subplot()
    lines: list[tuple[tuple[Any, ...], pd.DataFrame]] = (
        list(stats.groupby(groups, sort=True)) if groups else [((), stats)]
    )
    # pandas keys groups by tuples, also for one column
    names = [format_value(k[0]) if len(groups) == 1 else _join(groups, k) for k, _ in lines]
    palette = colours(names)
    for name, (_, line) in zip(names, lines, strict=True):
        where = line[x].to_numpy() if numeric else line[x].map(positions).to_numpy()
        hue = palette[name]
        axes.plot(
            where,
            scaled(line["mean"].to_numpy(), metric),
            marker="o",
            markersize=3.5,
            color=hue,
            label=name if groups else label_of(metric),
        )
        if not banded:
            continue
        axes.fill_between(
            where,
            scaled(line["min"].to_numpy(), metric),
            scaled(line["max"].to_numpy(), metric),
            color=hue,
            alpha=0.2,
            linewidth=0,
        )
    if numeric and _log_scale(rows[x]):
        log_axis(axes, "x")
    if not numeric:
        axes.set_xticks(list(positions.values()), [format_value(v) for v in positions])
    axes.set_xlabel(label_of(x))
    axes.set_ylabel(label_of(metric))
    band = "\n(band: min–max of the runs)" if banded else "\n(one run per marker)"
    axes.set_title(title or f"{label_of(metric)} vs {label_of(x)}{band}")
    axes.grid(True, alpha=0.3)
    legend_title = ", ".join(label_of(g) for g in groups) if groups else None
    axes.legend(title=legend_title, fontsize=8)
    return fit_titles(figure)


def _join(groups: Sequence[str], key: tuple) -> str:
    return ", ".join(
        f"{g.rsplit('.', 1)[-1]}={format_value(v)}" for g, v in zip(groups, key, strict=True)
    )
