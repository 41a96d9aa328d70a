"""Objectives and constraints that placement policies share (pure).

Every smart policy accepts the same option keys (merged into its schema with
:func:`with_common_options`): ``objective``, ``weights``, ``deadline_ms``, ``exclude``
and ``check_memory``. A policy that cannot meet a constraint raises a PlacementError
saying which constraint and by how much, never a silent bad placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import PlacementError, SocsimError
from simulator.frozen import FrozenMap
from simulator.graph.model import ModelGraph
from simulator.placement.base import Placement
from simulator.placement.estimate import Estimate, estimate
from simulator.placement.plan import ExecutionPlan, compile_plan
from simulator.platform import CostOracle, Platform
from simulator.schema import Boolean, Field, ListOf, MapOf, Number, Record, Ref, Text

OBJECTIVES: tuple[str, ...] = ("latency", "device_energy", "total_energy", "weighted")
WEIGHT_KEYS: tuple[str, ...] = ("latency", "device_energy", "total_energy")


@dataclass(frozen=True)
class Objective:
    """What a policy minimises over the contention-free estimate of one request.

    ``weighted`` minimises ``Σ weights[k] × metric_k`` with metrics in SI (seconds,
    joules), e.g. ``{latency: 1, device_energy: 0.1}`` trades 1 s for 10 J.
    """

    name: str = "latency"
    weights: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise PlacementError(f"unknown objective '{self.name}'; valid: {', '.join(OBJECTIVES)}")
        if self.name == "weighted" and not self.weights:
            raise PlacementError(
                "objective 'weighted' needs weights, e.g. {latency: 1, device_energy: 0.1}"
            )
        object.__setattr__(self, "weights", FrozenMap(self.weights))

    def metrics(self, predicted: Estimate) -> dict[str, float]:
        return {
            "latency": predicted.latency_s,
            "device_energy": predicted.device_energy_j,
            "total_energy": predicted.energy_j,
        }

    def value(self, predicted: Estimate) -> float:
        metrics = self.metrics(predicted)
        if self.name == "weighted":
            return sum(w * metrics[k] for k, w in self.weights.items())
        return metrics[self.name]

    @property
    def label(self) -> str:
        if self.name != "weighted":
            return self.name
        return " + ".join(f"{w:g}×{k}" for k, w in self.weights.items())


COMMON_OPTIONS: dict[str, Field] = {
    "objective": Field(Text(choices=OBJECTIVES), default="latency", doc="what to minimise"),
    "weights": Field(
        MapOf(Number(ge=0), keys=WEIGHT_KEYS, min_len=1),
        default=None,
        doc="for objective 'weighted': per-second and per-joule weights",
    ),
    "deadline_ms": Field(
        Number("ms", 1e-3, gt=0), default=None, to="deadline_s", doc="predicted latency bound"
    ),
    "exclude": Field(ListOf(Ref("unit")), default=[], doc="units the policy must not use"),
    "check_memory": Field(
        Boolean(), default=True, doc="fail when weights exceed a unit's memory_mb"
    ),
}


def with_common_options(fields: Mapping[str, Field], name: str) -> Record:
    """A policy's option record: its own fields plus :data:`COMMON_OPTIONS`."""
    return Record({**fields, **COMMON_OPTIONS}, name=name)


def objective_of(options: Mapping[str, Any]) -> Objective:
    return Objective(options.get("objective", "latency"), options.get("weights") or {})


def candidate_nodes(platform: Platform, source: str, *, named: bool = False) -> frozenset[str]:
    """The nodes whose units an app of node ``source`` may run on: those a route joins to
    ``source`` (a node no link reaches cannot get the request's data) and, unless
    ``named``, not ``private`` ones other than ``source`` (fleet members: someone else's
    device). ``named=True`` is for units an option names, which may be on a private node.
    """
    return frozenset(
        name
        for name in platform.network.reachable(source)
        if named or name == source or not platform.nodes[name].private
    )


