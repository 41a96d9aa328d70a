"""The latency–energy Pareto front: a pure function over two arrays of costs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pareto_front(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Which points no other point dominates, both coordinates minimised.

    Point ``j`` dominates ``i`` when ``x[j] <= x[i]``, ``y[j] <= y[i]`` and at least one
    is strictly smaller; equal points do not dominate each other (both stay on the
    front). Points with a NaN coordinate are never on the front and dominate nothing.

    Parameters
    ----------
    x, y : sequence of float
        The two costs of each point (e.g. latency and energy per inference).

    Returns
    -------
    numpy.ndarray of bool
        ``True`` for the points on the front, in the input order.

    Notes
    -----
    O(n log n): sorted by ``x`` then ``y``, a point is on the front exactly when its
    ``y`` is the least of its ``x`` group and strictly below every ``y`` of a smaller
    ``x``.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError(f"x and y must be 1-D of one length, got {xs.shape} and {ys.shape}")
    on_front = np.zeros(len(xs), dtype=bool)
    finite = np.flatnonzero(~(np.isnan(xs) | np.isnan(ys)))
    order = finite[np.lexsort((ys[finite], xs[finite]))]
    best_y = np.inf  # least y over strictly smaller x
    start = 0
    while start < len(order):
        stop = start
        while stop < len(order) and xs[order[stop]] == xs[order[start]]:
            stop += 1
        group = order[start:stop]
        group_min = ys[group[0]]  # sorted by y inside the group
        if group_min < best_y:
            on_front[group[ys[group] == group_min]] = True
        best_y = min(best_y, group_min)
        start = stop
    return on_front
