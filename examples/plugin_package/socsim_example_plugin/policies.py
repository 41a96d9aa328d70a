"""A placement policy and a unit scheduler, loaded through entry points.

Both are pure functions with the signatures of their registries
(:data:`simulator.placement.base.POLICIES`, :data:`simulator.scheduling.SCHEDULERS`).
A policy's YAML options are checked by the ``Record`` in its ``options`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.model import ModelGraph
from simulator.placement.base import Placement
from simulator.platform import CostOracle
from simulator.schema import Field, Record, Ref


def fastest_unit(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Every op on the unit that runs it fastest by itself (transfers ignored; ties: the
    first unit). ``node`` limits the choice to one node's units."""
    node = options.get("node")
    units = oracle.platform.units_of(node) if node else oracle.platform.unit_ids
    assignment = {}
    for op in graph:
        able = [u for u in units if oracle.supports(op, u)]
        if not able:
            raise PlacementError("no unit can run it", "fastest_unit", op.name)
        assignment[op.name] = min(able, key=lambda u: oracle.op_time_s(op, u))
    return Placement(assignment, graph.order, "fastest_unit", source)


fastest_unit.options = Record(
    {"node": Field(Ref("node"), default=None, doc="only this node's units")},
    name="fastest_unit placement",
)


def lifo(rid: int, position: int, priority: int, deadline_at_s: float, ready_s: float) -> tuple:
    """Newest request first (a free unit serves the smallest key)."""
    return (-rid, position)
