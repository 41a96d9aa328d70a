"""Load-balanced split ratios: shares of one op that make several units finish together.

Each unit's finish time is modelled as piecewise linear in its share ``r`` of the op
(lines ``a + b × r``; a maximum of lines when a memory-bound segment exists). Pure math:
no platform, no SimPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Line = tuple[float, float]  # time = a + b * r


def balanced_ratios(fixed: Sequence[float], slope: Sequence[float]) -> tuple[list[float], float]:
    """Ratios that make units of time ``fixed[u] + r_u × slope[u]`` finish together.

    ``T = (1 + Σ a_u/b_u) / Σ 1/b_u`` and ``r_u = (T − a_u)/b_u`` over the units taking
    part; units whose ratio comes out ≤ 0 are dropped (ratio 0) and the rest re-solved.
    The unit of smallest ``a`` always takes part (``T`` exceeds the ``1/b``-weighted mean
    of the ``a``), so at least one does.

    Parameters
    ----------
    fixed : sequence of float
        ``a_u`` (s): time a unit pays whatever its share (dispatch, sync, latency).
    slope : sequence of float
        ``b_u`` > 0 (s): time of the whole op's share-proportional work on the unit.

    Returns
    -------
    (list of float, float)
        Ratios (summing to 1 up to rounding; 0 for dropped units) and the common finish
        time ``T`` (s).

    Examples
    --------
    Two units of 1 and 3 GFLOP/s on a 1 GFLOP op, no fixed costs:

    >>> balanced_ratios([0.0, 0.0], [1.0, 1 / 3])
    ([0.25, 0.75], 0.25)
    """
    if len(fixed) != len(slope) or not fixed:
        raise ValueError("fixed and slope need one entry per unit")
    if any(not b > 0 for b in slope):
        raise ValueError(f"slopes must be > 0, got {list(slope)}")
    active = list(range(len(fixed)))
    while True:
        finish = (1.0 + sum(fixed[i] / slope[i] for i in active)) / sum(
            1.0 / slope[i] for i in active
        )
        ratio = {i: (finish - fixed[i]) / slope[i] for i in active}
        keep = [i for i in active if ratio[i] > 0]
        if len(keep) == len(active):
            return [ratio.get(i, 0.0) for i in range(len(fixed))], finish
        active = keep


def _capacity(lines: Sequence[Line], threshold: float, t: float) -> float:
    """Largest share a unit finishes by ``t`` (0 when it cannot start a share by then)."""
    if t < threshold:
        return 0.0
    shares = [(t - a) / b for a, b in lines if b > 0]
    return min(shares) if shares else math.inf


def water_fill(units_lines: Sequence[Sequence[Line]]) -> tuple[list[float], float]:
    """Ratios minimising ``max_u F_u(r_u)`` with ``F_u(r) = max_i (a_i + b_i·r)``, ``Σ r = 1``.

    A unit with ratio 0 takes no part (and costs nothing). Solved exactly: the total
    share the units can finish by time ``T`` is piecewise linear in ``T``; on the segment
    where it reaches 1 every unit's binding line and the set of units taking part are
    fixed, and :func:`balanced_ratios` solves it. With one line per unit this is exactly
    :func:`balanced_ratios`.

    Returns
    -------
    (list of float, float)
        Ratios (summing to 1) and the optimal finish time (s).
    """
    if not units_lines or any(not lines for lines in units_lines):
        raise ValueError("every unit needs at least one line")
    if any(all(b <= 0 for _, b in lines) for lines in units_lines):
        raise ValueError("every unit needs a line with a positive slope")
    thresholds = [max(a for a, _ in lines) for lines in units_lines]
    ceiling = min(max(a + b for a, b in lines) for lines in units_lines)
    points = {ceiling, *(t for t in thresholds if t < ceiling)}
    for lines in units_lines:  # where a unit's binding line may change
        for a1, b1 in lines:
            for a2, b2 in lines:
                if b1 > b2 and a2 > a1:
                    t = a1 + b1 * (a2 - a1) / (b1 - b2)
                    if t < ceiling:
                        points.add(t)

    def total(t: float) -> float:
        return sum(
            _capacity(lines, thr, t) for lines, thr in zip(units_lines, thresholds, strict=True)
        )

    previous = None
    ordered = sorted(points)
    for k, point in enumerate(ordered):
        if total(point) >= 1.0 - 1e-12 or k == len(ordered) - 1:
            break
        previous = point
    if previous is not None:
        mid = 0.5 * (previous + point)
        active = [u for u, thr in enumerate(thresholds) if thr < mid]
        binding = [
            min(
                ((a, b) for a, b in units_lines[u] if b > 0),
                key=lambda line: (mid - line[0]) / line[1],
            )
            for u in active
        ]
        ratios, finish = balanced_ratios([a for a, _ in binding], [b for _, b in binding])
        slack = 1e-12 * max(abs(point), 1e-300)
        if previous - slack <= finish <= point + slack and all(r > 0 for r in ratios):
            full = [0.0] * len(units_lines)
            for u, r in zip(active, ratios, strict=True):
                full[u] = r
            return _normalised(full), finish
    # a jump at ``point`` (a unit whose time does not grow with its share): fill by capacity
    caps = [
        min(_capacity(lines, thr, point), 1.0)
        for lines, thr in zip(units_lines, thresholds, strict=True)
    ]
    return _normalised(caps), point


def _normalised(ratios: Sequence[float]) -> list[float]:
    total = math.fsum(ratios)
    return [r / total for r in ratios]
