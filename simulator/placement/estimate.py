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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.frozen import FrozenMap
from simulator.hardware.cost import op_time_parts_s
from simulator.hardware.dvfs_state import DvfsState
from simulator.network.radio import Radio
from simulator.network.topology import BITS_PER_BYTE
from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import CostOracle


@dataclass(frozen=True)
class Conditions:
    """What a run-time decision knows that the nominal platform does not (SI units).

    Attributes
    ----------
    bandwidth_bps : Mapping of (link, src node) -> bit/s
        Observed bandwidth of a link direction; directions not listed use the link's
        nominal bandwidth.
    unit_free_s : Mapping of unit id -> s
        Earliest time (from the request's arrival) a unit can start this request's
        first op on it: the work already queued or reserved there (a run-time snapshot:
        the rest of the op it runs, its queue, and the ops of requests in flight placed
        on it that are not ready yet). Only the request's first op on the unit waits.
    radio_tail_s : Mapping of (link, node) -> s
        Stateful radios that are not idle: how long ago each one's tail began
        (``-inf`` for a radio that is carrying transfers). The estimate follows the
        state machine from there: a radio still connected pays no promotion, one in a
        tail stage pays that stage's promotion; idle radios are not listed.
    load_factor : Mapping of unit id -> factor
        Neurosurgeon's K_load (> 0): each op on a listed unit lasts ``factor`` times its
        plan duration in the estimate (its energy is unchanged: the op runs as long, it
        is the request that waits). :func:`declared_load` reads it from the nodes'
        ``load_factor``.
    """

    bandwidth_bps: Mapping[tuple[str, str], float] = field(default_factory=FrozenMap)
    unit_free_s: Mapping[str, float] = field(default_factory=FrozenMap)
    radio_tail_s: Mapping[tuple[str, str], float] = field(default_factory=FrozenMap)
    load_factor: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        for key, bps in self.bandwidth_bps.items():
            if not bps >= 0:
                raise ValueError(f"observed bandwidth of {key} must be >= 0, got {bps}")
        object.__setattr__(self, "bandwidth_bps", FrozenMap(self.bandwidth_bps))
        object.__setattr__(self, "unit_free_s", FrozenMap(self.unit_free_s))
        object.__setattr__(self, "radio_tail_s", FrozenMap(self.radio_tail_s))
        for uid, factor in self.load_factor.items():
            if not (factor > 0 and math.isfinite(factor)):
                raise ValueError(f"load factor of '{uid}' must be > 0, got {factor}")
        object.__setattr__(self, "load_factor", FrozenMap(self.load_factor))


NOMINAL = Conditions()


def declared_load(platform) -> dict[str, float]:
    """Unit id -> the ``load_factor`` of its node, for the nodes that declare one != 1."""
    return {
        uid: platform.node_of(uid).load_factor
        for uid in platform.unit_ids
        if platform.node_of(uid).load_factor != 1.0
    }


@dataclass(frozen=True)
class Observed:
    """Times seen in a run, to replay one request's list schedule with them (SI units).

    Attributes
    ----------
    op_s : tuple of (float or None)
        Per op of the plan, the time it ran for (None: the estimate's own).
    move_s : Mapping of (src op index or None, dst unit or None) -> s
        Per network move, the time from leaving its producer (or the request's arrival)
        to arriving (waits for a radio or a busy link, serialisation, propagation);
        moves not listed use the estimate's.
    """

    op_s: tuple[float | None, ...]
    move_s: Mapping[tuple[int | None, str | None], float] = field(default_factory=FrozenMap)


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


def move_time_s(move: Move) -> float:
    """Contention-free duration (s) of one move."""
    return move.transfer.time_s(move.nbytes)


def _device_radios(hop, oracle: CostOracle):
    """(node, radio) of every device end of the hop's link that has a radio."""
    platform = oracle.platform
    radio = platform.network.links[hop.link].radio
    if radio is None:
        return ()
    return tuple((n, radio) for n in (hop.src, hop.dst) if platform.role_of(n) == "device")


