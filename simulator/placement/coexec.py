"""Intra-layer co-execution: one op split across several units (CoDL, μLayer, MoDNN).

Policy ``co_execute`` rewrites the model: each chosen op becomes parts that run at the
same time on several units, plus a merge op (see :mod:`simulator.graph.transforms`),
and returns a :class:`~simulator.placement.base.Placement` over the rewritten graph.
The units may all be on one SoC (CPU + GPU: CoDL, μLayer) or on several nodes joined by
links (layers split across nearby phones: MoDNN); the cost of moving the op's input to
each unit and its part of the output back (on-chip sync + copy, or network hops with
their per-message latency) is paid, and so is the merge.

* ``units[0]`` is the **home**: it runs every op that is not split and every merge, so
  every split op's inputs start there and its output is gathered there.
* ``mode: auto`` splits an op only when the split (inputs to each unit, parts, outputs
  back, merge) is predicted faster than the op on the best single unit of ``units``
  (with its own transfers); ``mode: always`` splits every eligible op.
* Eligible ops: kind in ``kinds``, FLOPs > 0, no explicit time table; a unit that cannot
  run the op is left out of its split.

Per-op time model
-----------------
For an op ``o`` split with ratio ``r_u`` on unit ``u`` (home ``h``), unit ``u`` finishes at

    F_u(r) = in_u(r) + t_u(r) + back_u(r)

* ``t_u(r)``: the part's time from the cost oracle. The roofline makes it
  ``d_u + max(r·C_u, M0_u + r·M1_u)``, where ``d_u`` (dispatch and barrier) is the
  oracle's time of the op with no work, ``C_u`` its compute time minus ``d_u``, and
  ``M0_u + r·M1_u`` its memory time minus ``d_u`` (``M0`` = the bytes every part moves
  whatever its share: the full input for a channel split, the full weights for a row
  split). Each term is read from the oracle by timing the op with all other work zeroed.
* ``in_u(r)``: the slowest input to reach ``u`` from the home: for each predecessor,
  the oracle's transfer time of its tensor ``h -> u`` (on chip: sync + bytes / shared
  bandwidth; between nodes: per hop, bytes / bandwidth + latency); all of it for a
  channel split, the share ``r`` of the bytes (after the fixed sync / latency) for a
  row split; 0 on the home. An entry op reads the request input from the source node.
* ``back_u(r)``: moving the part's output ``u -> h`` (``s_u + r·o_u``: sync or hop
  latencies, then bytes); 0 on the home.

so ``F_u`` is the maximum of (at most ``2 × predecessors``) lines ``a + b·r``. A split
takes ``T = max_u F_u(r_u) + merge``, the merge being the oracle's time of the merge op
on the home. Parts on units of one node share its DRAM (``docs/shared-dram.md``): the
predicted finish is at least the first part's body start plus their DRAM bytes over the
node's DRAM bandwidth (a lower bound, applied to the predicted time of the real parts;
the balanced ratios themselves ignore it).

Balanced ratios
---------------
``ratio: balanced`` chooses the ratios that minimise ``max_u F_u(r_u)`` subject to
``Σ r_u = 1``: the units that take part finish together, and a unit takes no part when
it could not finish by then even with an arbitrarily small share. When every unit's
``F_u`` is one line ``a_u + b_u·r`` (e.g. a compute-bound op:
``a_u = in_u + d_u + s_u``, ``b_u = C_u + o_u``) this is the closed form

    T = (1 + Σ a_u / b_u) / Σ (1 / b_u),     r_u = (T − a_u) / b_u,

re-solved without the units whose ``r_u`` comes out ≤ 0 until none does
(:func:`balanced_ratios`). With several lines per unit (:func:`water_fill`) the same
closed form is applied on the segment of ``T`` where each unit's binding line and the
set of units taking part do not change. The optimum ``T`` only grows when a sync cost or
link latency grows, so the predicted speedup never rises with them.

Ratios are apportioned to whole output elements (largest remainder), so a part's real
share differs from ``r_u`` by under one element; the notes give the predicted times of
the real parts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import OP_KINDS, ModelGraph, Op
from simulator.graph.transforms import (
    AXES,
    SPATIAL_KINDS,
    merge_name,
    merge_op,
    part_name,
    split_ops,
)
from simulator.placement.balance import balanced_ratios, water_fill
from simulator.placement.base import POLICIES, Placement
from simulator.placement.coexec_model import OpDecision, SplitModel
from simulator.placement.objectives import (
    candidate_units,
    evaluate,
    require_feasible,
    with_common_options,
)
from simulator.platform import CostOracle
from simulator.schema import Context, Field, ListOf, Loc, Number, Ref, Schema, Text

POLICY = "co_execute"
DEFAULT_KINDS: tuple[str, ...] = ("conv", "fc", "matmul")

MODES: tuple[str, ...] = ("auto", "always")
#: Tolerance on a fixed ratio list summing to 1.
RATIO_SUM_TOLERANCE = 1e-6


# -- options ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RatioChoice(Schema):
    """``balanced`` or a list of ratios >= 0, one per unit."""

    def describe(self) -> str:
        return "'balanced' or a list of numbers >= 0 (one per unit, summing to 1)"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if value == "balanced":
            return value
        if isinstance(value, list):
            return ListOf(Number(ge=0), min_len=2).check(value, loc, ctx)
        shown = f"'{value}'" if isinstance(value, str) else type(value).__name__
        return ctx.problem(loc, f"expected {self.describe()}, got {shown}")


_OPTIONS = {
    "units": Field(
        ListOf(Ref("unit"), min_len=2),
        doc="units that share each split op; the first is the home (runs every op not "
        "split and every merge); bare names are on the app's source node; units of other "
        "nodes split layers across devices (MoDNN)",
    ),
    "kinds": Field(
        ListOf(Text(choices=OP_KINDS), min_len=1),
        default=list(DEFAULT_KINDS),
        doc="op kinds that may be split",
    ),
    "mode": Field(
        Text(choices=MODES),
        default="auto",
        doc="auto: split an op only when predicted faster than its best single unit; "
        "always: split every eligible op",
    ),
    "ratio": Field(
        RatioChoice(),
        default="balanced",
        doc="balanced: shares chosen so the units finish together; or a fixed share per unit",
    ),
    "axis": Field(
        Text(choices=AXES),
        default="channels",
        doc="channels: every part reads the full input; rows: bands of a spatial op, "
        "weights on every part (fc/matmul are always split by channels)",
    ),
}


def _units(oracle: CostOracle, source: str, options: Mapping[str, Any]) -> list[str]:
    refs = options.get("units") or ()
    if len(refs) < 2:
        raise PlacementError("'units' needs at least two units (the first is the home)", POLICY)
    allowed = set(candidate_units(oracle, source, options, POLICY, named=True))
    units = []
    for ref in refs:
        try:
            uid = oracle.platform.resolve_unit(ref, source)
        except SocsimError as exc:
            raise PlacementError(str(exc), POLICY) from None
        if uid in units:
            raise PlacementError(f"unit '{uid}' is listed twice in 'units'", POLICY)
        if uid not in allowed:
            raise PlacementError(f"unit '{uid}' is in both 'units' and 'exclude'", POLICY)
        units.append(uid)
    return units


def _fixed_ratios(options: Mapping[str, Any], units: list[str]) -> dict[str, float] | None:
    ratio = options.get("ratio", "balanced")
    if ratio == "balanced":
        return None
    if isinstance(ratio, str):
        raise PlacementError(f"unknown ratio '{ratio}'; give 'balanced' or a list", POLICY)
    values = [float(r) for r in ratio]
    if len(values) != len(units):
        raise PlacementError(
            f"'ratio' needs one value per unit ({len(units)}), got {len(values)}", POLICY
        )
    if any(not (math.isfinite(r) and r >= 0) for r in values):
        raise PlacementError(f"ratios must be >= 0, got {values}", POLICY)
    total = math.fsum(values)
    if abs(total - 1.0) > RATIO_SUM_TOLERANCE:
        raise PlacementError(f"ratios must sum to 1, got {values} (sum {total:.9g})", POLICY)
    chosen = {u: r / total for u, r in zip(units, values, strict=True) if r > 0}
    if len(chosen) < 2:
        raise PlacementError("a fixed 'ratio' needs at least two units with a share > 0", POLICY)
    return chosen


def _decide(
    model: SplitModel,
    op: Op,
    units: list[str],
    fixed: dict[str, float] | None,
    mode: str,
    axis: str,
) -> OpDecision:
    oracle = model.oracle
    capable = [u for u in units if oracle.supports(op, u)]
    singles = {u: model.single_s(op, u, axis) for u in capable}

    def keep(reason: str, ratios=None, split_s=None) -> OpDecision:
        return OpDecision(op.name, axis, singles, ratios or {}, split_s, False, reason)

    if not oracle.supports(merge_op(op), model.home):
        return keep(f"the home '{model.home}' cannot run the merge (concat)")
    if fixed is not None:
        missing = [u for u in fixed if u not in capable]
        if missing:
            return keep(f"{', '.join(missing)} cannot run it")
        ratios = dict(fixed)
    else:
        if len(capable) < 2:
            return keep("fewer than two of the units can run it")
        shares, _ = water_fill([model.lines(op, u, axis) for u in capable])
        ratios = {u: r for u, r in zip(capable, shares, strict=True) if r > 0}
        if len(ratios) < 2:
            return keep(f"balancing puts all of it on {next(iter(ratios))}")
    split_s = model.split_s(op, ratios, axis)
    best = min(singles, key=singles.__getitem__)
    if mode == "auto" and not split_s < singles[best]:
        return keep(
            f"split {split_s * 1e3:.4g} ms is not faster than {best} alone "
            f"{singles[best] * 1e3:.4g} ms",
            ratios,
            split_s,
        )
    return OpDecision(op.name, axis, singles, ratios, split_s, True, "")


def plan_splits(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> tuple[list[str], list[OpDecision]]:
    """The resolved units and the decision for every eligible op (pure, no rewrite).

    Raises
    ------
    PlacementError
        On bad options.
    """
    units = _units(oracle, source, options)
    objective = options.get("objective", "latency")
    if objective != "latency":
        raise PlacementError(
            f"co_execute decides by predicted latency only; objective '{objective}' is not "
            "supported",
            POLICY,
        )
    mode = options.get("mode", "auto")
    if mode not in MODES:
        raise PlacementError(f"unknown mode '{mode}'; valid: {', '.join(MODES)}", POLICY)
    axis = options.get("axis", "channels")
    if axis not in AXES:
        raise PlacementError(f"unknown axis '{axis}'; valid: {', '.join(AXES)}", POLICY)
    kinds = set(options.get("kinds") or DEFAULT_KINDS)
    fixed = _fixed_ratios(options, units)
    model = SplitModel(graph, oracle, source, units[0])
    decisions = []
    for op in graph:
        if op.kind not in kinds or op.flops <= 0 or op.time_s:
            continue
        op_axis = axis if axis == "rows" and op.kind in SPATIAL_KINDS else "channels"
        decisions.append(_decide(model, op, units, fixed, mode, op_axis))
    return units, decisions


@POLICIES.register(POLICY, with_common_options(_OPTIONS, "co_execute placement"))
def co_execute(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Split ops across several units (CoDL/μLayer on one SoC, MoDNN across phones).

    Returns a placement over the rewritten graph (``Placement.graph``). Notes:
    ``home``; ``split`` (one row per split op: ``op``, ``ratios`` by unit, ``axis``,
    predicted ``split_s`` and ``single_s`` of the best single unit ``single_unit``);
    ``kept`` (rows ``op``, ``reason``: eligible ops not split, and why);
    ``predicted_latency_s`` and ``home_latency_s`` (every op on the home) of one request,
    and their ratio ``predicted_speedup``; ``faster_elsewhere`` (ops a non-home unit runs
    faster alone: put that unit first).
    """
    units, decisions = plan_splits(graph, oracle, source, options)
    home = units[0]
    chosen = [d for d in decisions if d.split]
    rewritten = split_ops(
        graph,
        {d.op: list(d.ratios.values()) for d in chosen},
        axis={d.op: d.axis for d in chosen},
    )
    assignment = {}
    split_names = {d.op for d in chosen}
    for op in graph:
        if op.name in split_names:
            continue
        reason = oracle.unsupported_reason(op, home)
        if reason is not None:
            raise PlacementError(
                f"the home '{home}' cannot run it ({reason}); list first a unit that runs "
                "every op that is not split",
                POLICY,
                op.name,
            )
        assignment[op.name] = home
    for d in chosen:
        for i, uid in enumerate(d.ratios):
            assignment[part_name(d.op, i)] = uid
        assignment[merge_name(d.op)] = home
    draft = Placement(assignment, rewritten.order, POLICY, source, graph=rewritten)
    predicted = require_feasible(rewritten, draft, oracle, options, POLICY)
    home_latency_s = None
    if all(oracle.supports(op, home) for op in graph):
        home_only = Placement({op: home for op in graph.order}, graph.order, POLICY, source)
        home_latency_s = evaluate(graph, home_only, oracle)[1].latency_s
    notes: dict[str, Any] = {
        "home": home,
        "units": tuple(units),
        "split": tuple(
            {
                "op": d.op,
                "ratios": dict(d.ratios),
                "axis": d.axis,
                "split_s": d.split_s,
                "single_s": d.best_single_s,
                "single_unit": d.best_unit,
            }
            for d in chosen
        ),
        "kept": tuple({"op": d.op, "reason": d.reason} for d in decisions if not d.split),
        "predicted_latency_s": predicted.latency_s,
        "home_latency_s": home_latency_s,
        "predicted_speedup": (
            home_latency_s / predicted.latency_s if home_latency_s is not None else None
        ),
    }
    elsewhere = tuple(d.op for d in decisions if d.single_s and d.best_unit != home)
    if elsewhere:
        notes["faster_elsewhere"] = elsewhere
    return Placement(assignment, rewritten.order, POLICY, source, notes, graph=rewritten)


__all__ = [
    "DEFAULT_KINDS",
    "MODES",
    "OpDecision",
    "balanced_ratios",
    "co_execute",
    "plan_splits",
    "water_fill",
]
