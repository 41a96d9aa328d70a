"""Series over time built after a run from what the engine recorded at event boundaries.

* ``power``: every constant-power interval of every energy-drawing component. A unit's
  power is ``idle_w`` plus, for each op running, ``(busy_w − idle_w) × core share``
  (``busy_w`` is ``active_w`` or the op's DVFS level's power); it is rebuilt from the op
  intervals the trace already holds, so the hot path pays nothing for it. A radio's
  intervals are those its state machine closed at every change.
* ``dvfs_levels``: the level each DVFS unit's governor chose, at t = 0 and at each change.
* ``temperature``: each thermal node's temperature at every power change, throttle and
  release (the RC closed form holds between two points).

Nothing is sampled: every boundary is an event instant, so ``∑ energy_j`` of a
component's ``power`` rows is its ``energy`` row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from simulator.engine.trace import take_described
from simulator.platform import Platform

POWER_COLUMNS = ["node", "component", "kind", "role", "start_s", "end_s", "power_w", "energy_j"]
DVFS_LEVEL_COLUMNS = ["node", "unit", "time_s", "level", "frequency_hz", "busy_w"]
TEMPERATURE_COLUMNS = ["node", "time_s", "temperature_c", "power_w", "throttled", "event"]


def step_intervals(
    starts: np.ndarray,
    ends: np.ndarray,
    increments: np.ndarray,
    base_w: float,
    window: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Constant-power intervals of ``base_w`` plus the increments of the open intervals.

    Parameters
    ----------
    starts, ends : ndarray
        The busy intervals ``[start, end)`` (s); clipped to the window.
    increments : ndarray
        Power (W) each interval adds while open.
    base_w : float
        Power (W) drawn with nothing open.
    window : (float, float)
        The span to cover, ``[start_s, end_s]``.

    Returns
    -------
    (start_s, end_s, power_w) : tuple of ndarray
        Contiguous intervals covering the window exactly, adjacent ones of equal power
        merged; empty when the window has no length.

    Notes
    -----
    The power of a segment is ``base_w + ∑_v v × n_v`` over the distinct increment values
    ``v`` with ``n_v`` intervals open (integer counts, cumulated exactly), so two segments
    with the same intervals open get bit-for-bit the same power and merge, whatever order
    the intervals opened in.
    """
    w0, w1 = window
    if not w1 > w0:
        empty = np.empty(0)
        return empty, empty, empty
    s = np.clip(np.asarray(starts, dtype=float), w0, w1)
    e = np.clip(np.asarray(ends, dtype=float), w0, w1)
    keep = e > s
    s, e, inc = s[keep], e[keep], np.asarray(increments, dtype=float)[keep]
    times = np.unique(np.concatenate(([w0, w1], s, e)))
    power = np.full(len(times) - 1, float(base_w))
    values, which = np.unique(inc, return_inverse=True)
    first, last = np.searchsorted(times, s), np.searchsorted(times, e)
    n = len(times)
    for k, value in enumerate(values):
        mine = which == k
        delta = np.bincount(first[mine], minlength=n) - np.bincount(last[mine], minlength=n)
        power = power + value * np.cumsum(delta)[:-1]
    return merge_equal(times[:-1], times[1:], power)


