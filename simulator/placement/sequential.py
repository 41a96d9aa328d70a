"""The sequential cost model of a placement: what DADS's minimum cut minimises.

Every op's cost at its location plus every tensor move of the execution plan, added as
if nothing overlapped (:func:`sequential_cost`). It counts what the plan moves (see
:mod:`simulator.placement.plan`): a producer's output crosses once per direction however
many consumers sit on the other side (the largest edge's bytes); an edge with an
explicit ``comm_s`` moves alone; the request input (one tensor of
``graph.request_input_bytes``) reaches each location that runs an entry op, once; every
exit op's output returns to the source node. Costs by objective: ``latency`` adds
seconds, ``device_energy`` adds op energy on device-role nodes plus radio energy at
device ends, ``total_energy`` adds all op energy plus radio energy, ``weighted`` adds the
weighted sum of those three. A node's ``load_factor`` (Neurosurgeon's K_load) multiplies
the time of every op on its units, not their energy.

:class:`SequentialCosts` prices each element (an op run, a tensor move) in exact
rationals or floats; :mod:`simulator.placement.cutnetwork` builds the flow network from
those prices and :mod:`simulator.placement.mincut` is the policy. Pure: no SimPy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from simulator.graph.model import ModelGraph, Op
from simulator.placement.base import Placement
from simulator.placement.conditions import declared_load
from simulator.placement.objectives import Objective, objective_of
from simulator.placement.plan import Move, compile_plan
from simulator.placement.transfers import radio_energy_j
from simulator.platform import CostOracle, Transfer


class SequentialCosts:
    """Objective cost of each element of the sequential model (an op run, a tensor move).

    Parameters
    ----------
    oracle : CostOracle
        Op times and energies, routes and transfers.
    objective : Objective
        What a cost adds: seconds, joules or their weighted sum.
    exact : bool
        True: every cost is the ``Fraction`` of its decimal value (ties are real ties);
        False: floats.
    """

    def __init__(self, oracle: CostOracle, objective: Objective, exact: bool):
        self.oracle = oracle
        self.objective = objective
        self.exact = exact
        self.zero = Fraction(0) if exact else 0.0
        self.weights = {k: self.num(w) for k, w in objective.weights.items()}
        # the nodes' declared load_factor (K_load) stretches op times, not op energy
        self.load = declared_load(oracle.platform)

    def num(self, value: float):
        """``value`` in the model's arithmetic (a ``Fraction`` of its repr when exact)."""
        return Fraction(repr(float(value))) if self.exact else float(value)

    def combine(self, time_s: float, device_j: float, total_j: float):
        """The objective's cost of an element taking ``time_s`` seconds and drawing
        ``device_j`` joules on device nodes of ``total_j`` joules in all."""
        name = self.objective.name
        if name == "latency":
            return self.num(time_s)
        if name == "device_energy":
            return self.num(device_j)
        if name == "total_energy":
            return self.num(total_j)
        metrics = {"latency": time_s, "device_energy": device_j, "total_energy": total_j}
        return sum((w * self.num(metrics[k]) for k, w in self.weights.items()), self.zero)

    def op(self, op: Op, uid: str, time_s: float | None = None, energy_j: float | None = None):
        """Cost of running ``op`` on ``uid``, or None when the unit cannot run it."""
        if time_s is None:
            if not self.oracle.supports(op, uid):
                return None
            time_s = self.oracle.op_time_s(op, uid)
            energy_j = self.oracle.op_energy_j(op, uid)
        assert energy_j is not None  # callers give a plan's time and energy together
        factor = self.load.get(uid)
        if factor is not None:
            time_s *= factor
        on_device = self.oracle.platform.node_of(uid).role == "device"
        return self.combine(time_s, energy_j if on_device else 0.0, energy_j)

    def move(self, transfer: Transfer, nbytes: int):
        """Cost of moving ``nbytes`` the way ``transfer`` says (time and radio energy)."""
        if transfer.kind == "local":
            return self.zero
        radio_j = radio_energy_j(Move(None, None, None, nbytes, transfer, ()), self.oracle)
        return self.combine(transfer.time_s(nbytes), radio_j, radio_j)


def node_transfer(oracle: CostOracle, src_node: str, dst_node: str) -> Transfer:
    """The transfer from node ``src_node`` to ``dst_node`` (``local`` on the same node)."""
    hops = oracle.route(src_node, dst_node)
    return Transfer("network" if hops else "local", hops=hops)


def as_objective(objective: Objective | str | Mapping[str, Any]) -> Objective:
    """An :class:`~simulator.placement.objectives.Objective` from itself, its name or
    policy options."""
    if isinstance(objective, Objective):
        return objective
    if isinstance(objective, str):
        return Objective(objective)
    return objective_of(objective)


def sequential_cost(
    graph: ModelGraph,
    assignment: Mapping[str, str],
    oracle: CostOracle,
    source: str,
    objective: Objective | str | Mapping[str, Any] = "latency",
) -> float:
    """Cost of ``assignment`` under the sequential model ``min_cut`` optimises.

    The sum, in exact rational arithmetic of each term's decimal value, of every op's
    cost on its unit and every tensor move of the execution plan (request input, edges
    between units, outputs returning to ``source``), as if nothing overlapped. Works for
    any assignment (any number of units). ``objective`` is an
    :class:`~simulator.placement.objectives.Objective`, its name, or policy options.

    Returns
    -------
    float
        The cost (seconds, joules or the weighted sum); ``inf`` when a unit cannot run
        an op assigned to it.
    """
    for op in graph:
        if not oracle.supports(op, assignment[op.name]):
            return math.inf
    costs = SequentialCosts(oracle, as_objective(objective), exact=True)
    plan = compile_plan(graph, Placement(assignment, graph.order, "sequential", source), oracle)
    total = costs.zero
    for i in range(plan.size):
        op = graph.op(plan.ops[i])
        total += costs.op(op, plan.units[i], plan.duration_s[i], plan.energy_j[i])
    moves = list(plan.input_moves) + [m for out in plan.moves_out for m in out]
    for move in moves:
        total += costs.move(move.transfer, move.nbytes)
    return float(total)
