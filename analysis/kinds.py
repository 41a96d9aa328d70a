"""The plot kinds of ``socsim plot``: a registry from name to a figure of a source.

Each entry takes a loaded :class:`~analysis.sources.Source` (a run folder or a sweep)
and keyword options; its options record lists the options it accepts, so
``socsim plot`` can refuse one a kind does not take.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from analysis.run_plots import energy_breakdown, gantt, utilisation
from analysis.sources import Source, Sweep
from analysis.style import format_value
from analysis.sweep_plots import decision_map, pareto_plot, sweep_curves
from simulator.errors import SocsimError
from simulator.registry import Registry
from simulator.schema import Field, Number, Record, Text

PlotFunction = Callable[..., Figure]
PLOTS: Registry[PlotFunction] = Registry("plot kind", "socsim.plots")

#: decision maps a report draws of one sweep, at most (one per value of a third parameter)
MAX_FACETS = 6
_TITLE = {"title": Field(Text(), default=None, doc="replaces the default title")}
_LATENCY = Field(Text(), default="latency_mean_s", doc="latency column")
_ENERGY = Field(Text(), default="device_energy_per_inference_j", doc="energy column")


def _sweep(source: Source, kind: str) -> Sweep:
    if source.sweep is None:
        raise SocsimError(f"plot kind '{kind}' needs a sweep, but {source.path} is a run folder")
    return source.sweep


def _run(source: Source, kind: str) -> dict:
    if source.run is None:
        raise SocsimError(f"plot kind '{kind}' needs a run folder, but {source.path} is a sweep")
    return dict(source.run)


def _parameter(sweep: Sweep, given: str | None, index: int, what: str, skip: tuple = ()) -> str:
    """The swept parameter the user named, else the ``index``-th swept one not in ``skip``."""
    if given:
        return given
    candidates = [p for p in sweep.parameters if p not in skip]
    if len(candidates) <= index:
        raise SocsimError(
            f"{what}: the sweep has {len(sweep.parameters)} swept parameter(s) "
            f"({', '.join(sweep.parameters) or 'none'}); name the column with --{what}"
        )
    return candidates[index]


@PLOTS.register(
    "decision_map",
    Record(
        {
            "x": Field(Text(), default=None, doc="swept parameter across (default: the 1st)"),
            "y": Field(Text(), default=None, doc="swept parameter up (default: the 2nd)"),
            "by": Field(Text(), default=None, doc="column the points compete over"),
            "metric": Field(Text(), default="latency_mean_s", doc="picks the best `by`"),
            "latency": _LATENCY,
            "energy": _ENERGY,
            **_TITLE,
        },
        name="decision_map options",
    ),
    doc="winning decision per cell of two swept parameters",
)
def plot_decision_map(source: Source, **options: Any) -> Figure:
    sweep = _sweep(source, "decision_map")
    by = options.get("by")
    x = _parameter(sweep, options.pop("x", None), 0, "x", skip=(by,))
    y = _parameter(sweep, options.pop("y", None), 0, "y", skip=(by, x))
    return decision_map(sweep.table, x, y, **options)


@PLOTS.register(
    "pareto",
    Record(
        {
            "x": Field(Text(), default=None, doc="indicator or column across (default: latency)"),
            "y": Field(Text(), default=None, doc="indicator or column up (default: energy)"),
            "latency": _LATENCY,
            "energy": _ENERGY,
            "colour": Field(Text(), default="decision", doc="categorical column for colour"),
            **_TITLE,
        },
        name="pareto options",
    ),
    doc="two indicators (default latency, energy) per sweep point, Pareto front highlighted",
)
def plot_pareto(source: Source, **options: Any) -> Figure:
    return pareto_plot(_sweep(source, "pareto").table, **options)


@PLOTS.register(
    "curves",
    Record(
        {
            "x": Field(Text(), default=None, doc="swept parameter (default: the 1st)"),
            "metric": Field(Text(), default="latency_mean_s", doc="summary column"),
            "group": Field(Text(), default=None, doc="one line per value (default: the rest)"),
            **_TITLE,
        },
        name="curves options",
    ),
    doc="a metric against a swept parameter, one line per group, replicate bands",
)
def plot_curves(source: Source, **options: Any) -> Figure:
    sweep = _sweep(source, "curves")
    x = _parameter(sweep, options.pop("x", None), 0, "x")
    group = options.pop("group", None)
    if group:
        groups = [group]
    else:
        # every other swept parameter, but one tied to x (zipped, e.g. the reverse
        # bandwidth) would split no line
        others = [p for p in sweep.parameters if p != x]
        groups = [g for g in others if sweep.ok.groupby(x)[g].nunique().max() > 1]
    return sweep_curves(sweep.table, x, group=groups or None, **options)


@PLOTS.register(
    "gantt",
    Record(
        {
            "requests": Field(
                Number(ge=1, integer=True), default=None, doc="first N requests only"
            ),
            **_TITLE,
        },
        name="gantt options",
    ),
    doc="ops on units and transfers on links over time, per request colour",
)
def plot_gantt(source: Source, **options: Any) -> Figure:
    tables = _run(source, "gantt")
    requests = options.pop("requests", None)
    return gantt(
        tables["ops"], tables["transfers"], requests=int(requests) if requests else None, **options
    )


@PLOTS.register(
    "energy",
    Record(dict(_TITLE), name="energy options"),
    doc="idle and active energy per component, one panel per role",
)
def plot_energy(source: Source, **options: Any) -> Figure:
    return energy_breakdown(_run(source, "energy")["energy"], **options)


@PLOTS.register(
    "utilisation",
    Record(dict(_TITLE), name="utilisation options"),
    doc="busy share of every compute unit",
)
def plot_utilisation(source: Source, **options: Any) -> Figure:
    return utilisation(_run(source, "utilisation")["units"], **options)


def make_plot(kind: str, source: Source, **options: Any) -> Figure:
    """The figure of plot ``kind`` over ``source``, with the options that are not None.

    ``where`` (a mapping of column to value, as text) first keeps the sweep rows that
    match it.

    Raises
    ------
    SocsimError
        An unknown kind (naming the valid ones), an option the kind does not take
        (naming those it takes), or a source of the wrong sort.
    """
    entry = PLOTS.get(kind)
    given = {k: v for k, v in options.items() if v is not None}
    where = given.pop("where", None)
    if where:
        if source.sweep is None:
            raise SocsimError(f"--where selects sweep rows, but {source.path} is a run folder")
        source = Source(source.path, sweep=source.sweep.where(where))
    unknown = sorted(set(given) - set(entry.options.fields))
    if unknown:
        raise SocsimError(
            f"plot kind '{kind}' takes no option {', '.join(unknown)}; "
            f"it takes: {', '.join(entry.options.fields)}"
        )
    return entry.function(source, **given)


def kinds_for(source: Source) -> list[str]:
    """The plot kinds that draw from ``source`` (what ``socsim report`` puts in).

    A sweep's ``decision_map`` is listed when two parameters are swept; which maps the
    report draws (one, or one per value of the other parameters) is
    :func:`decision_map_views`.
    """
    run_kinds = ("gantt", "energy", "utilisation")
    if source.kind == "run":
        # a run with --trace summary or none kept no op rows: no Gantt chart
        return [k for k in run_kinds if k != "gantt" or len(source.require_run()["ops"])]
    names = [k for k in PLOTS if k not in run_kinds]
    if len(source.require_sweep().parameters) < 2:
        names.remove("decision_map")
    return names


@dataclass(frozen=True)
class MapView:
    """One decision map the report draws: its rows, axes, and what it holds fixed."""

    source: Source
    x: str
    y: str
    fixed: str = ""  # "p=v, q=w" of the other parameters, "" when none varies


def _one_per_cell(rows: pd.DataFrame, keys: list[str]) -> bool:
    return rows.empty or bool(rows.groupby(keys)["point"].nunique().max() <= 1)


def decision_map_views(source: Source) -> tuple[list[MapView], list[str]]:
    """The decision maps ``socsim report`` draws of a sweep, and notes for the reader.

    Two parameters that pick one point per cell: one map, the first two swept
    parameters as axes (as ``socsim plot decision_map``). With more that vary inside
    the cells, the two with the most values are the axes and the map is drawn once per
    combination of the others' values (at most :data:`MAX_FACETS`); the notes say which
    were fixed and how to draw the rest. Never a map left out without a note.
    """
    sweep = source.require_sweep()
    parameters, ok = list(sweep.parameters), sweep.ok
    if len(parameters) < 2:
        shown = ", ".join(parameters) or "none"
        return [], [f"no decision map: it needs two swept parameters; this sweep has {shown}"]
    x, y = parameters[:2]
    if _one_per_cell(ok, [x, y]):
        return [MapView(source, x, y)], []
    counts = {p: ok[p].nunique() for p in parameters}
    # the two with the most values across and up (file order breaks ties): fewest maps
    axes = sorted(sorted(parameters, key=lambda p: -counts[p])[:2], key=parameters.index)
    x, y = axes
    others = [p for p in parameters if p not in axes and counts[p] > 1]
    if not others or not _one_per_cell(ok, [*axes, *others]):
        return [], [
            f"no decision map: the cells of {x} × {y} mix sweep points that no swept "
            "parameter tells apart; draw one with socsim plot decision_map --where PATH=VALUE"
        ]
    combos = ok[others].drop_duplicates().sort_values(others, kind="stable")
    views, notes = [], []
    for values in combos.itertuples(index=False):
        keep = pd.Series(True, index=sweep.table.index)
        for name, value in zip(others, values, strict=True):
            keep &= sweep.table[name] == value
        part = Sweep(sweep.table[keep], sweep.parameters, sweep.metadata)
        fixed = ", ".join(f"{n}={format_value(v)}" for n, v in zip(others, values, strict=True))
        if not _one_per_cell(part.ok, [x, y]):
            notes.append(f"no decision map where {fixed}: its cells still mix sweep points")
            continue
        views.append(MapView(Source(source.path, sweep=part), x, y, fixed))
    notes.insert(
        0,
        f"{', '.join(others)} also {'vary' if len(others) > 1 else 'varies'} inside the "
        f"cells of {x} × {y}: one decision map per value of {' × '.join(others)}",
    )
    if len(views) > MAX_FACETS:
        notes.append(
            f"the first {MAX_FACETS} of {len(views)} maps are drawn; draw another with "
            f"socsim plot decision_map {source.path} --x {x} --y {y} --where PATH=VALUE"
        )
        views = views[:MAX_FACETS]
    return views, notes
