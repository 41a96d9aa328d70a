"""Plan every app once per distinct input: identical fleet members share a decision (pure).

A fleet of 500 phones makes 500 apps; placing and compiling each costs tens of
milliseconds for a model of a few hundred ops, the same work 500 times when the members
are alike. :class:`Planner` places an app once per (model, source, placement spec), as
before, and in addition lets a fleet member reuse the decision of an earlier member of
any fleet when the decision provably does not depend on which of the two it is:

* the policy is one of :data:`SHARED_POLICIES`, whose decision reads only the units its
  options name (a bare name or the fleet's node: the source member's) and the source
  node's own units, never a route, a link, a load or another node of the platform;
* the two source nodes are equal field by field except their names (units, caches,
  DVFS, thermal, memory, load factor...: a ``vary`` draw that differs, a different
  preset, anything, makes them different), compared with ``==`` and by ``repr`` (so
  ``-0.0`` and ``0.0`` or two objects that compare equal but print apart are not shared);
* the placement options are equal once every reference to the source member (``phone[3]``,
  ``phone[3].npu``) is written as "the source"; any value of a type not listed in
  :func:`_canonical` makes the app unshareable;
* the model is the same graph, and none of its ops has a tabled time for a unit of a
  fleet member by qualified id (such a time differs between members by definition).

The reused decision is the earlier member's :class:`~simulator.placement.base.Placement`
with its source node renamed; the plan is compiled for the new member (its routes, its
links, its moves: positions, mobility and per-station rates enter there), and only the
per-op costs, which read the units alone, are taken from the earlier member's plan. Any
other app is placed on its own. Results are bit for bit those of placing every app
separately (``tests/placement/test_members.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from simulator.graph.model import ModelGraph
from simulator.hardware.units import Node
from simulator.placement.base import Placement, PlacementSpec, place
from simulator.placement.plan import ExecutionPlan, compile_plan
from simulator.platform import CostOracle

#: Policies whose decision depends only on the graph, the options' units and the source
#: node's own units (simulator/placement/static.py); the others read routes, loads or
#: every unit of the platform, and are placed per member.
SHARED_POLICIES = frozenset({"single", "fallback", "manual", "offload"})

_SOURCE = "\x00source"  # stands for the source member in a canonical option value


class _UnshareableError(Exception):
    """An option value whose sameness cannot be decided: place the app on its own."""


def _canonical(value: Any, member: str) -> Any:
    """``value`` as a hashable tuple with ``member`` written as the source (raises
    :class:`_UnshareableError` on a type not listed here)."""
    if isinstance(value, str):
        if value == member:
            return (str, _SOURCE)
        if value.startswith(member + "."):
            return (str, _SOURCE, value[len(member) :])
        return (str, value)
    if isinstance(value, bool) or value is None:
        return (type(value), value)
    if isinstance(value, int | float):
        return (type(value), repr(value))  # repr: -0.0 is not 0.0
    if isinstance(value, Mapping):
        return (
            Mapping,
            tuple((_canonical(k, member), _canonical(v, member)) for k, v in value.items()),
        )
    if isinstance(value, list | tuple):
        return (tuple, tuple(_canonical(v, member) for v in value))
    raise _UnshareableError(type(value).__name__)


def node_shape(node: Node) -> tuple | None:
    """Every field of ``node`` but its name, hashable, with its ``repr``; None when a
    field cannot be hashed (then the node is never taken as equal to another)."""
    values = tuple(getattr(node, f.name) for f in fields(node) if f.name != "name")
    try:
        hash(values)
    except TypeError:
        return None
    return values, repr(values)


def _member_timed(graph: ModelGraph, members: frozenset[str]) -> bool:
    """Whether an op of ``graph`` has a tabled time for a fleet member's unit by id."""
    return any(key.rsplit(".", 1)[0] in members for op in graph for key in op.time_s if "." in key)


class Planner:
    """Places and compiles apps, once per distinct input (see the module's docstring).

    Parameters
    ----------
    scenario : Scenario
    oracle : CostOracle

    Attributes
    ----------
    placed : int
        Policies run so far (a shared decision is not counted).
    shared : int
        Apps that reused an identical member's decision.
    """

    def __init__(self, scenario: Any, oracle: CostOracle):
        self.scenario = scenario
        self.oracle = oracle
        self.placed = 0
        self.shared = 0
        self._plans: dict[tuple, ExecutionPlan] = {}
        self._decisions: dict[tuple, ExecutionPlan] = {}
        self._members = frozenset(
            node for nodes in scenario.fleets.members.values() for node in nodes
        )
        self._timed: dict[str, bool] = {}

    def plan(self, entry: Any, spec: PlacementSpec) -> ExecutionPlan:
        """The plan of ``entry`` under ``spec`` (without its request I/O sizes).

        Raises
        ------
        PlacementError, ModelError
            As :func:`~simulator.placement.base.place` and
            :func:`~simulator.placement.plan.compile_plan` do (a failed placement is
            never shared: each member that meets it places on its own and fails so).
        """
        key = (entry.model, entry.source, id(spec))  # one plan per (model, source, spec)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make(entry, spec)
        return plan

    def _make(self, entry: Any, spec: PlacementSpec) -> ExecutionPlan:
        graph = self.scenario.models[entry.model]
        shape = self._shape(entry, spec, graph)
        earlier = self._decisions.get(shape) if shape is not None else None
        if earlier is not None:
            self.shared += 1
            placement = renamed(earlier.placement, entry.source, self.oracle)
            return compile_plan(graph, placement, self.oracle, costs_of=earlier)
        placement = place(spec, graph, self.oracle, entry.source)
        self.placed += 1
        plan = compile_plan(placement.graph or graph, placement, self.oracle)
        if shape is not None and placement.graph is None:
            self._decisions[shape] = plan
        return plan

    def _shape(self, entry: Any, spec: PlacementSpec, graph: ModelGraph) -> tuple | None:
        """What the decision of ``entry`` depends on, or None when it is not shared."""
        source = entry.source
        if source not in self._members or spec.policy not in SHARED_POLICIES:
            return None  # a callable policy is not a str: never shared
        if entry.model not in self._timed:
            self._timed[entry.model] = _member_timed(graph, self._members)
        if self._timed[entry.model]:
            return None
        node = node_shape(self.oracle.platform.nodes[source])
        if node is None:
            return None
        try:
            options = _canonical(spec.options, source)
        except _UnshareableError:
            return None
        return (entry.model, id(graph), spec.policy, options, node)


def renamed(placement: Placement, source: str, oracle: CostOracle) -> Placement:
    """``placement`` for an identical source node ``source``: its units on its source
    node moved to ``source``'s (the units of every other node kept)."""
    old = placement.source
    nodes = oracle.platform
    assignment = {
        op: source + uid[len(old) :] if nodes.node_of(uid).name == old else uid
        for op, uid in placement.assignment.items()
    }
    return Placement(
        assignment,
        placement.order,
        placement.policy,
        source,
        placement.notes,
        placement.graph,
        placement.cores,
    )
