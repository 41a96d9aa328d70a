"""The plot kinds of ``socsim plot``: a registry from name to a figure of a source.

Each entry takes a loaded :class:`~analysis.sources.Source` (a run folder or a sweep)
and keyword options; its options record lists the options it accepts, so
``socsim plot`` can refuse one a kind does not take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.figure import Figure

from analysis.run_plots import energy_breakdown, gantt, utilisation
from analysis.sources import Source, Sweep
from analysis.sweep_plots import decision_map, pareto_plot, sweep_curves
from simulator.errors import SocsimError
from simulator.registry import Registry
from simulator.schema import Field, Number, Record, Text

PlotFunction = Callable[..., Figure]
PLOTS: Registry[PlotFunction] = Registry("plot kind", "socsim.plots")

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
            "latency": _LATENCY,
            "energy": _ENERGY,
            "colour": Field(Text(), default="decision", doc="categorical column for colour"),
            **_TITLE,
        },
        name="pareto options",
    ),
    doc="latency against energy per sweep point, Pareto front highlighted",
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
    """The plot kinds that draw from ``source`` (what ``socsim report`` puts in)."""
    run_kinds = ("gantt", "energy", "utilisation")
    if source.kind == "run":
        # a run with --trace summary or none kept no op rows: no Gantt chart
        return [k for k in run_kinds if k != "gantt" or len(source.run["ops"])]
    names = [k for k in PLOTS if k not in run_kinds]
    parameters = list(source.sweep.parameters[:2])
    # a map needs two parameters that, together, pick one point per cell
    if len(parameters) < 2 or source.sweep.ok.groupby(parameters)["point"].nunique().max() > 1:
        names.remove("decision_map")
    return names
