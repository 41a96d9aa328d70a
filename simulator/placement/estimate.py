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


def arrival_s(move: Move, start_s: float) -> float:
    """When a move started at ``start_s`` arrives, without contention.

    Adds hop by hop (serialise, then propagate) in the engine's order, so that the
    estimate equals the engine bit for bit.
    """
    if not move.hops:
        return start_s + move.fixed_delay_s
    t = start_s
    for hop in move.hops:
        t += hop.serialise_s(move.nbytes)
        t += hop.latency_s
    return t


def radio_energy_j(move: Move, oracle: CostOracle) -> float:
    """Radio energy (J) of a move: tx at device senders, rx at device receivers, per hop."""
    total = 0.0
    platform = oracle.platform
    for hop in move.hops:
        radio = platform.network.links[hop.link].radio
        if radio is None:
            continue
        serialise_s = hop.serialise_s(move.nbytes)
        if platform.role_of(hop.src) == "device":
            total += radio.tx_w * serialise_s
        if platform.role_of(hop.dst) == "device":
            total += radio.rx_w * serialise_s
    return total


def estimate(plan: ExecutionPlan, oracle: CostOracle) -> Estimate:
    """List-schedule estimate of one request on an idle platform.

    Assumes no contention: no other request, and no two moves of this request on the
    same link direction at once. Under those conditions it equals the engine exactly.
    """
    n = plan.size
    ready = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    radio = 0.0
    sent = 0
    finish = 0.0
    for move in plan.input_moves:
        arrive = arrival_s(move, 0.0)
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
            arrive = arrival_s(move, end[i])
            radio += radio_energy_j(move, oracle)
            sent += move.nbytes if move.hops else 0
            if move.dst_unit is None:
                finish = max(finish, arrive)
            for j in move.consumers:
                ready[j] = max(ready[j], arrive)
    platform = oracle.platform
    device_j = sum(
        e
        for e, uid in zip(plan.energy_j, plan.units, strict=True)
        if platform.node_of(uid).role == "device"
    )
    return Estimate(
        finish, tuple(start), tuple(end), float(sum(plan.energy_j)), float(device_j), radio, sent
    )
