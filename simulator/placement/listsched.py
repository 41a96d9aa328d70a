"""List-scheduling policies: greedy_eft, HEFT and CPOP (Topcuoglu, Hariri & Wu, TPDS 2002).

Every policy reads one :class:`~simulator.placement.listcosts.CostTable` (op times per
candidate unit, edge transfer times, the request input from and the exit outputs back to
the source node; exact rationals when every op has a time table) and fills a
:class:`Schedule`: unit timelines, insertion-based or append-only. Ties are broken by op
declaration order, then unit order. :class:`CostTable` and :func:`build_cost_table` are
re-exported here, where tests and users import them.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.listcosts import CostTable, build_cost_table
from simulator.placement.objectives import check_constraints, with_common_options
from simulator.placement.timeline import Timeline
from simulator.platform import CostOracle
from simulator.schema import Boolean, Field, Text

__all__ = [
    "HEFT_OPTIONS",
    "LIST_OPTIONS",
    "CostTable",
    "Schedule",
    "build_cost_table",
    "checked_placement",
    "cpop",
    "greedy_eft",
    "heft",
    "heft_order",
]

_EXACT_CHOICES = ("auto", "yes", "no")


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
        """When an op ready at ``ready`` and lasting ``duration`` can start on unit ``u``:
        in the first idle gap long enough (``insertion``) or after its last op."""
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
            arrive = [finish + c for c in costs.comm_row(p, i, self.unit(p), units)]
            ready = arrive if ready is None else list(map(max, ready, arrive))
        assert ready is not None  # op i has predecessors (an entry op returned above)
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
        # ``units`` is never empty: an op has a candidate unit (the cost table checks)
        assert best is not None
        return best[1], best[2]

    def assign(self, i: int, u: str, start) -> None:
        """Run op i on unit ``u`` from ``start`` (its slot taken on the unit's timeline)."""
        finish = start + self.costs.time[i][u]
        self.unit_of[i], self.start[i], self.finish[i] = u, start, finish
        self.timelines[u].insert(start, finish)

    def makespan(self) -> float:
        """When the last output is back at the source (s)."""
        costs = self.costs
        return float(max(self._back_at_source(i) for i in range(len(costs.ops))))

    def _back_at_source(self, i: int):
        """When op i's output is back at the source: its finish, plus the return of an
        exit op's output."""
        returns = self.costs.return_cost[i]
        if not returns:
            return self.finish[i] + self.zero
        return self.finish[i] + returns[self.unit(i)]

    def unit(self, i: int) -> str:
        """The unit op i was assigned (it must be scheduled already)."""
        unit = self.unit_of[i]
        assert unit is not None, f"op {i} is not scheduled yet"
        return unit

    def placement(self, policy: str, source: str, tie_order: list[int], notes: dict) -> Placement:
        """The schedule as a placement: ops by start time, ties in ``tie_order``."""
        position = {i: k for k, i in enumerate(tie_order)}
        order = sorted(range(len(self.costs.ops)), key=lambda i: (self.start[i], position[i]))
        names = self.costs.ops
        return Placement(
            {names[i]: self.unit(i) for i in order},
            tuple(names[i] for i in order),
            policy,
            source,
            {**notes, "scheduled_makespan_s": self.makespan()},
        )


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


#: The note a HEFT placement carries when its app is planned online (per request at
#: arrival): what tells a static plan of an online app from a plain HEFT one.
ONLINE_NOTE = "online"


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
        notes[ONLINE_NOTE] = "each request planned at its arrival; this is a lone request's plan"
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
