"""DADS's minimum cut (Hu et al., INFOCOM 2019): the best device/remote partition.

Finds the exact optimum over *all* device/remote partitions of the *sequential* cost
model (:func:`sequential_cost`): every op's cost at its location plus every tensor move
of the execution plan, added as if nothing overlapped. The partition is a minimum s–t
cut of a flow network whose cut value equals that cost; the prefix cuts are partitions
too, so the result is never worse than the best chain split under the same model. Ties
go to the device (the largest optimal device side).

The sequential model counts what the plan moves (see :mod:`simulator.placement.plan`):
a producer's output crosses once per direction however many consumers sit on the other
side (the largest edge's bytes); an edge with an explicit ``comm_s`` moves alone; the
request input (one tensor of ``graph.request_input_bytes``) reaches each location that
runs an entry op, once; every exit op's output returns to the source node. Costs by
objective: ``latency`` adds seconds, ``device_energy`` adds op energy on device-role
nodes plus radio energy at device ends, ``total_energy`` adds all op energy plus radio
energy, ``weighted`` adds the weighted sum of those three. A node's ``load_factor``
(Neurosurgeon's K_load) multiplies the time of every op on its units, not their energy;
option ``remote_queued_ms`` adds that wait once when any op is remote (latency terms).
Pure: no SimPy, no I/O.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import networkx as nx

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph, Op
from simulator.placement.base import POLICIES, Placement
from simulator.placement.estimate import declared_load, estimate, radio_energy_j
from simulator.placement.locations import (
    INPUT_LABEL,
    LOAD_OPTIONS,
    LOCATION_OPTIONS,
    load_conditions,
    location_objective,
    resolve_locations,
)
from simulator.placement.maxflow import min_cut_sink_side, scale_to_integers
from simulator.placement.objectives import (
    Objective,
    objective_of,
    violations,
    with_common_options,
)
from simulator.placement.plan import Move, compile_plan
from simulator.platform import CostOracle, Transfer
from simulator.schema import Field, Text

#: ``min_cut`` option ``exact: auto`` computes in rationals up to this many ops.
EXACT_AUTO_MAX_OPS = 1000


# -- the sequential cost model ------------------------------------------------------------
class _Costs:
    """Objective cost of each element of the sequential model (an op run, a tensor move)."""

    def __init__(self, oracle: CostOracle, objective: Objective, exact: bool):
        self.oracle = oracle
        self.objective = objective
        self.exact = exact
        self.zero = Fraction(0) if exact else 0.0
        self.weights = {k: self.num(w) for k, w in objective.weights.items()}
        # the nodes' declared load_factor (K_load) stretches op times, not op energy
        self.load = declared_load(oracle.platform)

    def num(self, value: float):
        return Fraction(repr(float(value))) if self.exact else float(value)

    def combine(self, time_s: float, device_j: float, total_j: float):
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


def _node_transfer(oracle: CostOracle, src_node: str, dst_node: str) -> Transfer:
    hops = oracle.route(src_node, dst_node)
    return Transfer("network" if hops else "local", hops=hops)


def _aslocation_objective(objective: Objective | str | Mapping[str, Any]) -> Objective:
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
    costs = _Costs(oracle, _aslocation_objective(objective), exact=True)
    plan = compile_plan(graph, Placement(assignment, graph.order, "sequential", source), oracle)
    total = costs.zero
    for i in range(plan.size):
        op = graph.op(plan.ops[i])
        total += costs.op(op, plan.units[i], plan.duration_s[i], plan.energy_j[i])
    moves = list(plan.input_moves) + [m for out in plan.moves_out for m in out]
    for move in moves:
        total += costs.move(move.transfer, move.nbytes)
    return float(total)


# -- min_cut -------------------------------------------------------------------------------
def preflow_cut(arcs, source, sink):
    """(max-flow value, nodes reaching ``sink`` in the residual graph) by networkx
    preflow-push; ``arcs`` are (u, v, capacity or None for infinite)."""
    g = nx.DiGraph()
    g.add_node(source)
    g.add_node(sink)
    for u, v, cap in arcs:
        if cap is None:
            g.add_edge(u, v)
        else:
            g.add_edge(u, v, capacity=cap)
    residual = nx.algorithms.flow.preflow_push(g, source, sink)
    reach = {sink}
    queue = deque([sink])
    while queue:
        v = queue.popleft()
        for u, arc in residual.pred[v].items():
            if u not in reach and arc["capacity"] - arc["flow"] > 0:
                reach.add(u)
                queue.append(u)
    return residual.graph["flow_value"], reach


class _CutNetwork:
    """The s–t flow network whose cut values are the sequential costs of partitions.

    Node ``S`` is the device side and ``T`` the remote side; op ``i`` (index in
    ``graph.order``) ends on the device iff it stays on the source side of the cut.
    Capacities: ``S -> i`` = cost of i on the remote side, ``i -> T`` = cost on the
    device side (infinite where the unit cannot run it), plus auxiliary nodes so that a
    producer's output is paid once per direction, at the largest crossing edge's bytes.
    """

    S, T = "S", "T"

    def __init__(
        self,
        graph,
        oracle,
        source,
        device,
        remote,
        costs: _Costs,
        policy: str,
        remote_queued_s: float = 0.0,
    ):
        self.graph = graph
        self.costs = costs
        self.ops = list(graph.order)
        self.index = {name: i for i, name in enumerate(self.ops)}
        self.capacity: dict[tuple, Any] = {}  # None = infinite
        self.aux: dict[tuple, tuple[bool, list[int]]] = {}  # node -> (forward, end ops)
        node_d = oracle.platform.node_of(device).name
        node_r = oracle.platform.node_of(remote).name
        exits = set(graph.exit_ops())
        back_d = _node_transfer(oracle, node_d, source)
        back_r = _node_transfer(oracle, node_r, source)
        for name in self.ops:
            op = graph.op(name)
            cost_d, cost_r = costs.op(op, device), costs.op(op, remote)
            if cost_d is None and cost_r is None:
                raise PlacementError(
                    f"neither '{device}' nor '{remote}' can run it "
                    f"({oracle.unsupported_reason(op, device)})",
                    policy,
                    name,
                )
            if name in exits:
                if cost_d is not None:
                    cost_d += costs.move(back_d, op.output_bytes)
                if cost_r is not None:
                    cost_r += costs.move(back_r, op.output_bytes)
            self.add(self.S, self.index[name], cost_r)
            self.add(self.index[name], self.T, cost_d)

        d_to_r = oracle.edge_transfer(None, device, remote)
        r_to_d = oracle.edge_transfer(None, remote, device)
        for name in self.ops:
            i = self.index[name]
            grouped = []
            for dst in graph.successors(name):
                edge = graph.edge(name, dst)
                j = self.index[dst]
                if edge.comm_s is not None:
                    forth = oracle.edge_transfer(edge, device, remote)
                    back = oracle.edge_transfer(edge, remote, device)
                    self.add(i, j, costs.move(forth, edge.bytes))
                    self.add(j, i, costs.move(back, edge.bytes))
                else:
                    grouped.append((j, edge.bytes))
            if grouped:
                self.stair(i, grouped, lambda b: costs.move(d_to_r, b), forward=True)
                self.stair(i, grouped, lambda b: costs.move(r_to_d, b), forward=False)

        # the request input is one tensor: each location running an entry op gets all of it
        entries = [(self.index[n], graph.request_input_bytes) for n in graph.entry_ops()]
        to_r = _node_transfer(oracle, source, node_r)
        to_d = _node_transfer(oracle, source, node_d)
        self.stair(self.S, entries, lambda b: costs.move(to_r, b), forward=True)
        self.stair(self.T, entries, lambda b: costs.move(to_d, b), forward=False)
        if remote_queued_s:  # paid once if any op is remote: the queue ahead of it there
            every = [(self.index[n], 1) for n in self.ops]
            wait = costs.combine(remote_queued_s, 0.0, 0.0)
            self.stair(self.S, every, lambda b: wait, forward=True)

    def add(self, u, v, cap) -> None:
        """Add ``cap`` to edge u -> v (None: infinite)."""
        key = (u, v)
        if cap is None:
            self.capacity[key] = None
            return
        if cap == 0 and key not in self.capacity:
            return
        if key in self.capacity:
            if self.capacity[key] is not None:
                self.capacity[key] += cap
        else:
            self.capacity[key] = cap

    def stair(self, hub, ends: list[tuple[int, int]], cost, forward: bool) -> None:
        """Pay ``cost(max bytes of the ends on the other side of hub)``, once.

        ``forward``: paid when ``hub`` is on the device side and some end on the remote
        side (a device -> remote move); otherwise the reverse. ``cost`` must not
        decrease with bytes. One auxiliary node per distinct byte size: the one for
        size β is pulled across when an end of >= β bytes is, and carries
        cost(β) - cost(next smaller size), so the crossing ones add up to cost(max).
        """
        if len(ends) == 1:
            j, nbytes = ends[0]
            if forward:
                self.add(hub, j, cost(nbytes))
            else:
                self.add(j, hub, cost(nbytes))
            return
        sizes = sorted({nbytes for _, nbytes in ends}, reverse=True)
        values = [cost(b) for b in sizes] + [self.costs.zero]
        for level, size in enumerate(sizes):
            step = values[level] - values[level + 1]
            if step == 0:
                continue
            aux = ("aux", len(self.aux))
            self.aux[aux] = (forward, [j for j, nbytes in ends if nbytes >= size])
            if forward:
                self.add(hub, aux, step)
                for j, nbytes in ends:
                    if nbytes >= size:
                        self.add(aux, j, None)
            else:
                self.add(aux, hub, step)
                for j, nbytes in ends:
                    if nbytes >= size:
                        self.add(j, aux, None)

    def solve(self):
        """(cut value, device-side op indices): the largest device side of a minimum cut."""
        if self.costs.exact:  # integers over the common denominator, our own max-flow
            caps, denominator = scale_to_integers(self.capacity.values())
            arcs = [(u, v, c) for (u, v), c in zip(self.capacity, caps, strict=True)]
            flow, reach = min_cut_sink_side(arcs, self.S, self.T)
            value = Fraction(flow, denominator)
        else:
            value, reach = self._solve_floats()
        # nodes that still reach T through unsaturated residual arcs form the smallest
        # remote side; everything else (ties included) stays on the device
        device_side = [i for i in range(len(self.ops)) if i not in reach]
        return value, device_side

    def _solve_floats(self):
        """(flow value, nodes reaching T in the residual graph) by networkx preflow-push:
        the float path keeps the algorithm whose roundings it has always had."""
        arcs = [(u, v, cap) for (u, v), cap in self.capacity.items()]
        return preflow_cut(arcs, self.S, self.T)

    def best_prefix(self):
        """(cost, k) of the cheapest prefix cut of the order (ops[:k] on the device).

        Evaluates the network itself for every k at once: with ops[:k] on the device,
        a node is on the device side iff ``k >= lo(node)`` (S: 0, T: never, op i: i + 1,
        a device -> remote auxiliary node: one past its last end, a remote -> device
        one: one past its first end, which is where the cut is cheapest), so each arc
        u -> v is cut for k in [lo(u), lo(v) - 1]; difference arrays add them up. A cut
        infinite arc (an op on a unit that cannot run it) rules that k out. Returns
        (None, None) when no prefix cut can run.
        """
        n = len(self.ops)
        zero = self.costs.zero
        lo: dict[Any, int] = {self.S: 0, self.T: n + 1}
        lo.update({i: i + 1 for i in range(n)})
        for aux, (forward, ends) in self.aux.items():
            lo[aux] = (max(ends) if forward else min(ends)) + 1
        cost = [zero] * (n + 2)
        blocked = [0] * (n + 2)
        for (u, v), cap in self.capacity.items():
            first, last = lo[u], min(lo[v] - 1, n)
            if first > last:
                continue
            if cap is None:
                blocked[first] += 1
                blocked[last + 1] -= 1
            else:
                cost[first] += cap
                cost[last + 1] -= cap
        best_cost, best_k = None, None
        running, stuck = zero, 0
        for k in range(n + 1):
            running += cost[k]
            stuck += blocked[k]
            if stuck == 0 and (best_cost is None or running <= best_cost):
                best_cost, best_k = running, k
        return best_cost, best_k


def _exact_flag(graph: ModelGraph, mode: str) -> bool:
    if mode == "auto":
        return len(graph) <= EXACT_AUTO_MAX_OPS or all(op.time_s for op in graph)
    return mode == "yes"


_MIN_CUT_OPTIONS = {
    **LOCATION_OPTIONS,
    **LOAD_OPTIONS,
    "exact": Field(
        Text(choices=("auto", "yes", "no")),
        default="auto",
        doc=f"exact rational arithmetic: auto = up to {EXACT_AUTO_MAX_OPS} ops or when every "
        "op has a time table",
    ),
}


@POLICIES.register("min_cut", with_common_options(_MIN_CUT_OPTIONS, "min_cut placement"))
def min_cut(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """DADS: the exact best device/remote partition of the sequential cost, by s–t min cut."""
    policy = "min_cut"
    objective = location_objective(options, policy)
    device, remote = resolve_locations(graph, oracle, source, options, policy)
    costs = _Costs(oracle, objective, _exact_flag(graph, options.get("exact", "auto")))
    queued_s = options.get("remote_queued_s", 0.0)
    network = _CutNetwork(graph, oracle, source, device, remote, costs, policy, queued_s)
    value, device_side = network.solve()
    chain_cost, chain_k = network.best_prefix()
    on_device = set(device_side)
    ops = graph.order
    assignment = {name: device if i in on_device else remote for i, name in enumerate(ops)}
    placement = Placement(assignment, ops, policy, source)
    plan = compile_plan(graph, placement, oracle)
    predicted = estimate(plan, oracle, load_conditions(oracle, remote, options))
    cut = tuple(
        {
            "tensor": plan.ops[i],
            "from": move.src_unit,
            "to": move.dst_unit,
            "consumers": tuple(plan.ops[j] for j in move.consumers),
            "bytes": move.nbytes,
        }
        for i, out in enumerate(plan.moves_out)
        for move in out
        if move.dst_unit is not None and move.transfer.kind != "local"
    )
    notes = {
        "device": device,
        "remote": remote,
        "objective": objective.label,
        "model": "sequential",
        "cut_value": float(value),
        "cut_tensors": cut,
        "ops_on_device": len(on_device),
        "best_chain_cost": None if chain_cost is None else float(chain_cost),
        "best_chain_cut_after": None
        if chain_k is None
        else (ops[chain_k - 1] if chain_k else INPUT_LABEL),
        "exact": costs.exact,
    }
    broken = violations(graph, placement, predicted, oracle, options)
    if broken:
        raise PlacementError(
            f"the minimum cut (sequential {objective.label} {float(value):.6g}) breaks: "
            + "; ".join(broken),
            policy,
        )
    return Placement(assignment, ops, policy, source, notes)
