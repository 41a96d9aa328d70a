"""Exact and baseline policies: ``optimal`` (branch and bound) and ``random``.

``optimal`` with the latency objective searches every semi-active schedule: at each
step any ready op goes to any able unit, starting as soon as its inputs have arrived
and the unit is free (each unit runs its ops in the order they were placed, as the
engine does). That space contains every list schedule, HEFT's included, so the optimum
is never worse than HEFT. Energy objectives do not depend on timing: every assignment
is evaluated with the list-schedule estimate instead. Both search spaces grow
exponentially; the policy refuses problems past ``max_ops`` and stops with an error
after ``max_states`` search states, naming the limit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement

# through listsched, which registers heft, cpop and greedy_eft before this module's
# policies: the order POLICIES lists them in (the scenario reference, error messages)
from simulator.placement.listsched import CostTable, build_cost_table
from simulator.placement.objectives import (
    evaluate,
    memory_excess,
    objective_of,
    require_feasible,
    violations,
    with_common_options,
)
from simulator.platform import CostOracle
from simulator.schema import Field, Number

_OPTIMAL_OPTIONS = {
    "max_ops": Field(Number(integer=True, ge=1), default=12, doc="refuse larger models"),
    "max_states": Field(
        Number(integer=True, ge=1), default=2_000_000, doc="search states before giving up"
    ),
}


def _too_big(message: str) -> PlacementError:
    return PlacementError(f"{message}; use 'heft' or 'min_cut' for larger problems", "optimal")


def _min_bottom_levels(costs: CostTable) -> list[float]:
    """Lower bound on the time from an op's start to the end: min costs, free transfers."""
    n = len(costs.ops)
    level = [0.0] * n
    for i in reversed(range(n)):
        tail = max((level[j] for j in costs.succs[i]), default=0.0)
        returns = costs.return_cost[i]
        if returns:
            tail = max(tail, min(float(v) for v in returns.values()))
        level[i] = min(float(v) for v in costs.time[i].values()) + tail
    return level


class _BranchAndBound:
    """Depth-first search over semi-active schedules with a critical-path bound."""

    def __init__(self, costs: CostTable, max_states: int, memory_ok):
        self.costs = costs
        self.n = len(costs.ops)
        self.bottom = _min_bottom_levels(costs)
        self.max_states = max_states
        self.memory_ok = memory_ok
        self.states = 0
        self.best = math.inf
        self.best_schedule: list[tuple[int, str, float]] | None = None

    def run(self) -> None:
        unit_free = dict.fromkeys(self.costs.units, 0.0)
        waiting = [len(p) for p in self.costs.preds]
        ready = [i for i in range(self.n) if waiting[i] == 0]
        self._search([], {}, {}, unit_free, waiting, ready, 0.0)

    def _ready_time(self, i: int, u: str, unit_of: dict, finish: dict) -> float:
        costs = self.costs
        if not costs.preds[i]:
            inputs = costs.input_cost[i]
            assert inputs is not None  # an entry op (no predecessors) has its input cost
            return float(inputs[u])
        return max(finish[p] + float(costs.comm(p, i, unit_of[p], u)) for p in costs.preds[i])

    def _search(self, schedule, unit_of, finish, unit_free, waiting, ready, makespan) -> None:
        self.states += 1
        if self.states > self.max_states:
            raise _too_big(f"the search passed max_states = {self.max_states}")
        if not ready:
            if makespan < self.best:
                self.best, self.best_schedule = makespan, list(schedule)
            return
        costs = self.costs
        for i in ready:
            rest = [j for j in ready if j != i]
            for u, duration in costs.time[i].items():
                if not self.memory_ok(unit_of, i, u):
                    continue
                start = max(self._ready_time(i, u, unit_of, finish), unit_free[u])
                end = start + float(duration)
                done = end + (float(costs.return_cost[i][u]) if costs.return_cost[i] else 0.0)
                bound = max(makespan, done, start + self.bottom[i])
                if bound >= self.best:
                    continue
                unit_of[i], finish[i] = u, end
                previous_free, unit_free[u] = unit_free[u], end
                released = []
                for j in costs.succs[i]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        released.append(j)
                schedule.append((i, u, start))
                self._search(
                    schedule,
                    unit_of,
                    finish,
                    unit_free,
                    waiting,
                    rest + released,
                    max(makespan, done),
                )
                schedule.pop()
                for j in costs.succs[i]:
                    waiting[j] += 1
                unit_free[u] = previous_free
                del unit_of[i], finish[i]