class RadioUse:
    """What the estimate knows of one stateful radio during one request.

    It follows the radio's state machine in closed form: when its last transfer ended,
    hence which tail stage (or idle) a new transfer finds and which promotion it pays,
    and the promotion and tail energy drawn so far. Exact when the request's transfers
    on the radio are met in time order (a chain of moves, as offloading plans are).
    """

    __slots__ = ("busy", "energy_j", "radio", "released_s")

    def __init__(self, radio: Radio, tail_began_s: float | None = None):
        """``tail_began_s``: when the radio's current tail began (before the request:
        negative), ``inf`` for a radio busy with other transfers, None for idle."""
        self.radio = radio
        # a radio met busy (carrying other transfers) stays connected throughout, and
        # the tail after them is theirs; one met in its tail has paid that tail so far
        self.busy = tail_began_s == math.inf
        self.released_s: float | None = math.inf if self.busy else tail_began_s
        self.energy_j = 0.0  # promotion and tail energy (J) so far
        if tail_began_s is not None and not self.busy:
            self.energy_j = -radio.tail_energy_j(-tail_began_s)  # sunk before t = 0

    def connect(self, t: float) -> float:
        """A transfer asks for the radio at ``t``: when it is connected (after a promotion)."""
        radio, released_s = self.radio, self.released_s
        if released_s is not None and t < released_s:
            return t  # still carrying an earlier transfer: connected
        if released_s is not None:
            self.energy_j += radio.tail_energy_j(t - released_s)  # the tail it sat in
        delay_s, power_w = radio.promotion(radio.stage_at(released_s, t))
        self.energy_j += power_w * delay_s
        return t + delay_s

    def hold(self, connected_s: float, start_s: float, end_s: float) -> None:
        """Connected from ``connected_s``, serialising ``start_s`` -> ``end_s``."""
        # waiting connected for the hop's other radio: base power, no throughput
        self.energy_j += self.radio.connected_power_w(0.0, 0.0) * (start_s - connected_s)
        self.released_s = end_s if self.released_s is None else max(self.released_s, end_s)

    def finish_j(self) -> float:
        """Everything it cost, with one full tail after the last transfer (J)."""
        if self.busy:
            return self.energy_j
        return self.energy_j + self.radio.tail_energy_j(math.inf)


def _serialise_s(hop, nbytes: float, conditions: Conditions) -> float:
    observed = conditions.bandwidth_bps.get((hop.link, hop.src))
    if observed is None:
        return hop.serialise_s(nbytes)
    if observed <= 0:
        return math.inf if nbytes else 0.0
    return nbytes * BITS_PER_BYTE / observed


def arrival_s(
    move: Move,
    start_s: float,
    oracle: CostOracle | None = None,
    radios: dict | None = None,
    conditions: Conditions = NOMINAL,
) -> float:
    """When a move started at ``start_s`` arrives, without contention.

    Adds hop by hop (serialise, then propagate; a download propagates first,
    ``Hop.lead_s``) in the engine's order, so that the estimate equals the engine bit
    for bit. With ``oracle`` and ``radios`` ((link, node)
    -> :class:`RadioUse`, filled as hops meet radios), a hop through a stateful radio
    waits for the promotion the radio's state calls for (from idle, or from a tail stage
    such as UMTS FACH) and the radio's tail starts when the hop has serialised.
    """
    if not move.hops:
        return start_s + move.fixed_delay_s
    t = start_s
    for hop in move.hops:
        # a download propagates first: its radio connects when the first bytes reach
        # the device (``Hop.lead_s``; 0 otherwise, and t + 0.0 is t)
        t += hop.lead_s
        if radios is None:
            t += _serialise_s(hop, move.nbytes, conditions)
            t += hop.latency_s - hop.lead_s
            continue
        held = []
        for node, radio in _device_radios(hop, oracle):
            if radio.stateful:
                use = radios.setdefault((hop.link, node), RadioUse(radio))
                held.append((use, use.connect(t)))
        t = max([t, *(connected for _, connected in held)])
        end = t + _serialise_s(hop, move.nbytes, conditions)
        for use, connected in held:
            use.hold(connected, t, end)
        t = end
        t += hop.latency_s - hop.lead_s
    return t


def radio_energy_j(move: Move, oracle: CostOracle, conditions: Conditions = NOMINAL) -> float:
    """Radio energy (J) of a move's serialisation at its device ends (no promotion, no tail)."""
    total = 0.0
    for hop in move.hops:
        seconds = _serialise_s(hop, move.nbytes, conditions)
        bps = conditions.bandwidth_bps.get((hop.link, hop.src), hop.bandwidth_bps)
        if not seconds or not math.isfinite(seconds):
            total += math.inf if seconds else 0.0
            continue
        for node, radio in _device_radios(hop, oracle):
            up, down = (bps, 0.0) if node == hop.src else (0.0, bps)
            total += radio.connected_power_w(up, down) * seconds
    return total


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
