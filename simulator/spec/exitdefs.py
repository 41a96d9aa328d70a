"""A model's ``exits:`` built onto its graph, with every problem at its YAML path.

The schema (:data:`simulator.spec.modeldefs.EXIT`) checks each exit's fields; this module
checks them against the built model (:func:`simulator.graph.exits.exit_problems`: an op
the model lacks, with the nearest name; probabilities summing over 1; exits out of
order) and builds the :class:`~simulator.graph.exits.ExitModel`.
"""

from __future__ import annotations

from typing import Any

from simulator.errors import ModelError
from simulator.graph.exits import Exit, ExitModel, attach_exits, exit_problems, fused_into
from simulator.graph.model import ModelGraph, Op
from simulator.schema import Context, Loc
from simulator.spec.inline_shapes import shape_attrs


def build_exits(
    graph: ModelGraph,
    checked: list[dict[str, Any]],
    top1: float | None,
    raw: Any,
    loc: Loc,
    ctx: Context,
) -> ExitModel | None:
    """``graph`` with the checked ``exits`` of ``models.<name>`` (raw at ``raw``, located at
    ``loc``), or None after reporting every problem in ``ctx``."""
    raw_exits = raw["exits"]
    exits_loc = loc.child(raw, "exits")
    start = len(ctx.problems)
    exits, heads = [], []
    for i, spec in enumerate(checked):
        where = exits_loc.child(raw_exits, i)
        ops = []
        raw_head = raw_exits[i].get("head") or []
        for j, op in enumerate(spec["head"]):
            op_loc = where.child(raw_exits[i], "head").child(raw_head, j)
            values = dict(op)
            attrs = shape_attrs(values, raw_head[j], op_loc, ctx)
            if attrs is None:
                continue
            if values["flops"] is None:
                values["flops"] = 2.0 * values["macs"]
            try:
                ops.append(Op(**values, attrs=attrs))
            except ModelError as exc:
                ctx.problem(op_loc, exc.message)
        heads.append(ops)
        exits.append(
            Exit(
                name=spec["name"],
                # an op a fusion absorbed as its last member: the fused op, same output
                after=fused_into(graph, spec["after"]),
                head=tuple(op.name for op in ops),
                accuracy_top1=spec["accuracy_top1"],
                probability=spec["probability"],
                threshold=spec["threshold"],
            )
        )
        if "probability" in raw_exits[i] and "threshold" in raw_exits[i]:
            ctx.problem(
                where.child(raw_exits[i], "threshold"),
                "give probability (a share of all requests) or threshold (a confidence "
                "to reach here), not both",
            )
    for index, key, message, hint in exit_problems(graph, exits, heads):
        item = raw_exits[index]
        at = exits_loc.child(raw_exits, index)
        ctx.problem(at.child(item, key) if key in item else at, message, hint)
    if len(ctx.problems) > start:
        return None
    return attach_exits(graph, exits, heads, top1)
