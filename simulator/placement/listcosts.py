"""The cost table list schedulers read: every op's time per candidate unit, every edge's
transfer time per unit pair, and HEFT's mean costs and ranks (pure).

Costs come from the cost oracle: an op's time on every unit that can run it (a unit
that cannot, or an excluded one, is not a candidate: the "∞" of scheduling papers), and
an edge's contention-free transfer time between two units (0 on the same unit). The
request input reaches an entry op from the source node and every exit op's output
returns there; both costs are added where HEFT adds communication, and vanish for
graphs whose ops have no input or output bytes (the published setting).

Arithmetic is exact (``fractions.Fraction`` of each cost's decimal value) when every
op has an explicit time table, as scheduling papers give, so rank ties are real ties;
otherwise floats. Transfers and their times are computed once per distinct (bytes,
transfer) and shared by every edge that needs them. Used by
:mod:`simulator.placement.listsched` (greedy_eft, HEFT, CPOP),
:mod:`simulator.placement.peft`, :mod:`simulator.placement.online` and
:mod:`simulator.placement.exhaustive`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.objectives import candidate_units
from simulator.platform import CostOracle


class CostTable:
    """Per-op and per-edge costs over the candidate units, in exact or float arithmetic.

    Parameters
    ----------
    graph : ModelGraph
    oracle : CostOracle
    units : list of str
        The candidate unit ids, in the order ties are broken.
    source : str
        The node the request input comes from and exit outputs return to.
    exact : {"auto", "yes", "no"}
        Exact rationals; ``auto``: when every op has an explicit time table.

    Raises
    ------
    PlacementError
        When no candidate unit can run an op.
    """

    def __init__(
        self, graph: ModelGraph, oracle: CostOracle, units: list[str], source: str, exact: str
    ):
        self.graph = graph
        self.oracle = oracle
        self.source = source
        self.units = units
        self.exact = all(op.time_s for op in graph) if exact == "auto" else exact == "yes"
        self.ops = list(graph.order)
        self.index = {name: i for i, name in enumerate(self.ops)}
        self.preds = [[self.index[p] for p in graph.predecessors(n)] for n in self.ops]
        self.succs = []
        # (bytes, comm_s, edge) of every edge i -> j, read from the adjacency once
        self._edge_of: dict[tuple[int, int], tuple] = {}
        adjacency = graph.graph.succ
        for i, name in enumerate(self.ops):
            after = adjacency[name]
            names = graph.successors(name)
            succs = [self.index[s] for s in names]
            self.succs.append(succs)
            for dst, j in zip(names, succs, strict=True):
                edge = after[dst]["edge"]
                self._edge_of[(i, j)] = (edge.bytes, edge.comm_s, edge)
        node_of = {u: oracle.platform.node_of(u).name for u in units}
        self.node_of = node_of
        # per op: its time on each candidate unit (s; Fraction when exact)
        self.time: list[dict[str, Any]] = []
        num = self.num
        rows = oracle.op_time_rows([graph.op(name) for name in self.ops])
        every_unit = list(oracle.platform.unit_ids) == units and not self.exact
        for name, row in zip(self.ops, rows, strict=True):
            if every_unit and None not in row.values():
                times = dict(row)  # a copy: the row is the oracle's memory
            else:
                times = {u: num(t) for u in units if (t := row[u]) is not None}
            if not times:
                raise PlacementError("no candidate unit can run it", op=name)
            self.time.append(times)
        # costs shared by every edge of the same bytes between the same units: transfers
        # per (comm_s, src, dst), their times per (bytes, transfer), means per unit sets
        self._transfer_id: dict[tuple, int] = {}
        self._distinct: dict[Any, int] = {}
        self._distinct_transfers: list = []
        self._time: dict[tuple[int, int], Any] = {}
        self._means: dict[tuple, Any] = {}
        self._pairs: dict[tuple, tuple[list[int], list[int]]] = {}
        self._tids: dict[tuple, dict[str, int | None]] = {}
        self._unit_set: dict[tuple, int] = {}
        self.unit_set = [
            self._unit_set.setdefault(tuple(t), len(self._unit_set)) for t in self.time
        ]
        # the request input to entry ops, exit ops' outputs back: per (bytes, node) once
        node_time: dict[tuple, Any] = {}

        def node_transfer(nbytes: int, src: str, dst: str):
            key = (nbytes, src, dst)
            if key not in node_time:
                node_time[key] = self.num(oracle.node_transfer_time_s(nbytes, src, dst))
            return node_time[key]

        request_bytes = graph.request_input_bytes
        self.input_cost = [
            None
            if self.preds[i]
            else {u: node_transfer(request_bytes, source, node_of[u]) for u in self.time[i]}
            for i in range(len(self.ops))
        ]
        self.return_cost = [
            None
            if self.succs[i]
            else {
                u: node_transfer(graph.op(n).output_bytes, node_of[u], source) for u in self.time[i]
            }
            for i, n in enumerate(self.ops)
        ]

    def num(self, value: float):
        """``value`` in the table's arithmetic (a ``Fraction`` of its repr when exact)."""
        return Fraction(repr(value)) if self.exact else value

    def comm(self, i: int, j: int, p: str, q: str):
        """Transfer time of edge i -> j from unit p to unit q (0 when p == q)."""
        if p == q:
            return self.num(0.0)
        nbytes, comm_s, edge = self.edge_of(i, j)
        return self._time_of(nbytes, self._transfer(comm_s, edge, p, q))

    def edge_of(self, i: int, j: int) -> tuple:
        """(bytes, comm_s, edge) of edge i -> j."""
        return self._edge_of[(i, j)]

    def comm_row(self, i: int, j: int, p: str, units) -> list:
        """:meth:`comm` of edge i -> j from unit p to each of ``units``, in their order."""
        nbytes, comm_s, edge = self._edge_of[(i, j)]
        tids = self._tids.get((comm_s, p))
        if tids is None:
            tids = self._tids[(comm_s, p)] = {
                q: None if q == p else self._transfer(comm_s, edge, p, q) for q in self.units
            }
        zero, times, row = self.num(0.0), self._time, []
        for q in units:
            tid = tids[q]
            if tid is None:
                row.append(zero)
                continue
            value = times.get((nbytes, tid))
            row.append(value if value is not None else self._time_of(nbytes, tid))
        return row

    def _transfer(self, comm_s, edge, p: str, q: str) -> int:
        """Id of the transfer an edge with ``comm_s`` takes from p to q (equal transfers,
        equal ids: their times are the same)."""
        key = (comm_s, p, q)
        tid = self._transfer_id.get(key)
        if tid is None:
            transfer = self.oracle.edge_transfer(edge, p, q)
            tid = self._distinct.get(transfer)
            if tid is None:  # appended, not rebuilt: a graph of explicit comm_s misses often
                tid = self._distinct[transfer] = len(self._distinct_transfers)
                self._distinct_transfers.append(transfer)
            self._transfer_id[key] = tid
        return tid

    def _time_of(self, nbytes: int, tid: int):
        key = (nbytes, tid)
        value = self._time.get(key)
        if value is None:
            value = self._time[key] = self.num(self._distinct_transfers[tid].time_s(nbytes))
        return value

    # -- means and ranks --------------------------------------------------------------------
    def mean_time(self, i: int):
        """Mean time (s) of op i over the units that can run it."""
        values = list(self.time[i].values())
        return sum(values, self.num(0.0)) / len(values)

    def mean_comm(self, i: int, j: int):
        """Mean transfer time of edge i -> j over the unit pairs (p, q), p != q."""
        nbytes, comm_s, edge = self.edge_of(i, j)
        key = (nbytes, comm_s, self.unit_set[i], self.unit_set[j])
        mean = self._means.get(key)
        if mean is None:
            shape = key[1:]
            entry = self._pairs.get(shape)
            if entry is None:
                pairs = [
                    self._transfer(comm_s, edge, p, q)
                    for p in self.time[i]
                    for q in self.time[j]
                    if p != q
                ]
                entry = self._pairs[shape] = (pairs, sorted(set(pairs)))
            pairs, distinct = entry
            if not pairs:
                mean = self.num(0.0)
            else:  # each distinct transfer timed once, summed in pair order as one sum
                time_of = {tid: self._time_of(nbytes, tid) for tid in distinct}
                mean = sum([time_of[tid] for tid in pairs], self.num(0.0)) / len(pairs)
            self._means[key] = mean
        return mean

    @staticmethod
    def _mean(values: Mapping[str, Any], zero):
        return sum(values.values(), zero) / len(values)

    def upward_ranks(self) -> list:
        """HEFT's upward rank of every op: its mean time plus the costliest path (mean
        transfer, then successor's rank; an exit op's mean output return) to the end."""
        zero = self.num(0.0)
        rank = [zero] * len(self.ops)
        for i in reversed(range(len(self.ops))):
            returns = self.return_cost[i]
            tail = max(
                (self.mean_comm(i, j) + rank[j] for j in self.succs[i]),
                default=self._mean(returns, zero) if returns else zero,
            )
            rank[i] = self.mean_time(i) + tail
        return rank

    def downward_ranks(self) -> list:
        """CPOP's downward rank of every op: the costliest path from the request's
        arrival to its start (an entry op's mean input transfer)."""
        zero = self.num(0.0)
        rank = [zero] * len(self.ops)
        for j in range(len(self.ops)):
            if not self.preds[j]:
                inputs = self.input_cost[j]
                assert inputs is not None  # an entry op (no predecessors) has its input cost
                rank[j] = self._mean(inputs, zero)
                continue
            rank[j] = max(rank[i] + self.mean_time(i) + self.mean_comm(i, j) for i in self.preds[j])
        return rank


def build_cost_table(graph, oracle, source, options, policy) -> CostTable:
    """The cost table over the policy's candidate units (PlacementError if an op has none)."""
    units = candidate_units(oracle, source, options, policy)
    try:
        return CostTable(graph, oracle, units, source, options.get("exact", "auto"))
    except PlacementError as exc:
        raise PlacementError(exc.message, policy, exc.op) from None
