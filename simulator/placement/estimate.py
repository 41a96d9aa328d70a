"""The pure list-schedule estimate of one request over an execution plan.

It evaluates the same :class:`~simulator.placement.plan.ExecutionPlan` the engine
executes, adding times in the engine's order, so that with one request and no
contention the two agree bit for bit (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.placement.plan import ExecutionPlan, Move
from simulator.platform import CostOracle


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


def arrival_s(
    move: Move, start_s: float, oracle: CostOracle | None = None, connected: dict | None = None
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
        t += hop.serialise_s(move.nbytes)
        t += hop.latency_s
    return t


def radio_energy_j(move: Move, oracle: CostOracle) -> float:
    """Radio energy (J) of a move's serialisation at its device ends (no promotion, no tail)."""
    total = 0.0
    for hop in move.hops:
        seconds = hop.serialise_s(move.nbytes)
        for node, radio in _device_radios(hop, oracle):
            up, down = (hop.bandwidth_bps, 0.0) if node == hop.src else (0.0, hop.bandwidth_bps)
            total += radio.connected_power_w(up, down) * seconds
    return total


def radio_state_energy_j(connected: dict, oracle: CostOracle) -> float:
    """Promotion and one full tail (J) of every RRC radio an isolated request woke."""
    total = 0.0
    for link, _node in connected:
        radio = oracle.platform.network.links[link].radio
        total += radio.promotion_w * radio.promotion_s + radio.tail_w * radio.tail_s
    return total


def estimate(plan: ExecutionPlan, oracle: CostOracle) -> Estimate:
    """List-schedule estimate of one request on an idle platform.

    Assumes no contention: no other request, and no two moves of this request on the
    same link direction at once. Under those conditions it equals the engine exactly.
    Radio energy includes, for every RRC radio the request wakes, one promotion and
    one full tail (what an isolated request costs the battery).
    """
    n = plan.size
    ready = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    radio = 0.0
    sent = 0
    finish = 0.0
    connected: dict = {}
    for move in plan.input_moves:
        arrive = arrival_s(move, 0.0, oracle, connected)
        radio += radio_energy_j(move, oracle)
        sent += move.nbytes if move.hops else 0
        for j in move.consumers:
            ready[j] = max(ready[j], arrive)
    for i in range(n):  # placement order is topological and respects unit order
        start[i] = ready[i]
        end[i] = start[i] + plan.duration_s[i]
        for j in plan.local_next[i]:
            ready[j] = max(ready[j], end[i])
        for move in plan.moves_out[i]:
            arrive = arrival_s(move, end[i], oracle, connected)
            radio += radio_energy_j(move, oracle)
            sent += move.nbytes if move.hops else 0
            if move.dst_unit is None:
                finish = max(finish, arrive)
            for j in move.consumers:
                ready[j] = max(ready[j], arrive)
    radio += radio_state_energy_j(connected, oracle)
    platform = oracle.platform
    device_j = sum(
        e
        for e, uid in zip(plan.energy_j, plan.units, strict=True)
        if platform.node_of(uid).role == "device"
    )
    return Estimate(
        finish, tuple(start), tuple(end), float(sum(plan.energy_j)), float(device_j), radio, sent
    )
