"""Where the energy went: per role, node, component and state, from result tables only.

Pure pandas over the documented ``energy`` and ``radio_states`` columns, so it gives
the same table for a run in memory and for one read back from disk
(``analysis.load_run``).
"""

from __future__ import annotations

import math

import pandas as pd

BREAKDOWN_COLUMNS = ["role", "node", "component", "kind", "state", "energy_j", "share"]
#: The order rows come in: whose battery first, then the state's place in a cycle.
ROLES = ("device", "edge", "cloud")
STATES = ("idle", "active", "promotion", "connected", "tail")


def energy_breakdown(energy: pd.DataFrame, radio_states: pd.DataFrame) -> pd.DataFrame:
    """Energy of every component split by state, over the run's energy window.

    Parameters
    ----------
    energy : DataFrame
        The ``energy`` table (``node, component, kind, role, idle_energy_j,
        active_energy_j, energy_j``).
    radio_states : DataFrame
        The ``radio_states`` table (``node, link, state, energy_j``).

    Returns
    -------
    DataFrame
        Columns ``role, node, component, kind, state, energy_j, share``. A compute unit
        has an ``idle`` and an ``active`` row; a radio one row per state it spent time
        in (``idle``, ``promotion``, ``connected``, ``tail``). ``share`` is the row's
        fraction of the total energy of all components (NaN when that is 0). Rows are
        ordered device, edge, cloud, then as in ``energy``, then by state.

    Examples
    --------
    Device versus remote, and the radio's tail on the device:

    >>> table = energy_breakdown(result.energy, result.radio_states)  # doctest: +SKIP
    >>> table.groupby("role")["energy_j"].sum()  # doctest: +SKIP
    >>> table[table["state"] == "tail"]  # doctest: +SKIP
    """
    rows = []
    # each radio's rows at once (filtering the table per radio was quadratic: 62 s for a
    # fleet of 1,000 phones); the same rows in the same order, so the same sums
    by_radio = {
        key: mine.groupby("state", sort=False)["energy_j"].sum().to_dict()
        for key, mine in radio_states.groupby(["node", "link"], sort=False)
    }
    for position, row in enumerate(energy.itertuples(index=False)):
        if row.kind == "compute":
            parts = {"idle": row.idle_energy_j, "active": row.active_energy_j}
        else:
            link = row.component.removeprefix("radio:")
            parts = by_radio.get((row.node, link), {})
        for state, energy_j in parts.items():
            rows.append(
                (
                    _rank(ROLES, row.role),
                    position,
                    _rank(STATES, state),
                    (row.role, row.node, row.component, row.kind, state, float(energy_j)),
                )
            )
    rows.sort(key=lambda r: r[:3])
    total_j = float(energy["energy_j"].sum()) if len(energy) else 0.0
    table = pd.DataFrame([r[3] for r in rows], columns=BREAKDOWN_COLUMNS[:-1])
    table["share"] = table["energy_j"] / total_j if total_j > 0 else math.nan
    return table


def _rank(order: tuple[str, ...], name: str) -> int:
    return order.index(name) if name in order else len(order)
