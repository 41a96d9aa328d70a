"""Figures of one run: the Gantt chart, the energy breakdown, per-unit utilisation.

Each function takes the run's tables (``docs/results.md``) and returns a Figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from analysis.sources import require_columns, require_rows, require_table
from analysis.style import ROLE_COLOURS, colours, fit_titles, new_figure
from simulator.errors import SocsimError

OPS_COLUMNS = ("request_id", "unit", "op", "start_s", "end_s")
TRANSFER_COLUMNS: tuple[str, ...] = (
    "request_id",
    "kind",
    "link",
    "src_node",
    "dst_node",
    "src_unit",
    "start_s",
)
TRANSFER_COLUMNS += ("end_s",)
ENERGY_COLUMNS = ("component", "role", "idle_energy_j", "active_energy_j", "energy_j")
UNITS_COLUMNS = ("unit", "role", "utilisation", "busy_s")
_MAX_LEGEND = 12  # more requests than this: the legend shows the first ones and "…"


def _lane(transfer: pd.Series) -> str:
    if transfer["kind"] == "network":
        return f"{transfer['link']}: {transfer['src_node']}→{transfer['dst_node']}"
    # on-chip and explicit moves keep no unit busy: one lane per node shows them
    return f"{str(transfer['src_unit']).split('.')[0]}: copies"


def gantt(
    ops: pd.DataFrame,
    transfers: pd.DataFrame,
    requests: int | None = None,
    title: str | None = None,
) -> Figure:
    """Ops on their units and transfers on their links over time, coloured by request.

    One lane per compute unit that ran an op, one per link direction that carried a
    tensor (``link: src→dst``), and one per node for on-chip copies.

    Parameters
    ----------
    ops, transfers : DataFrame
        The run's ``ops`` and ``transfers`` tables.
    requests : int, optional
        Draw only the first ``requests`` request ids (a long run is unreadable whole).
    title : str, optional
        Replaces the default title.

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or no op ran.
    """
    if requests is not None and requests < 1:
        raise SocsimError(f"gantt: requests must be a whole number >= 1, got {requests}")
    require_columns(ops, OPS_COLUMNS, "gantt: the ops table")
    require_columns(transfers, TRANSFER_COLUMNS, "gantt: the transfers table")
    shown = sorted(ops["request_id"].unique())[:requests] if requests else None
    if shown is not None:
        ops = ops[ops["request_id"].isin(shown)]
        transfers = transfers[transfers["request_id"].isin(shown)]
    require_rows(ops, "gantt: the ops table")
    bars = pd.concat(
        [
            ops.assign(lane=ops["unit"])[["lane", "request_id", "start_s", "end_s"]],
            transfers.assign(lane=transfers.apply(_lane, axis=1) if len(transfers) else [])[
                ["lane", "request_id", "start_s", "end_s"]
            ],
        ],
        ignore_index=True,
    )
    lanes = list(dict.fromkeys([*ops["unit"], *sorted(set(bars["lane"]) - set(ops["unit"]))]))
    ids = sorted(bars["request_id"].unique())
    palette = colours(ids)
    figure = new_figure(9.0, max(3.0, 0.45 * len(lanes) + 1.8))
    axes = figure.add_subplot()
    for index, lane in enumerate(lanes):
        mine = bars[bars["lane"] == lane]
        start_ms = mine["start_s"].to_numpy() * 1e3
        width_ms = np.maximum((mine["end_s"] - mine["start_s"]).to_numpy() * 1e3, 0.0)
        axes.broken_barh(
            list(zip(start_ms, width_ms, strict=True)),
            (index - 0.4, 0.8),
            facecolors=[palette[i] for i in mine["request_id"]],
            # an edge in the bar's own colour keeps a sub-pixel op (0.2 ms of a 200 ms
            # run) visible
            edgecolors=[palette[i] for i in mine["request_id"]],
            linewidth=0.8,
        )
    axes.set_yticks(range(len(lanes)), lanes)
    axes.invert_yaxis()
    axes.set_xlabel("time (ms)")
    axes.set_ylabel("unit / link")
    axes.grid(True, axis="x", alpha=0.3)
    count = f"first {len(ids)} requests" if shown is not None else f"{len(ids)} requests"
    axes.set_title(title or f"ops on units and transfers on links ({count})")
    handles = [Patch(facecolor=palette[i], label=f"request {i}") for i in ids[:_MAX_LEGEND]]
    if len(ids) > _MAX_LEGEND:
        handles.append(Patch(facecolor="white", label=f"… {len(ids) - _MAX_LEGEND} more"))
    figure.legend(handles=handles, loc="outside right upper", fontsize=8)
    return fit_titles(figure)


def energy_breakdown(energy: pd.DataFrame, title: str | None = None) -> Figure:
    """Idle and active energy of every component, stacked, one panel per role.

    Device, edge and cloud energy differ by orders of magnitude (a phone's millijoules,
    a server's joules of idle power), so each role gets its own panel and scale.

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or the table is empty.
    """
    require_table(energy, ENERGY_COLUMNS, "energy breakdown: the energy table")
    roles = [r for r in (*ROLE_COLOURS, *sorted(set(energy["role"]))) if r in set(energy["role"])]
    roles = list(dict.fromkeys(roles))
    widths = [max(2, (energy["role"] == r).sum()) for r in roles]
    figure = new_figure(max(6.0, 0.55 * sum(widths) + 2.5), 4.8)
    panels = figure.subplots(1, len(roles), squeeze=False, width_ratios=widths)[0]
    for axes, role in zip(panels, roles, strict=True):
        mine = energy[energy["role"] == role]
        where = np.arange(len(mine))
        hue = ROLE_COLOURS.get(role, "#777777")
        # a panel in J once its bars pass a joule (servers), else in mJ (phones)
        unit, scale = ("J", 1.0) if mine["energy_j"].max() >= 1.0 else ("mJ", 1e3)
        active = mine["active_energy_j"].to_numpy() * scale
        idle = mine["idle_energy_j"].to_numpy() * scale
        axes.bar(where, active, color=hue, label="active")
        axes.bar(where, idle, bottom=active, color=hue, alpha=0.35, label="idle")
        axes.set_xticks(where, mine["component"], rotation=45, ha="right", fontsize=8)
        axes.set_title(f"{role}: {(active + idle).sum():.4g} {unit}", fontsize=10)
        axes.set_ylabel(f"energy ({unit})")
        axes.grid(True, axis="y", alpha=0.3)
    window = ""
    if {"window_start_s", "window_end_s"} <= set(energy.columns):
        start_s, end_s = energy["window_start_s"].min(), energy["window_end_s"].max()
        unit, scale = ("s", 1.0) if end_s >= 10 else ("ms", 1e3)  # 31.44 s, not 3.144e+04 ms
        window = f" {start_s * scale:.4g}–{end_s * scale:.4g} {unit}"
    figure.suptitle(
        title or f"energy by component in the window{window} (dark: active, light: idle)"
    )
    figure.legend(
        handles=[
            Patch(facecolor="#555555", label="active"),
            Patch(facecolor="#555555", alpha=0.35, label="idle"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=8,
    )
    return fit_titles(figure)


def utilisation(units: pd.DataFrame, title: str | None = None) -> Figure:
    """Busy share of every compute unit over the run, coloured by its node's role.

    Raises
    ------
    SocsimError
        A column is missing (the message lists the available ones) or the table is empty.
    """
    require_table(units, UNITS_COLUMNS, "utilisation: the units table")
    figure = new_figure(7.0, max(2.5, 0.35 * len(units) + 1.5))
    axes = figure.add_subplot()
    where = np.arange(len(units))
    share = units["utilisation"].to_numpy() * 100
    roles = units["role"].astype(str).tolist()
    palette = {**colours(roles), **ROLE_COLOURS}
    axes.barh(where, share, color=[palette[r] for r in roles])
    for y, pct, busy_s in zip(where, share, units["busy_s"], strict=True):
        axes.text(
            pct + 0.5,
            float(y),
            f"{pct:.3g}%  ({busy_s * 1e3:.4g} ms busy)",
            va="center",
            fontsize=8,
        )
    axes.set_yticks(where, units["unit"])
    axes.invert_yaxis()
    axes.set_xlim(0, max(100.0, float(share.max()) * 1.3))
    axes.set_xlabel("utilisation (%)")
    axes.set_title(title or "utilisation per unit (busy time / first arrival → last completion)")
    axes.legend(
        handles=[Patch(facecolor=palette[r], label=r) for r in dict.fromkeys(roles)],
        title="role",
        fontsize=8,
    )
    return fit_titles(figure)
