"""The pure list-schedule estimate of one request over an execution plan.

It evaluates the same :class:`~simulator.placement.plan.ExecutionPlan` the engine
executes, adding times in the engine's order, so that with one request and no
contention the two agree bit for bit (tested).

An op on a unit with a DVFS table runs at the level its governor picks, as in the
engine: the estimate replays a fresh :class:`~simulator.hardware.dvfs_state.DvfsState`
per unit (the engine's own object, pure) over the request's op starts, so a lone
request's levels are the governor's by construction (an idle, unthrottled unit: the
state every unit has before its first op). ``levels="top"`` gives the figure at every
unit's top operating point instead (what the per-op costs of the cost oracle assume).

The inputs of a run-time decision (:class:`~simulator.placement.conditions.Conditions`),
the governors' level replay (:mod:`simulator.placement.levelreplay`) and a move's
arrival and radio energy (:mod:`simulator.placement.transfers`) live in their own
modules; their names are re-exported here, where the engine, the tests and users
import them.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.placement.conditions import NOMINAL, Conditions, Observed, declared_load
from simulator.placement.levelreplay import LevelReplay, back_to_back_s
from simulator.placement.plan import ExecutionPlan, Move
from simulator.placement.transfers import RadioUse, arrival_s, move_time_s, radio_energy_j
from simulator.platform import CostOracle

__all__ = [
    "NOMINAL",
    "Conditions",
    "Estimate",
    "LevelReplay",
    "Observed",
    "RadioUse",
    "arrival_s",
    "back_to_back_s",
    "declared_load",
    "estimate",
    "move_time_s",
    "radio_energy_j",
]


@dataclass(frozen=True)
class Estimate:
    """Contention-free schedule of one request arriving at t = 0 (seconds)."""

    latency_s: float
    start_s: tuple[float, ...]
    end_s: tuple[float, ...]
    op_energy_j: float
    device_op_energy_j: float
    radio_energy_j: float
    bytes_sent: int
    #: per op, the DVFS level it ran at (-1: a unit without DVFS, or ``levels="top"``)
    levels: tuple[int, ...] = ()

    @property
    def energy_j(self) -> float:
        """Active energy of the ops plus radio energy of the transfers (no idle power)."""
        return self.op_energy_j + self.radio_energy_j

    @property
    def device_energy_j(self) -> float:
        """The part of :attr:`energy_j` drawn on device nodes (radios are at device ends)."""
        return self.device_op_energy_j + self.radio_energy_j


def _pool_cores(
    core_free: dict[str, list[float]], plan: ExecutionPlan, i: int, free, oracle: CostOracle
) -> list[float]:
    """The sorted free times of the cores of op ``i``'s pool unit (made at its first op)."""
    uid = plan.units[i]
    cores = core_free.get(uid)
    if cores is None:
        n = oracle.platform.unit(uid).cores
        cores = core_free[uid] = [0.0 if free is None else free] * n
    return cores


