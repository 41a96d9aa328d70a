"""The pure list-schedule estimate of one request over an execution plan.

It evaluates the same :class:`~simulator.placement.plan.ExecutionPlan` the engine
executes, adding times in the engine's order, so that with one request and no
contention the two agree bit for bit (tested).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.frozen import FrozenMap
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
        first op on it: the work already queued there.
    awake_radios : frozenset of (link, node)
        Radios already connected (or in their tail): no promotion is paid.
    """

    bandwidth_bps: Mapping[tuple[str, str], float] = field(default_factory=FrozenMap)
    unit_free_s: Mapping[str, float] = field(default_factory=FrozenMap)
    awake_radios: frozenset = frozenset()

    def __post_init__(self) -> None:
        for key, bps in self.bandwidth_bps.items():
            if not bps >= 0:
                raise ValueError(f"observed bandwidth of {key} must be >= 0, got {bps}")
        object.__setattr__(self, "bandwidth_bps", FrozenMap(self.bandwidth_bps))
        object.__setattr__(self, "unit_free_s", FrozenMap(self.unit_free_s))


NOMINAL = Conditions()


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

    @property
    def energy_j(self) -> float:
        """Active energy of the ops plus radio energy of the transfers (no idle power)."""
        return self.op_energy_j + self.radio_energy_j

    @property
    def device_energy_j(self) -> float:
        """The part of :attr:`energy_j` drawn on device nodes (radios are at device ends)."""
        return self.device_op_energy_j + self.radio_energy_j


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
    connected: dict | None = None,
    conditions: Conditions = NOMINAL,
) -> float:
    """When a move started at ``start_s`` arrives, without contention.

    Adds hop by hop (serialise, then propagate) in the engine's order, so that the
    estimate equals the engine bit for bit. With ``oracle`` and ``connected`` (radio
    (link, node) -> time it is connected), the first hop through an idle RRC radio waits
    for its promotion; the radio then stays connected (no tail ends within a request).
    """
    if not move.hops:
        return start_s + move.fixed_delay_s
    t = start_s
    for hop in move.hops:
        if connected is not None:
            for node, radio in _device_radios(hop, oracle):
                if radio.stateful:
                    key = (hop.link, node)
                    if key not in connected:
                        connected[key] = t + radio.promotion_s
                    t = max(t, connected[key])
        t += _serialise_s(hop, move.nbytes, conditions)
        t += hop.latency_s
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


def radio_state_energy_j(
    connected: dict, oracle: CostOracle, conditions: Conditions = NOMINAL
) -> float:
    """Promotion and one full tail (J) of every RRC radio an isolated request woke."""
    total = 0.0
    for key in connected:
        if key in conditions.awake_radios:
            continue
        radio = oracle.platform.network.links[key[0]].radio
        total += radio.promotion_w * radio.promotion_s + radio.tail_w * radio.tail_s
    return total


def estimate(plan: ExecutionPlan, oracle: CostOracle, conditions: Conditions = NOMINAL) -> Estimate:
    """List-schedule estimate of one request on an idle platform.

    Assumes no contention: no other request, and no two moves of this request on the
    same link direction at once. Under those conditions it equals the engine exactly.
    Radio energy includes, for every RRC radio the request wakes, one promotion and
    one full tail (what an isolated request costs the battery).

    Parameters
    ----------
    plan : ExecutionPlan
    oracle : CostOracle
    conditions : Conditions
        Observed link bandwidths, queued work per unit and awake radios (a run-time
        decision's view); the default is the nominal, idle platform.

    Returns
    -------
    Estimate
        ``latency_s`` is ``inf`` when an observed bandwidth on a used direction is 0.
    """
    n = plan.size
    ready = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    radio = 0.0
    sent = 0
    finish = 0.0
    connected: dict = dict.fromkeys(conditions.awake_radios, 0.0)
    unit_free = dict(conditions.unit_free_s)
    for move in plan.input_moves:
        arrive = arrival_s(move, 0.0, oracle, connected, conditions)
        radio += radio_energy_j(move, oracle, conditions)
        sent += move.nbytes if move.hops else 0
        for j in move.consumers:
            ready[j] = max(ready[j], arrive)
    for i in range(n):  # placement order is topological and respects unit order
        free = unit_free.pop(plan.units[i], None)  # only a unit's first op waits for it
        start[i] = ready[i] if free is None else max(ready[i], free)
        end[i] = start[i] + plan.duration_s[i]
        for j in plan.local_next[i]:
            ready[j] = max(ready[j], end[i])
        for move in plan.moves_out[i]:
            arrive = arrival_s(move, end[i], oracle, connected, conditions)
            radio += radio_energy_j(move, oracle, conditions)
            sent += move.nbytes if move.hops else 0
            if move.dst_unit is None:
                finish = max(finish, arrive)
            for j in move.consumers:
                ready[j] = max(ready[j], arrive)
    radio += radio_state_energy_j(connected, oracle, conditions)
    platform = oracle.platform
    device_j = sum(
        e
        for e, uid in zip(plan.energy_j, plan.units, strict=True)
        if platform.node_of(uid).role == "device"
    )
    return Estimate(
        finish, tuple(start), tuple(end), float(sum(plan.energy_j)), float(device_j), radio, sent
    )
