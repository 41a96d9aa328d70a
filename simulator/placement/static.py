"""Static placement policies: single, fallback, manual, offload."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import OP_KINDS, ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.estimate import back_to_back_s
from simulator.platform import CostOracle
from simulator.schema import Field, ListOf, Record, Ref, Text

_UNIT_DOC = "a unit as 'node.unit', or a bare unit name on the app's source node"


def _resolve(oracle: CostOracle, ref: str, source: str, policy: str) -> str:
    try:
        return oracle.platform.resolve_unit(ref, source)
    except SocsimError as exc:
        raise PlacementError(str(exc), policy) from None


@POLICIES.register(
    "single",
    Record({"unit": Field(Ref("unit"), doc=_UNIT_DOC)}, name="single placement"),
)
def single(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Every op on one unit; an op the unit cannot run is an error (use ``fallback``)."""
    uid = _resolve(oracle, options["unit"], source, "single")
    for op in graph:
        reason = oracle.unsupported_reason(op, uid)
        if reason is not None:
            raise PlacementError(
                f"'{uid}' cannot run it ({reason}); use policy 'fallback' to send such ops "
                "to another unit",
                "single",
                op.name,
            )
    return Placement({op: uid for op in graph.order}, graph.order, "single", source)


def _first_cpu(oracle: CostOracle, uid: str) -> str:
    node = oracle.platform.node_of(uid)
    for unit in node.units:
        if unit.kind == "cpu":
            return f"{node.name}.{unit.name}"
    raise PlacementError(f"node '{node.name}' has no cpu unit; name a fallback unit", "fallback")


@POLICIES.register(
    "fallback",
    Record(
        {
            "preferred": Field(Ref("unit"), doc=_UNIT_DOC),
            "fallback": Field(
                Ref("unit"), default=None, doc="default: the first cpu unit of the preferred node"
            ),
        },
        name="fallback placement",
    ),
)
def fallback(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Ops on ``preferred`` where it can run them, else on ``fallback`` (hops are paid)."""
    preferred = _resolve(oracle, options["preferred"], source, "fallback")
    backup = (
        _resolve(oracle, options["fallback"], source, "fallback")
        if options.get("fallback")
        else _first_cpu(oracle, preferred)
    )
    assignment, fell_back = {}, []
    for op in graph:
        if oracle.supports(op, preferred):
            assignment[op.name] = preferred
            continue
        reason = oracle.unsupported_reason(op, backup)
        if reason is not None:
            raise PlacementError(
                f"neither '{preferred}' nor the fallback '{backup}' can run it ({reason})",
                "fallback",
                op.name,
            )
        assignment[op.name] = backup
        fell_back.append(op.name)
    return Placement(assignment, graph.order, "fallback", source, {"fell_back": tuple(fell_back)})


_RULE = Record(
    {
        "ops": Field(Text(), default=None, doc="glob over op names, e.g. 'conv*'"),
        "kind": Field(Text(choices=OP_KINDS), default=None, doc="op kind"),
        "unit": Field(Ref("unit"), doc=_UNIT_DOC),
    },
    name="manual rule",
)


@POLICIES.register(
    "manual",
    Record(
        {
            "rules": Field(ListOf(_RULE), default=[], doc="first matching rule wins"),
            "default": Field(Ref("unit"), doc="unit of ops no rule matches"),
        },
        name="manual placement",
    ),
)
def manual(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Ops to units by rules matching op-name globs and/or kinds; the first match wins."""
    rules = []
    for i, rule in enumerate(options["rules"]):
        if rule.get("ops") is None and rule.get("kind") is None:
            raise PlacementError(f"rule {i} needs 'ops' or 'kind' to match anything", "manual")
        rules.append(
            (rule.get("ops"), rule.get("kind"), _resolve(oracle, rule["unit"], source, "manual"))
        )
    default = _resolve(oracle, options["default"], source, "manual")
    assignment = {}
    for op in graph:
        assignment[op.name] = next(
            (
                uid
                for pattern, kind, uid in rules
                if (pattern is None or fnmatch.fnmatchcase(op.name, pattern))
                and (kind is None or op.kind == kind)
            ),
            default,
        )
    return Placement(assignment, graph.order, "manual", source)


@POLICIES.register(
    "offload",
    Record(
        {
            "node": Field(Ref("node"), doc="node that runs the whole model"),
            "unit": Field(
                Text(),
                default=None,
                doc="unit name on that node; default: the fastest that runs every op "
                "(a lone request, DVFS units at their governors' levels)",
            ),
        },
        name="offload placement",
    ),
)
def offload(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """The whole model on one unit of ``node``: the named one, or the fastest able one."""
    node = options["node"]
    if node not in oracle.platform.nodes:
        raise PlacementError(f"unknown node '{node}'", "offload")
    if options.get("unit"):
        placed = single(graph, oracle, source, {"unit": f"{node}.{options['unit']}"})
        return Placement(placed.assignment, placed.order, "offload", source)
    best, best_s = None, None
    for uid in oracle.platform.units_of(node):
        if all(oracle.supports(op, uid) for op in graph):
            total_s = back_to_back_s(oracle, list(graph), uid)  # at its governor's levels
            if best_s is None or total_s < best_s:
                best, best_s = uid, total_s
    if best is None:
        raise PlacementError(f"no unit of node '{node}' runs every op of the model", "offload")
    return Placement({op: best for op in graph.order}, graph.order, "offload", source)
