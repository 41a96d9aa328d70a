"""PEFT: Predict Earliest Finish Time (Arabnejad & Barbosa, IEEE TPDS 25(3), 2014).

A list scheduler on HEFT's machinery (:mod:`simulator.placement.listsched`: the same cost
table, insertion search and tie rules) that looks one step ahead through its
*optimistic cost table* (OCT). ``OCT(t_i, p_k)`` is the longest, over the successors
``t_j``, of the shortest time from ``t_i`` finishing on ``p_k`` to the exit, every later
op on its best unit and processor availability ignored (the paper's Eq. 7)::

    OCT(t_i, p_k) = max_j  min_w  [ OCT(t_j, p_w) + w(t_j, p_w) + c̄(t_i, t_j) ]

with ``c̄`` the edge's mean transfer time over unit pairs, and 0 when ``p_w == p_k``.
Ops are ranked by ``rank_oct`` = the mean of their OCT row; among the ready ops the
highest rank goes first, to the unit minimising ``O_EFT = EFT + OCT`` (insertion-based
EFT).

socsim's extension where the paper has nothing to say: an exit op's OCT on a unit is the
time its output takes back to the source node (0 in the published setting, where ops
have no bytes), so ``O_EFT`` of an exit op is the score HEFT gives it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.listcosts import CostTable, build_cost_table
from simulator.placement.listsched import LIST_OPTIONS, Schedule, checked_placement
from simulator.placement.objectives import with_common_options
from simulator.platform import CostOracle


def optimistic_costs(costs: CostTable) -> list[dict[str, Any]]:
    """The optimistic cost table: per op (declaration order), unit -> OCT (s).

    Exact (``Fraction``) when the cost table is exact; computed from the exit ops back.
    """
    zero = costs.num(0.0)
    oct_: list[dict[str, Any]] = [{} for _ in costs.ops]
    for i in reversed(range(len(costs.ops))):
        succs = costs.succs[i]
        if not succs:
            returns = costs.return_cost[i]
            oct_[i] = {u: returns[u] if returns else zero for u in costs.time[i]}
            continue
        # per successor: its best finish-to-exit time on each of its units, plus the
        # mean transfer when it runs on another unit than op i's
        ahead = [
            (costs.mean_comm(i, j), {w: oct_[j][w] + costs.time[j][w] for w in costs.time[j]})
            for j in succs
        ]
        row = {}
        for k in costs.time[i]:
            row[k] = max(
                min((value if w == k else value + mean) for w, value in after.items())
                for mean, after in ahead
            )
        oct_[i] = row
    return oct_


def rank_oct(table: list[dict[str, Any]], zero) -> list:
    """Each op's mean OCT over its candidate units (the paper's Eq. 8)."""
    return [sum(row.values(), zero) / len(row) for row in table]


@POLICIES.register("peft", with_common_options(LIST_OPTIONS, "peft placement"))
def peft(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """PEFT: ready ops by decreasing mean OCT, each on the unit of least EFT + OCT."""
    costs = build_cost_table(graph, oracle, source, options, "peft")
    table = optimistic_costs(costs)
    rank = rank_oct(table, costs.num(0.0))
    schedule = Schedule(costs)
    waiting = [len(p) for p in costs.preds]
    ready = [(-rank[i], i) for i in range(len(costs.ops)) if not costs.preds[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        unit, start = _best_by_oeft(schedule, i, table[i])
        schedule.assign(i, unit, start)
        for j in costs.succs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (-rank[j], j))
    notes = {
        "rank_order": tuple(costs.ops[i] for i in order),
        "rank_oct_s": tuple(float(rank[i]) for i in order),
    }
    return checked_placement(
        schedule.placement("peft", source, order, notes), graph, oracle, options
    )


def _best_by_oeft(schedule: Schedule, i: int, oct_row: Mapping[str, Any]):
    """(unit, start) minimising EFT + OCT with insertion; ties: unit order."""
    costs = schedule.costs
    time = costs.time[i]
    units = list(time)
    best = None
    for u, ready in zip(units, schedule.ready_row(i, units), strict=True):
        start = schedule.earliest_start(u, ready, time[u], insertion=True)
        score = start + time[u] + oct_row[u]
        if best is None or score < best[0]:
            best = (score, u, start)
    assert best is not None  # an op has a candidate unit (the cost table checks)
    return best[1], best[2]
