"""Static placement policies: single, fallback, manual, offload."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import OP_KINDS, ModelGraph
from simulator.hardware.cores import DEFAULT_AUTO_EFFICIENCY, auto_cores
from simulator.placement.base import POLICIES, Placement
from simulator.placement.levelreplay import back_to_back_s
from simulator.platform import CostOracle
from simulator.schema import INVALID, Context, Field, ListOf, Loc, Number, Record, Ref, Schema, Text

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


class CoresChoice(Schema):
    """A whole number of cores >= 1, or ``auto``."""

    def describe(self) -> str:
        return "a whole number >= 1 or 'auto'"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if value == "auto":
            return value
        if isinstance(value, str):
            return ctx.problem(loc, f"expected {self.describe()}, got '{value}'", "auto")
        whole = Number(integer=True).check(value, loc, ctx)  # reports what is not a number
        if whole is not INVALID and whole < 1:
            return ctx.problem(loc, f"expected {self.describe()}, got {whole}")
        return whole


_RULE = Record(
    {
        "ops": Field(Text(), default=None, doc="glob over op names, e.g. 'conv*'"),
        "kind": Field(Text(choices=OP_KINDS), default=None, doc="op kind"),
        "unit": Field(Ref("unit"), doc=_UNIT_DOC),
        "cores": Field(
            CoresChoice(),
            default=None,
            doc="cores each matched op takes of the unit, or 'auto' (by its parallel "
            "efficiency); the unit then runs this app's ops as a core pool, independent "
            "ops side by side (default: the unit's cores_per_op, one op after the other)",
        ),
    },
    name="manual rule",
)


@POLICIES.register(
    "manual",
    Record(
        {
            "rules": Field(ListOf(_RULE), default=[], doc="first matching rule wins"),
            "default": Field(Ref("unit"), doc="unit of ops no rule matches"),
            "auto_efficiency": Field(
                Number(gt=0, le=1),
                default=DEFAULT_AUTO_EFFICIENCY,
                doc="'auto' cores: the fastest count whose parallel efficiency "
                "t(1) / (k t(k)) is at least this",
            ),
        },
        name="manual placement",
    ),
)
def manual(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Ops to units by rules matching op-name globs and/or kinds; the first match wins.

    A rule with ``cores`` makes its unit a core pool for this app: each op there takes
    the cores of the rule that placed it (``auto``: :func:`~simulator.hardware.cores.
    auto_cores`), or the unit's ``cores_per_op`` when no rule with ``cores`` did.
    """
    rules = []
    for i, rule in enumerate(options["rules"]):
        if rule.get("ops") is None and rule.get("kind") is None:
            raise PlacementError(f"rule {i} needs 'ops' or 'kind' to match anything", "manual")
        uid = _resolve(oracle, rule["unit"], source, "manual")
        rules.append((rule.get("ops"), rule.get("kind"), uid, rule.get("cores")))
    default = _resolve(oracle, options["default"], source, "manual")
    assignment, asked = {}, {}
    for op in graph:
        uid, cores = next(
            (
                (uid, cores)
                for pattern, kind, uid, cores in rules
                if (pattern is None or fnmatch.fnmatchcase(op.name, pattern))
                and (kind is None or op.kind == kind)
            ),
            (default, None),
        )
        assignment[op.name] = uid
        if cores is not None:
            asked[op.name] = cores
    if not asked:
        return Placement(assignment, graph.order, "manual", source)
    return Placement(
        assignment,
        graph.order,
        "manual",
        source,
        cores=_pool_cores(graph, oracle, assignment, asked, options),
    )


def _pool_cores(
    graph: ModelGraph,
    oracle: CostOracle,
    assignment: Mapping[str, str],
    asked: Mapping[str, int | str],
    options: Mapping[str, Any],
) -> dict[str, int]:
    """Cores of every op on a pool unit (one where some op asked for cores)."""
    pools = {assignment[name] for name in asked}
    efficiency = options.get("auto_efficiency", DEFAULT_AUTO_EFFICIENCY)
    cores = {}
    for op in graph:
        uid = assignment[op.name]
        if uid not in pools:
            continue
        unit = oracle.platform.unit(uid)
        want = asked.get(op.name, unit.op_cores)
        if want == "auto":
            oracle.op_time_s(op, uid)  # the oracle's PlacementError if the unit cannot run it
            want = auto_cores(op, unit, uid, efficiency)
        elif int(want) > unit.cores:
            raise PlacementError(
                f"'{uid}' has {unit.cores} cores; a rule asks {want} for this op "
                f"(give 1 to {unit.cores} or 'auto')",
                "manual",
                op.name,
            )
        cores[op.name] = int(want)
    return cores


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
