"""What a placement is, how it is checked, and the policy registry.

A placement policy is a pure function::

    policy(graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping) -> Placement

It maps every op to a unit (``"node.unit"``) and gives the order in which each unit runs
the ops of one request (a topological order of the graph). It must not import SimPy,
do I/O or keep state between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import PlacementError
from simulator.frozen import FrozenMap
from simulator.graph.model import ModelGraph
from simulator.platform import CostOracle
from simulator.registry import Registry

PolicyFunction = Callable[[ModelGraph, CostOracle, str, Mapping[str, Any]], "Placement"]

POLICIES: Registry[PolicyFunction] = Registry("placement policy", "socsim.placement")

_GOVERNOR = "the governors' levels for a lone request (list-schedule estimate)"
_TOP = "each unit's top DVFS level (per-op costs)"
_NONE = "none (the assignment reads no cost)"

#: What each shipped policy assumes of a DVFS unit's level when it compares candidates
#: (docs/placement.md, "DVFS levels the policies assume"). Estimate-based choices
#: replay the governors (:class:`~simulator.placement.levelreplay.LevelReplay`); per-op cost
#: tables (HEFT's, the min cut's) are at the top level, because a level that depends on
#: what ran before has no per-op cost; "the fastest unit" (``offload``, the default
#: units of ``split_point`` and ``min_cut``) is a lone request's ops back to back at the
#: governors' levels. ``deadline_ms`` is
#: always checked on the estimate, at the governors' levels.
DVFS_BASIS: Mapping[str, str] = {
    "split_point": _GOVERNOR,  # also its default device and remote units
    "edgent": _GOVERNOR,  # split_point on each right-sized model
    "optimal": f"{_TOP} for the latency search; {_GOVERNOR} for the other objectives",
    "heft": _TOP,
    "peft": _TOP,
    "cpop": _TOP,
    "greedy_eft": _TOP,
    # run-time rules (placement/runtime.py): the engine's per-op times, at the top level
    **dict.fromkeys(("met", "eft", "etf", "stf", "etf_lb"), _TOP),
    "min_cut": f"{_TOP}; its device and remote units, when not named, are the fastest at "
    "the governors' levels",
    "co_execute": f"{_TOP} for the split ratios",
    "offload": "the governors' levels for a lone request (the model's ops back to back on "
    "each unit) to pick the fastest unit when none is named",
    "single": _NONE,
    "fallback": _NONE,
    "manual": _NONE,
    "cut": _NONE,
    "random": _NONE,
}


def dvfs_basis(policy: str, options: Mapping[str, Any]) -> str:
    """What ``policy`` (with ``options``) assumes of DVFS levels, in words."""
    if policy == "optimal":
        if options.get("objective", "latency") != "latency":
            return _GOVERNOR
        return _TOP
    if policy == "offload" and options.get("unit"):
        return _NONE
    return DVFS_BASIS.get(policy, "unknown (a custom policy)")


@dataclass(frozen=True)
class Placement:
    """Op -> unit assignment plus the per-request execution order.

    Attributes
    ----------
    assignment : Mapping[str, str]
        Op name -> qualified unit id.
    order : tuple of str
        Every op once, in a topological order; each unit runs a request's ops in this
        order (a later op never overtakes an earlier one on the same unit).
    policy : str
        Name of the policy that made it.
    source : str
        The node requests start from.
    notes : Mapping[str, Any]
        Policy-specific facts worth showing (e.g. which ops fell back and why).
    graph : ModelGraph or None
        The model the placement is for when the policy rewrote it (e.g. split one op
        into parts on several units); None means the model as given.
    cores : Mapping[str, int]
        Op name -> the cores it takes on its unit, for the ops that run on a unit as a
        core pool (docs/cost-model.md, "Per-op cores"); empty (the default) for none.
        A unit on which an op of this mapping runs is a pool unit for this placement:
        every op placed there is listed, and the request's ops there run as soon as
        their inputs are in and cores are free (not one after the other).
    """

    assignment: Mapping[str, str]
    order: tuple[str, ...]
    policy: str
    source: str
    notes: Mapping[str, Any] = field(default_factory=FrozenMap)
    graph: ModelGraph | None = None
    cores: Mapping[str, int] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignment", FrozenMap(self.assignment))
        object.__setattr__(self, "cores", FrozenMap(self.cores))
        object.__setattr__(self, "notes", FrozenMap(self.notes))
        object.__setattr__(self, "order", tuple(self.order))

    def unit_of(self, op: str) -> str:
        return self.assignment[op]

    def nodes_used(self, oracle: CostOracle) -> list[str]:
        seen: dict[str, None] = {}
        for op in self.order:
            seen.setdefault(oracle.platform.node_of(self.assignment[op]).name, None)
        return list(seen)

    def label(self, oracle: CostOracle) -> str:
        """Short stable name of the decision.

        ``device`` when every op runs on the source node, the node name (e.g. ``cloud``)
        when every op runs on one other node, ``split@<op>`` when a prefix of the order
        runs on the source node and the rest on one other node (``<op>`` is the last op
        on the source), ``mixed`` otherwise.
        """
        nodes = [oracle.platform.node_of(self.assignment[op]).name for op in self.order]
        distinct = set(nodes)
        if distinct == {self.source}:
            return "device"
        if len(distinct) == 1:
            return nodes[0]
        if len(distinct) == 2 and nodes[0] == self.source:
            cut = nodes.index(next(n for n in nodes if n != self.source))
            if all(n != self.source for n in nodes[cut:]):
                return f"split@{self.order[cut - 1]}"
        return "mixed"


def check_placement(graph: ModelGraph, placement: Placement, oracle: CostOracle) -> None:
    """Raise PlacementError unless ``placement`` is complete, feasible and well ordered.

    Raises
    ------
    PlacementError
        When an op is unassigned or assigned to a unit that cannot run it, or when the
        order is not a topological order of every op exactly once.
    """
    name = placement.policy
    missing = [op for op in graph.order if op not in placement.assignment]
    if missing:
        raise PlacementError(f"ops without a unit: {missing[:5]}", name)
    extra = sorted(set(placement.assignment) - set(graph.order))
    if extra:
        raise PlacementError(f"assigns ops the model does not have: {extra[:5]}", name)
    for op_name in graph.order:
        uid = placement.assignment[op_name]
        if uid not in oracle.platform.unit_ids:
            raise PlacementError(f"unknown unit '{uid}'", name, op_name)
        reason = oracle.unsupported_reason(graph.op(op_name), uid)
        if reason is not None:
            raise PlacementError(f"'{uid}' cannot run it: {reason}", name, op_name)
    if sorted(placement.order) != sorted(graph.order):
        raise PlacementError("order must list every op exactly once", name)
    _check_cores(placement, oracle)
    position = {op: i for i, op in enumerate(placement.order)}
    for edge in graph.edges():
        if position[edge.src] > position[edge.dst]:
            raise PlacementError(
                f"order runs '{edge.dst}' before its input '{edge.src}'", name, edge.dst
            )


def _check_cores(placement: Placement, oracle: CostOracle) -> None:
    """Per-op cores within each unit's cores, and every op of a pool unit listed."""
    if not placement.cores:
        return
    name = placement.policy
    pools = set()
    for op_name, cores in placement.cores.items():
        if op_name not in placement.assignment:
            raise PlacementError("cores given for an op the model does not have", name, op_name)
        uid = placement.assignment[op_name]
        total = oracle.platform.unit(uid).cores
        if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= total:
            raise PlacementError(
                f"'{uid}' has {total} cores: an op takes 1 to {total}, got {cores!r}",
                name,
                op_name,
            )
        pools.add(uid)
    for op_name, uid in placement.assignment.items():
        if uid in pools and op_name not in placement.cores:
            raise PlacementError(
                f"'{uid}' runs ops as a core pool here: every op on it needs its cores",
                name,
                op_name,
            )


@dataclass(frozen=True)
class PlacementSpec:
    """A policy by registry name (or a callable) with its validated options."""

    policy: str | PolicyFunction
    options: Mapping[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if isinstance(self.policy, str):
            POLICIES.get(self.policy)  # raises with the nearest valid name
        object.__setattr__(self, "options", FrozenMap(self.options))

    @property
    def name(self) -> str:
        if isinstance(self.policy, str):
            return self.policy
        return getattr(self.policy, "__name__", "custom")


def place(spec: PlacementSpec, graph: ModelGraph, oracle: CostOracle, source: str) -> Placement:
    """Run the policy of ``spec`` and check what it returns.

    Raises
    ------
    PlacementError
        When the policy fails or returns an infeasible placement.
    """
    function = POLICIES.get(spec.policy).function if isinstance(spec.policy, str) else spec.policy
    placement = function(graph, oracle, source, spec.options)
    if not isinstance(placement, Placement):
        raise PlacementError(
            f"policy returned {type(placement).__name__}, not a Placement", spec.name
        )
    check_placement(placement.graph or graph, placement, oracle)
    return placement
