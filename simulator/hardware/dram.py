"""Sharing a node's DRAM bandwidth among the ops running at once (pure).

While an op runs its body it pulls DRAM at its *demand* ``d = dram bytes / body time``
(the rate it reaches alone). When the running ops of a node together demand more than
the node's DRAM bandwidth ``B``, the bandwidth is shared max-min fairly (water-filling):
an op that demands less than an equal share gets its demand, the rest split what is left
equally. An op allotted ``a < d`` progresses at ``a / d`` of its uncontended speed.
``docs/shared-dram.md`` describes the model; :mod:`simulator.engine.dram` applies it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def water_fill(demands_bps: Sequence[float], capacity_bps: float) -> list[float]:
    """Max-min fair allotments of ``capacity_bps`` among ``demands_bps``.

    Parameters
    ----------
    demands_bps : sequence of float
        What each consumer would take alone (B/s, >= 0).
    capacity_bps : float
        What they share (B/s, > 0; ``inf``: everyone gets its demand).

    Returns
    -------
    list of float
        Allotment per consumer, in the order given: ``min(d, level)`` with the water level
        chosen so that the allotments sum to the capacity when the demands exceed it
        (and every demand is met otherwise). Never more than the demand; the sum never
        exceeds the capacity.

    Raises
    ------
    ValueError
        When a demand is negative or not finite, or the capacity is not > 0.
    """
    if not capacity_bps > 0:
        raise ValueError(f"capacity must be > 0, got {capacity_bps}")
    for d in demands_bps:
        if not (d >= 0 and math.isfinite(d)):
            raise ValueError(f"demands must be finite and >= 0, got {d}")
    return fill_unchecked(demands_bps, capacity_bps)


def fill_unchecked(demands_bps: Sequence[float], capacity_bps: float) -> list[float]:
    """:func:`water_fill` without the input checks (the engine's demands are checked
    when its streams are made)."""
    if sum(demands_bps) <= capacity_bps:
        return list(demands_bps)
    order = sorted(range(len(demands_bps)), key=demands_bps.__getitem__)
    out = [0.0] * len(demands_bps)
    left = capacity_bps
    for k, j in enumerate(order):
        level = left / (len(order) - k)
        if demands_bps[j] <= level:
            out[j] = demands_bps[j]
            left -= demands_bps[j]
        else:  # every larger demand is capped at the same level
            for j2 in order[k:]:
                out[j2] = level
            break
    return out
