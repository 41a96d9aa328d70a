"""DADS's minimum cut (Hu et al., INFOCOM 2019): the best device/remote partition.

Finds the exact optimum over *all* device/remote partitions of the *sequential* cost
model (:func:`~simulator.placement.sequential.sequential_cost`): every op's cost at its
location plus every tensor move of the execution plan, added as if nothing overlapped.
The partition is a minimum s–t cut of a flow network whose cut value equals that cost
(:class:`~simulator.placement.cutnetwork.CutNetwork`); the prefix cuts are partitions
too, so the result is never worse than the best chain split under the same model. Ties
go to the device (the largest optimal device side).

What the model counts (each tensor move of the plan, per objective, a node's
``load_factor``) is in :mod:`simulator.placement.sequential`; option
``remote_queued_ms`` adds that wait once when any op is remote (latency terms).
:func:`sequential_cost` and :func:`preflow_cut` are re-exported here, where the tests
and users import them. Pure: no SimPy, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.cutnetwork import CutNetwork, preflow_cut
from simulator.placement.estimate import estimate
from simulator.placement.locations import (
    INPUT_LABEL,
    LOAD_OPTIONS,
    LOCATION_OPTIONS,
    load_conditions,
    location_objective,
    resolve_locations,
)
from simulator.placement.objectives import violations, with_common_options
from simulator.placement.plan import compile_plan
from simulator.placement.sequential import SequentialCosts, sequential_cost
from simulator.platform import CostOracle
from simulator.schema import Field, Text

__all__ = ["EXACT_AUTO_MAX_OPS", "min_cut", "preflow_cut", "sequential_cost"]

#: ``min_cut`` option ``exact: auto`` computes in rationals up to this many ops.
EXACT_AUTO_MAX_OPS = 1000


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
    costs = SequentialCosts(oracle, objective, _exact_flag(graph, options.get("exact", "auto")))
    queued_s = options.get("remote_queued_s", 0.0)
    network = CutNetwork(graph, oracle, source, device, remote, costs, policy, queued_s)
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
