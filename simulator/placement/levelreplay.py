"""The governors' DVFS levels a lone request meets on idle units (pure).

The estimate replays a fresh :class:`~simulator.hardware.dvfs_state.DvfsState` per DVFS
unit (the engine's own object, pure) over the request's op starts
(:class:`LevelReplay`), so a lone request's levels are the governor's by construction:
an idle, unthrottled unit, the state every unit has before its first op.
:func:`back_to_back_s` is what a policy that picks "the fastest unit" compares.
"""

from __future__ import annotations

from simulator.hardware.cost import op_time_parts_s
from simulator.hardware.dvfs_state import DvfsState
from simulator.platform import CostOracle


class LevelReplay:
    """The governors' levels for one request on idle units (pure).

    One fresh :class:`~simulator.hardware.dvfs_state.DvfsState` per DVFS unit, asked at
    each op start in time order per unit, exactly as the engine asks its own: the level,
    time and energy of an op are the engine's floats for a lone request.
    """

    __slots__ = ("platform", "states")

    def __init__(self, platform):
        self.platform = platform
        self.states: dict[str, DvfsState] = {}

    def run(
        self, uid: str, start_s: float, parts: tuple[float, float, float], core_share: float
    ) -> tuple[int, float, float]:
        """(level, time in s, energy in J) of an op of ``parts`` (fixed, compute, memory
        s at the top level) starting on ``uid`` at ``start_s``."""
        state = self.states.get(uid)
        if state is None:
            state = self.states[uid] = DvfsState(self.platform.unit(uid))
        # the engine's per-level figures (computed once per plan op there, per call here)
        times_s, energies_j = state.op_costs(*parts, core_share)
        level = state.start(start_s, times_s)
        return level, times_s[level], energies_j[level]


def back_to_back_s(oracle: CostOracle, ops, uid: str) -> float:
    """Time (s) of ``ops`` run one after the other on ``uid`` by a lone request.

    On a DVFS unit, at the levels its governor picks from idle (:class:`LevelReplay`), as
    the engine runs them; otherwise the sum of the oracle's op times. What a policy that
    picks "the fastest unit" compares.
    """
    unit = oracle.platform.unit(uid)
    if unit.dvfs is None:
        return sum(oracle.op_time_s(op, uid) for op in ops)
    replay = LevelReplay(oracle.platform)
    share = unit.op_cores / unit.cores
    t = 0.0
    for op in ops:
        oracle.op_time_s(op, uid)  # raises the oracle's PlacementError if it cannot run
        _, duration_s, _ = replay.run(uid, t, op_time_parts_s(op, unit, uid), share)
        t += duration_s
    return t
