"""The s–t flow network whose cut values are the sequential costs of partitions (DADS).

:class:`CutNetwork` turns the prices of :class:`~simulator.placement.sequential.SequentialCosts`
into arc capacities between the device side ``S``, the remote side ``T`` and one node per
op, with auxiliary nodes so that a producer's output is paid once per direction at the
largest crossing edge's bytes. Its minimum cut is the best device/remote partition
(:meth:`CutNetwork.solve`: exact rationals through our own max-flow, or floats through
networkx's preflow-push, :func:`preflow_cut`); :meth:`CutNetwork.best_prefix` evaluates
every prefix cut of the op order on the same network at once. Pure: no SimPy, no I/O.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction
from typing import Any

import networkx as nx

from simulator.errors import PlacementError
from simulator.placement.maxflow import min_cut_sink_side, scale_to_integers
from simulator.placement.sequential import SequentialCosts, node_transfer


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


class CutNetwork:
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
        costs: SequentialCosts,
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
        back_d = node_transfer(oracle, node_d, source)
        back_r = node_transfer(oracle, node_r, source)
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
        to_r = node_transfer(oracle, source, node_r)
        to_d = node_transfer(oracle, source, node_d)
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