def estimate(
    plan: ExecutionPlan,
    oracle: CostOracle,
    conditions: Conditions = NOMINAL,
    levels: str = "governor",
    observed: Observed | None = None,
) -> Estimate:
    """List-schedule estimate of one request on an idle platform.

    Assumes no contention: no other request, and no two moves of this request on the
    same link direction at once. Under those conditions it equals the engine exactly.
    On a unit the placement runs as a core pool, ops are taken in placement order, each
    on the cores free first, starting when its inputs are in and enough cores are free:
    the engine's pool (which starts the queued op with the smallest key first) does the
    same when the request's ops there become ready in placement order (tested); when a
    later op is ready first, the engine may start it earlier than the estimate does.
    DVFS units run at the levels their governors pick for this request alone, starting
    idle and unthrottled (:class:`LevelReplay`).
    Radio energy includes, for every stateful radio the request wakes, each promotion
    its transfers pay, the tail between them and one full tail after the last (what an
    isolated request costs the battery).

    Parameters
    ----------
    plan : ExecutionPlan
    oracle : CostOracle
    conditions : Conditions
        Observed link bandwidths, queued work per unit and awake radios (a run-time
        decision's view); the default is the nominal, idle platform.
    levels : {"governor", "top"}
        ``governor``: each DVFS unit at the level its governor picks (the engine's);
        ``top``: every unit at its top operating point (the oracle's per-op costs).
    observed : Observed or None
        Op and move times seen in a run, used instead of the estimate's own where given
        (energies stay the estimate's): ``socsim explain`` replays a simulated request
        with them to split its gap from the prediction into causes.

    Returns
    -------
    Estimate
        ``latency_s`` is ``inf`` when an observed bandwidth on a used direction is 0.

    Raises
    ------
    ValueError
        When ``levels`` is neither, or ``conditions`` give a radio tail for a link that
        has no radio.
    """
    if levels not in ("governor", "top"):
        raise ValueError(f"estimate: levels must be 'governor' or 'top', got {levels!r}")
    n = plan.size
    ready = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    op_j = list(plan.energy_j)
    level = [-1] * n
    replay = LevelReplay(oracle.platform) if levels == "governor" else None
    radio = 0.0
    sent = 0
    finish = 0.0
    radios: dict[tuple[str, str], RadioUse] = {}
    for (link, node), ago_s in conditions.radio_tail_s.items():
        link_radio = oracle.platform.network.links[link].radio
        if link_radio is None:  # the engine lists only links with a radio
            raise ValueError(
                f"estimate: conditions give a radio tail for link '{link}', which has no radio"
            )
        radios[(link, node)] = RadioUse(link_radio, -ago_s)
    unit_free = dict(conditions.unit_free_s)
    load = conditions.load_factor
    pools = plan.pool_units
    core_free: dict[str, list[float]] = {}  # per pool unit, when each core is free

    def arrive_at(move: Move, t: float) -> float:
        if observed is not None and move.hops:
            seen_s = observed.move_s.get((move.src_op, move.dst_unit))
            if seen_s is not None:
                return t + seen_s
        return arrival_s(move, t, oracle, radios, conditions)

    for move in plan.input_moves:
        arrive = arrive_at(move, 0.0)
        radio += radio_energy_j(move, oracle, conditions)
        sent += move.nbytes if move.hops else 0
        for j in move.consumers:
            ready[j] = max(ready[j], arrive)
    for i in range(n):  # placement order is topological and respects unit order
        free = unit_free.pop(plan.units[i], None)  # only a unit's first op waits for it
        start[i] = ready[i] if free is None else max(ready[i], free)
        cores = None
        if pools and plan.units[i] in pools:
            cores = _pool_cores(core_free, plan, i, free, oracle)
            start[i] = max(start[i], cores[plan.op_cores[i] - 1])
        parts = plan.dvfs_parts[i]
        seen_s = observed.op_s[i] if observed is not None else None
        factor = load.get(plan.units[i]) if load else None
        if seen_s is not None:
            end[i] = start[i] + seen_s
        elif replay is None or parts is None:
            duration_s = plan.duration_s[i]
            end[i] = start[i] + (duration_s if factor is None else duration_s * factor)
        else:
            uid = plan.units[i]
            level[i], duration_s, op_j[i] = replay.run(uid, start[i], parts, plan.core_share[i])
            end[i] = start[i] + (duration_s if factor is None else duration_s * factor)
        if cores is not None:  # the op holds the cores free first (the pool's order)
            cores[: plan.op_cores[i]] = [end[i]] * plan.op_cores[i]
            cores.sort()
        for j in plan.local_next[i]:
            ready[j] = max(ready[j], end[i])
        for move in plan.moves_out[i]:
            arrive = arrive_at(move, end[i])
            radio += radio_energy_j(move, oracle, conditions)
            sent += move.nbytes if move.hops else 0
            if move.dst_unit is None:
                finish = max(finish, arrive)
            for j in move.consumers:
                ready[j] = max(ready[j], arrive)
    radio += sum(use.finish_j() for use in radios.values())
    platform = oracle.platform
    device_j = sum(
        e for e, uid in zip(op_j, plan.units, strict=True) if platform.node_of(uid).role == "device"
    )
    return Estimate(
        finish,
        tuple(start),
        tuple(end),
        float(sum(op_j)),
        float(device_j),
        radio,
        sent,
        tuple(level),
    )