def merge_equal(
    starts: np.ndarray, ends: np.ndarray, power_w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge runs of contiguous intervals that draw the same power."""
    if not len(power_w):
        return starts, ends, power_w
    first = np.concatenate(([0], np.flatnonzero(power_w[1:] != power_w[:-1]) + 1))
    last = np.concatenate((first[1:] - 1, [len(power_w) - 1]))
    return starts[first], ends[last], power_w[first]


def _unit_increments(unit, levels: np.ndarray, share=None) -> np.ndarray:
    """Each op's power above the unit's idle power, by its DVFS level and core share
    (``share``: per op, on a core-pool unit; None: the unit's ``cores_per_op / cores``)."""
    if share is None:
        share = unit.op_cores / unit.cores
    if unit.dvfs is None:
        return np.full(len(levels), (unit.active_w - unit.idle_w) * share)
    busy_w = np.array([unit.dvfs.active_power_w(level) for level in range(unit.dvfs.top + 1)])
    return (busy_w[levels] - unit.idle_w) * share


def power_table(
    ops: pd.DataFrame,
    partial_rows: list[tuple[str, float, float, float, float]],
    radios,
    platform: Platform,
    window: tuple[float, float],
    op_share: np.ndarray | None = None,
    down: Mapping[str, Sequence[tuple[float, float]]] | None = None,
) -> pd.DataFrame:
    """Every constant-power interval of every unit and device radio inside ``window``.

    Parameters
    ----------
    ops : DataFrame
        The ``ops`` table (``unit, start_s, end_s, level``).
    partial_rows : list of (unit, start_s, end_s, core share, busy_w)
        Ops cut short when a battery stopped the run (not in the trace).
    radios : list of RadioState
        Closed at the window's end.
    platform : Platform
    window : (float, float)
    op_share : ndarray or None
        Per row of ``ops``, its share of its unit's cores, when some unit runs as a core
        pool (per-op cores); None: every op has its unit's ``cores_per_op / cores``.
    down : mapping of unit id -> down intervals (s), optional
        Failed units draw nothing while down, not even idle power.

    Returns
    -------
    DataFrame
        Columns :data:`POWER_COLUMNS`; units in platform order, then radios.
    """
    pieces: list[tuple[str, str, str, str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
    by_unit = ops.groupby("unit", sort=False).indices if len(ops) else {}
    starts = ops["start_s"].to_numpy(dtype=float)
    ends = ops["end_s"].to_numpy(dtype=float)
    levels = ops["level"].to_numpy(dtype=np.int64)  # an empty trace has object columns
    for uid in platform.unit_ids:
        unit = platform.unit(uid)
        node = platform.node_of(uid)
        rows = by_unit.get(uid, np.empty(0, dtype=np.int64))
        cut = [(a, b, (w - unit.idle_w) * share) for u, a, b, share, w in partial_rows if u == uid]
        cut += [(a, b, -unit.idle_w) for a, b in (down or {}).get(uid, ())]
        s = np.concatenate((starts[rows], [c[0] for c in cut]))
        e = np.concatenate((ends[rows], [c[1] for c in cut]))
        share = None if op_share is None else op_share[rows]
        inc = np.concatenate((_unit_increments(unit, levels[rows], share), [c[2] for c in cut]))
        series = step_intervals(s, e, inc, unit.idle_w, window)
        pieces.append((node.name, uid, "compute", node.role, series))
    w0, w1 = window
    for radio in radios:
        kept = [
            (max(a, w0), min(b, w1), p) for _, a, b, p in radio.intervals if min(b, w1) > max(a, w0)
        ]
        s, e, p = (np.array([k[j] for k in kept], dtype=float) for j in range(3))
        role = platform.role_of(radio.node)
        pieces.append((radio.node, f"radio:{radio.link}", "radio", role, merge_equal(s, e, p)))
    lengths = [len(series[0]) for *_, series in pieces]
    if sum(lengths):
        # each piece's names taken at its rows (as the trace tables' are): no Python
        # object per row
        codes = np.repeat(np.arange(len(pieces)), lengths)
        columns = {
            name: take_described([piece[j] for piece in pieces], codes)
            for j, name in enumerate(POWER_COLUMNS[:4])
        }
    else:
        columns = {
            name: np.repeat([piece[j] for piece in pieces], lengths).astype(object)
            for j, name in enumerate(POWER_COLUMNS[:4])
        }
    start_s, end_s, power_w = (
        np.concatenate([series[j] for *_, series in pieces] or [np.empty(0)]) for j in range(3)
    )
    table = pd.DataFrame(
        {**columns, "start_s": start_s, "end_s": end_s, "power_w": power_w},
        columns=POWER_COLUMNS,
    )
    table["energy_j"] = power_w * (end_s - start_s)
    return table


def dvfs_level_table(dvfs: dict, platform: Platform) -> pd.DataFrame:
    """The level of every DVFS unit at t = 0 and at each change (``DvfsState.changes``)."""
    rows = [
        (
            platform.node_of(uid).name,
            uid,
            time_s,
            level,
            state.table.frequency_hz(level),
            state.table.active_power_w(level),
        )
        for uid, state in dvfs.items()
        for time_s, level in state.changes
    ]
    return pd.DataFrame(rows, columns=DVFS_LEVEL_COLUMNS)


def temperature_table(thermal: dict, end_s: float) -> pd.DataFrame:
    """Every thermal node's recorded points up to ``end_s`` (``NodeThermal.series``)."""
    rows = [(node, *point) for node, heat in thermal.items() for point in heat.series(end_s)]
    return pd.DataFrame(rows, columns=TEMPERATURE_COLUMNS)