def candidate_units(
    oracle: CostOracle,
    source: str,
    options: Mapping[str, Any],
    policy: str,
    *,
    named: bool = False,
) -> list[str]:
    """The units a policy placing an app of node ``source`` may choose among: those of
    :func:`candidate_nodes` except the excluded ones (bare names: on ``source``).

    Raises
    ------
    PlacementError
        When an ``exclude`` entry names no unit, or no unit is left.
    """
    platform = oracle.platform
    excluded = set()
    for ref in options.get("exclude") or ():
        try:
            excluded.add(platform.resolve_unit(ref, source))
        except SocsimError as exc:
            raise PlacementError(str(exc), policy) from None
    nodes = candidate_nodes(platform, source, named=named)
    units = [
        u for u in platform.unit_ids if u not in excluded and platform.node_of(u).name in nodes
    ]
    if not units:
        raise PlacementError("every unit is excluded", policy)
    return units


def unit_weight_bytes(graph: ModelGraph, assignment: Mapping[str, str]) -> dict[str, int]:
    """uid -> resident weight bytes of the ops assigned to it (units in op order)."""
    weights: dict[str, int] = {}
    for op in graph:
        uid = assignment[op.name]
        weights[uid] = weights.get(uid, 0) + op.weight_bytes
    return weights


def memory_excess(graph: ModelGraph, assignment: Mapping[str, str], oracle: CostOracle) -> dict:
    """uid -> bytes by which resident weights exceed the unit's memory (only excesses)."""
    return weight_excess(unit_weight_bytes(graph, assignment), oracle)


def weight_excess(weights: Mapping[str, int], oracle: CostOracle) -> dict:
    """uid -> bytes by which ``weights`` (uid -> resident weight bytes) exceed memory."""
    return {
        uid: nbytes - oracle.platform.unit(uid).memory_bytes
        for uid, nbytes in weights.items()
        if nbytes > oracle.platform.unit(uid).memory_bytes
    }


def violations(
    graph: ModelGraph,
    placement: Placement,
    predicted: Estimate,
    oracle: CostOracle,
    options: Mapping[str, Any],
) -> list[str]:
    """Human-readable list of the constraints ``placement`` breaks (empty when none)."""
    weights = None
    if options.get("check_memory", True):
        weights = unit_weight_bytes(graph, placement.assignment)
    return constraint_problems(predicted.latency_s, weights, oracle, options)


def constraint_problems(
    latency_s: float | None,
    weights: Mapping[str, int] | None,
    oracle: CostOracle,
    options: Mapping[str, Any],
) -> list[str]:
    """:func:`violations` from the predicted latency (None: not estimated, which
    :func:`check_constraints` does only when there is no deadline) and
    the resident weight bytes per unit (uid -> bytes, in op order of first use; None when
    memory is not checked)."""
    problems = []
    deadline = options.get("deadline_s")
    if deadline is not None and latency_s is not None and latency_s > deadline:
        problems.append(
            f"predicted latency {latency_s * 1e3:.4g} ms exceeds the deadline "
            f"{deadline * 1e3:.4g} ms by {(latency_s - deadline) * 1e3:.4g} ms"
        )
    if weights is not None and options.get("check_memory", True):
        for uid, excess in weight_excess(weights, oracle).items():
            problems.append(f"weights on {uid} exceed its memory by {excess / 1e6:.4g} MB")
    return problems


def evaluate(
    graph: ModelGraph, placement: Placement, oracle: CostOracle
) -> tuple[ExecutionPlan, Estimate]:
    plan = compile_plan(graph, placement, oracle)
    return plan, estimate(plan, oracle)


def require_feasible(
    graph: ModelGraph,
    placement: Placement,
    oracle: CostOracle,
    options: Mapping[str, Any],
    policy: str,
) -> Estimate:
    """The estimate of ``placement``; PlacementError naming every broken constraint."""
    _, predicted = evaluate(graph, placement, oracle)
    broken = violations(graph, placement, predicted, oracle, options)
    if broken:
        raise PlacementError("; ".join(broken), policy)
    return predicted


def check_constraints(
    graph: ModelGraph,
    placement: Placement,
    oracle: CostOracle,
    options: Mapping[str, Any],
    policy: str,
) -> None:
    """:func:`require_feasible` for a policy that needs no estimate itself: the plan is
    compiled and estimated only when a deadline asks for the latency.

    Raises
    ------
    PlacementError
        Naming every broken constraint.
    """
    if options.get("deadline_s") is not None:
        require_feasible(graph, placement, oracle, options, policy)
        return
    weights = None
    if options.get("check_memory", True):
        weights = unit_weight_bytes(graph, placement.assignment)
    broken = constraint_problems(None, weights, oracle, options)
    if broken:
        raise PlacementError("; ".join(broken), policy)
