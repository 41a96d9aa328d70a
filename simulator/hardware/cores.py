"""Per-op cores: an op's cost on ``k`` of a unit's cores, and the ``auto`` choice of ``k``.

Pure functions. An op that asks for ``k`` cores costs what it would on the unit with
``cores_per_op: k`` (Amdahl's speedup and the ``barrier_s × log2 k`` barrier of
:mod:`simulator.hardware.cost`, unchanged), and draws ``k / cores`` of the unit's active
power. docs/cost-model.md ("Per-op cores") states the rule of :func:`auto_cores`.
"""

from __future__ import annotations

import dataclasses

from simulator.graph.model import Op
from simulator.hardware.cost import op_time_s
from simulator.hardware.units import ComputeUnit

#: default of the manual policy's ``auto_efficiency``: an op takes more cores only while
#: each core still does at least 3/4 of the work it does alone (with Amdahl alone: 2
#: cores from p >= 2/3, 3 from p >= 5/6, 4 from p >= 8/9)
DEFAULT_AUTO_EFFICIENCY = 0.75


def with_cores(unit: ComputeUnit, cores: int) -> ComputeUnit:
    """``unit`` whose ops use ``cores`` of its cores (its ``cores_per_op`` set to ``cores``).

    Raises
    ------
    ValueError
        When ``cores`` is not between 1 and ``unit.cores``.
    """
    if not 1 <= cores <= unit.cores:
        raise ValueError(
            f"unit '{unit.name}' has {unit.cores} cores: an op cannot use {cores} "
            f"(1 to {unit.cores})"
        )
    if cores == unit.op_cores:
        return unit
    return dataclasses.replace(unit, cores_per_op=cores)


def time_on_cores_s(op: Op, unit: ComputeUnit, cores: int, unit_id: str = "") -> float:
    """Time (s) of ``op`` on ``cores`` of ``unit``'s cores (the cost model, unchanged)."""
    return op_time_s(op, with_cores(unit, cores), unit_id)


def auto_cores(
    op: Op, unit: ComputeUnit, unit_id: str = "", min_efficiency: float = DEFAULT_AUTO_EFFICIENCY
) -> int:
    """The cores ``auto`` gives ``op`` on ``unit``.

    The fastest ``k`` in ``1 .. unit.cores`` whose parallel efficiency
    ``E(k) = t(1) / (k · t(k))`` is at least ``min_efficiency`` (equivalently: whose
    time-cores product ``k · t(k)`` is at most ``t(1) / min_efficiency``); among equal
    times the fewest cores. ``k = 1`` always qualifies (``E(1) = 1``). So a layer with a
    low parallel fraction (or memory-bound, or with a tabled time, which cores do not
    shorten) takes few cores and leaves the rest to other ops that are ready.

    Parameters
    ----------
    op : Op
    unit : ComputeUnit
    unit_id : str
        The unit's qualified id (for tabled times).
    min_efficiency : float
        In (0, 1].

    Returns
    -------
    int
        Between 1 and ``unit.cores``.
    """
    if not 0.0 < min_efficiency <= 1.0:
        raise ValueError(f"min_efficiency must be in (0, 1], got {min_efficiency}")
    one_s = time_on_cores_s(op, unit, 1, unit_id)
    best, best_s = 1, one_s
    for k in range(2, unit.cores + 1):
        t_s = time_on_cores_s(op, unit, k, unit_id)
        if k * t_s * min_efficiency <= one_s and t_s < best_s:
            best, best_s = k, t_s
    return best
