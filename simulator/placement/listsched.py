"""List-scheduling policies: greedy_eft, HEFT and CPOP (Topcuoglu, Hariri & Wu, TPDS 2002).

Costs come from the cost oracle: an op's time on every unit that can run it (a unit
that cannot, or an excluded one, is not a candidate: the "∞" of scheduling papers), and
an edge's contention-free transfer time between two units (0 on the same unit). The
request input reaches an entry op from the source node and every exit op's output
returns there; both costs are added where HEFT adds communication, and vanish for
graphs whose ops have no input or output bytes (the published setting).

Arithmetic is exact (``fractions.Fraction`` of each cost's decimal value) when every
op has an explicit time table, as scheduling papers give, so rank ties are real ties;
otherwise floats. Ties are broken by op declaration order, then unit order.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.objectives import (
    candidate_units,
    check_constraints,
    with_common_options,
)
from simulator.placement.timeline import Timeline
from simulator.platform import CostOracle
from simulator.schema import Boolean, Field, Text

_EXACT_CHOICES = ("auto", "yes", "no")


class CostTable:
    """Per-op and per-edge costs over the candidate units, in exact or float arithmetic."""

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
        self.time = []
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
            tid = self._transfer_id[key] = self._distinct.setdefault(transfer, len(self._distinct))
            self._distinct_transfers = list(self._distinct)
        return tid

    def _time_of(self, nbytes: int, tid: int):
        key = (nbytes, tid)
        value = self._time.get(key)
        if value is None:
            value = self._time[key] = self.num(self._distinct_transfers[tid].time_s(nbytes))
        return value

    # -- means and ranks --------------------------------------------------------------------
    def mean_time(self, i: int):
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
        zero = self.num(0.0)
        rank = [zero] * len(self.ops)
        for i in reversed(range(len(self.ops))):
            tail = max(
                (self.mean_comm(i, j) + rank[j] for j in self.succs[i]),
                default=self._mean(self.return_cost[i], zero) if self.return_cost[i] else zero,
            )
            rank[i] = self.mean_time(i) + tail
        return rank

    def downward_ranks(self) -> list:
        zero = self.num(0.0)
        rank = [zero] * len(self.ops)
        for j in range(len(self.ops)):
            if not self.preds[j]:
                rank[j] = self._mean(self.input_cost[j], zero)
                continue
            rank[j] = max(rank[i] + self.mean_time(i) + self.mean_comm(i, j) for i in self.preds[j])
        return rank


class Schedule:
    """Unit timelines being filled in; insertion-based or append-only slot search."""

    def __init__(
        self, costs: CostTable, timelines: dict[str, Timeline] | None = None, release=None
    ):
        """``timelines``: the units' busy slots to insert into (online HEFT shares them
        between requests; fresh, empty ones by default); ``release``: when the request's
        input is at its source (in the costs' arithmetic; None: at 0)."""
        self.costs = costs
        zero = costs.num(0.0)
        self.zero = zero
        self.release = release
        self.unit_of: list[str | None] = [None] * len(costs.ops)
        self.start: list = [zero] * len(costs.ops)
        self.finish: list = [zero] * len(costs.ops)
        if timelines is None:
            timelines = {u: Timeline(costs.exact) for u in costs.units}
        self.timelines = timelines

    def earliest_start(self, u: str, ready, duration, insertion: bool):
        timeline = self.timelines[u]
        if not insertion:
            last = timeline.last_end()
            return ready if last is None else max(ready, last)
        return timeline.earliest_start(ready, duration)

    def ready_row(self, i: int, units: list[str]) -> list:
        """When op i's inputs are all on each of ``units``: the latest of the preds'
        finish + transfer (the request input for an entry op), in ``units`` order."""
        costs = self.costs
        if not costs.preds[i]:
            inputs = costs.input_cost[i]
            assert inputs is not None  # an entry op (no predecessors) has its input cost
            if self.release is not None:
                return [self.release + inputs[u] for u in units]
            return [inputs[u] for u in units]
        ready = None
        for p in costs.preds[i]:
            finish = self.finish[p]
            arrive = [finish + c for c in costs.comm_row(p, i, self.unit_of[p], units)]
            ready = arrive if ready is None else list(map(max, ready, arrive))
        return ready

    def best_unit(self, i: int, insertion: bool, units=None):
        """(unit, start) minimising finish time (+ output return for exit ops); ties: unit order."""
        best = None
        costs = self.costs
        time = costs.time[i]
        units = units or list(time)
        returns = costs.return_cost[i]
        for u, ready in zip(units, self.ready_row(i, units), strict=True):
            duration = time[u]
            start = self.earliest_start(u, ready, duration, insertion)
            score = start + duration + (returns[u] if returns else self.zero)
            if best is None or score < best[0]:
                best = (score, u, start)
        return best[1], best[2]

    def assign(self, i: int, u: str, start) -> None:
        finish = start + self.costs.time[i][u]
        self.unit_of[i], self.start[i], self.finish[i] = u, start, finish
        self.timelines[u].insert(start, finish)

    def makespan(self) -> float:
        costs = self.costs
        return float(
            max(
                self.finish[i]
                + (costs.return_cost[i][self.unit_of[i]] if costs.return_cost[i] else self.zero)
                for i in range(len(costs.ops))
            )
        )

    def placement(self, policy: str, source: str, tie_order: list[int], notes: dict) -> Placement:
        position = {i: k for k, i in enumerate(tie_order)}
        order = sorted(range(len(self.costs.ops)), key=lambda i: (self.start[i], position[i]))
        names = self.costs.ops
        return Placement(
            {names[i]: self.unit_of[i] for i in order},
            tuple(names[i] for i in order),
            policy,
            source,
            {**notes, "scheduled_makespan_s": self.makespan()},
        )


def build_cost_table(graph, oracle, source, options, policy) -> CostTable:
    """The cost table over the policy's candidate units (PlacementError if an op has none)."""
    units = candidate_units(oracle, source, options, policy)
    try:
        return CostTable(graph, oracle, units, source, options.get("exact", "auto"))
    except PlacementError as exc:
        raise PlacementError(exc.message, policy, exc.op) from None


def checked_placement(placement: Placement, graph, oracle, options) -> Placement:
    """``placement`` once it meets the constraints (PlacementError naming them otherwise)."""
    check_constraints(graph, placement, oracle, options, placement.policy)
    return placement


LIST_OPTIONS = {
    "exact": Field(
        Text(choices=_EXACT_CHOICES),
        default="auto",
        doc="exact rational arithmetic: auto = when every op has a time table",
    ),
}


def heft_order(costs: CostTable) -> list[int]:
    """HEFT's op order: decreasing upward rank, ties by declaration order (a topological
    order: an op's rank exceeds, or with zero costs equals, each successor's)."""
    rank = costs.upward_ranks()
    return sorted(range(len(costs.ops)), key=lambda i: (-rank[i], i))


HEFT_OPTIONS = {
    **LIST_OPTIONS,
    "online": Field(
        Boolean(),
        default=False,
        doc="plan each request at its arrival into the units' reservations (insertion); "
        "units then run their ops in reservation order (docs/placement.md#online-heft)",
    ),
}


@POLICIES.register("heft", with_common_options(HEFT_OPTIONS, "heft placement"))
def heft(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """HEFT: ops by decreasing upward rank, each on the unit of earliest finish (insertion)."""
    costs = build_cost_table(graph, oracle, source, options, "heft")
    order = heft_order(costs)
    schedule = Schedule(costs)
    for i in order:
        unit, start = schedule.best_unit(i, insertion=True)
        schedule.assign(i, unit, start)
    notes: dict[str, Any] = {"rank_order": tuple(costs.ops[i] for i in order)}
    if options.get("online"):  # the engine plans each request itself (placement/online.py)
        notes["online"] = "each request planned at its arrival; this is a lone request's plan"
    return checked_placement(
        schedule.placement("heft", source, order, notes), graph, oracle, options
    )


@POLICIES.register("cpop", with_common_options(LIST_OPTIONS, "cpop placement"))
def cpop(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """CPOP: critical-path ops on the one unit that runs the path fastest, the rest by EFT."""
    costs = build_cost_table(graph, oracle, source, options, "cpop")
    up, down = costs.upward_ranks(), costs.downward_ranks()
    priority = [u + d for u, d in zip(up, down, strict=True)]
    n = len(costs.ops)
    entry = max((i for i in range(n) if not costs.preds[i]), key=lambda i: (priority[i], -i))
    path = [entry]
    while costs.succs[path[-1]]:
        path.append(max(costs.succs[path[-1]], key=lambda j: (priority[j], -j)))
    on_path = set(path)
    able = [u for u in costs.units if all(u in costs.time[i] for i in path)]
    cp_unit = (
        min(
            able,
            key=lambda u: (
                sum((costs.time[i][u] for i in path), costs.num(0.0)),
                costs.units.index(u),
            ),
        )
        if able
        else None
    )
    schedule = Schedule(costs)
    waiting = [len(p) for p in costs.preds]
    heap = [(-priority[i], i) for i in range(n) if not costs.preds[i]]
    heapq.heapify(heap)
    order = []
    while heap:
        _, i = heapq.heappop(heap)
        order.append(i)
        units = [cp_unit] if i in on_path and cp_unit is not None else None
        unit, start = schedule.best_unit(i, insertion=True, units=units)
        schedule.assign(i, unit, start)
        for j in costs.succs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(heap, (-priority[j], j))
    notes = {
        "critical_path": tuple(costs.ops[i] for i in path),
        "critical_path_unit": cp_unit or "(none runs the whole path)",
    }
    return checked_placement(
        schedule.placement("cpop", source, order, notes), graph, oracle, options
    )


@POLICIES.register("greedy_eft", with_common_options(LIST_OPTIONS, "greedy_eft placement"))
def greedy_eft(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Ops in topological order, each on the unit where it finishes first (no insertion)."""
    costs = build_cost_table(graph, oracle, source, options, "greedy_eft")
    schedule = Schedule(costs)
    order = list(range(len(costs.ops)))
    for i in order:
        unit, start = schedule.best_unit(i, insertion=False)
        schedule.assign(i, unit, start)
    return checked_placement(
        schedule.placement("greedy_eft", source, order, {}), graph, oracle, options
    )