def _memory_guard(graph: ModelGraph, costs: CostTable, oracle: CostOracle, enabled: bool):
    if not enabled:
        return lambda unit_of, i, u: True
    weights = [graph.op(name).weight_bytes for name in costs.ops]
    capacity = {u: oracle.platform.unit(u).memory_bytes for u in costs.units}

    def memory_ok(unit_of: dict, i: int, u: str) -> bool:
        used = sum(weights[j] for j, v in unit_of.items() if v == u)
        return used + weights[i] <= capacity[u]

    return memory_ok


@POLICIES.register("optimal", with_common_options(_OPTIMAL_OPTIONS, "optimal placement"))
def optimal(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Exact optimum of the objective for small problems (see the module docstring)."""
    costs = build_cost_table(graph, oracle, source, dict(options, exact="no"), "optimal")
    max_ops = options.get("max_ops", 12)
    if len(costs.ops) > max_ops:
        raise _too_big(f"{len(costs.ops)} ops is more than max_ops = {max_ops}")
    objective = objective_of(options)
    if objective.name != "latency":
        return _optimal_by_assignment(graph, oracle, source, options, costs, objective)
    search = _BranchAndBound(
        costs,
        options.get("max_states", 2_000_000),
        _memory_guard(graph, costs, oracle, options.get("check_memory", True)),
    )
    search.run()
    if search.best_schedule is None:
        raise PlacementError("no assignment fits the units' memory", "optimal")
    sequence = {i: k for k, (i, _, _) in enumerate(search.best_schedule)}
    ordered = sorted(search.best_schedule, key=lambda s: (s[2], sequence[s[0]]))
    names = costs.ops
    placement = Placement(
        {names[i]: u for i, u, _ in ordered},
        tuple(names[i] for i, _, _ in ordered),
        "optimal",
        source,
        {"optimum_latency_s": search.best, "search_states": search.states},
    )
    require_feasible(graph, placement, oracle, options, "optimal")
    return placement


def _optimal_by_assignment(
    graph, oracle, source, options, costs: CostTable, objective
) -> Placement:
    space = math.prod(len(t) for t in costs.time)
    limit = options.get("max_states", 2_000_000)
    if space > limit:
        raise _too_big(f"{space:,} assignments is more than max_states = {limit:,}")
    best = None
    names = costs.ops
    for units in itertools.product(*(list(t) for t in costs.time)):
        placement = Placement(dict(zip(names, units, strict=True)), tuple(names), "optimal", source)
        if options.get("check_memory", True) and memory_excess(graph, placement.assignment, oracle):
            continue
        _, predicted = evaluate(graph, placement, oracle)
        if violations(graph, placement, predicted, oracle, options):
            continue
        value = objective.value(predicted)
        if best is None or value < best[0]:
            best = (value, placement)
    if best is None:
        raise PlacementError("no assignment meets the constraints", "optimal")
    value, placement = best
    return Placement(
        placement.assignment,
        placement.order,
        "optimal",
        source,
        {f"optimum_{objective.name}": value, "search_states": space},
    )


@POLICIES.register(
    "random",
    with_common_options(
        {"seed": Field(Number(integer=True, ge=0), default=0, doc="seed of the draw")},
        "random placement",
    ),
)
def random(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Each op on a uniformly drawn unit that can run it (a baseline), reproducibly seeded."""
    costs = build_cost_table(graph, oracle, source, dict(options, exact="no"), "random")
    rng = np.random.default_rng(options.get("seed", 0))
    assignment = {}
    for name, table in zip(costs.ops, costs.time, strict=True):
        choices = list(table)
        assignment[name] = choices[int(rng.integers(len(choices)))]
    placement = Placement(
        assignment, graph.order, "random", source, {"seed": options.get("seed", 0)}
    )
    require_feasible(graph, placement, oracle, options, "random")
    return placement
