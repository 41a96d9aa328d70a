"""Inline models: ``ops:`` and ``edges:`` written in the scenario itself.

Ops may give roofline quantities (FLOPs, element counts, parameters) or explicit
per-unit times (``time_ms``, as scheduling papers tabulate); edges may give their
bytes (default: the producer's output bytes) and an explicit ``comm_ms``. Conv / fc ops
may declare their shape (:mod:`simulator.spec.inline_shapes`) for the techniques.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import networkx as nx

from simulator.errors import ModelError
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.schema import Context, Loc, nearest
from simulator.spec.inline_shapes import shape_attrs


def build_inline_model(
    name: str,
    spec: Mapping[str, Any],
    raw: Mapping[str, Any],
    loc: Loc,
    ctx: Context,
    platform: Any = None,
) -> ModelGraph | None:
    """Build the inline model ``name`` or record its problems in ``ctx`` and return None.

    With ``platform`` given, the unit names of ``time_ms`` tables are checked against it
    (a qualified ``node.unit`` or a bare unit name some node has).
    """
    start = len(ctx.problems)
    ops: dict[str, Op] = {}
    invalid: set[str] = set()  # declared, but already reported as invalid
    raw_ops = raw["ops"]
    units = _unit_names(platform) if platform is not None else None
    for i, op in enumerate(spec["ops"]):
        op_loc = loc.child(raw, "ops").child(raw_ops, i)
        if op["name"] in ops:
            ctx.problem(op_loc.child(raw_ops[i], "name"), f"duplicate op name '{op['name']}'")
            continue
        if units is not None:
            raw_times = raw_ops[i].get("time_ms") or {}
            for unit in op["time_s"]:
                if unit not in units:
                    ctx.problem(
                        op_loc.child(raw_ops[i], "time_ms").child(raw_times, unit),
                        f"time table names unknown unit '{unit}'; units: "
                        f"{', '.join(platform.unit_ids)}",
                        nearest(unit, units),
                    )
        values = dict(op)
        attrs = shape_attrs(values, raw_ops[i], op_loc, ctx)
        if attrs is None:
            invalid.add(op["name"])
            continue
        if values["flops"] is None:
            values["flops"] = 2.0 * values["macs"]
        try:
            ops[op["name"]] = Op(**values, attrs=attrs)
        except ModelError as exc:
            ctx.problem(op_loc, exc.message)
            invalid.add(op["name"])
    edges = []
    raw_edges = raw.get("edges") or []
    for i, edge in enumerate(spec["edges"]):
        edge_loc = loc.child(raw, "edges").child(raw_edges, i)
        bad = False
        for end in ("src", "dst"):
            if edge[end] in invalid:
                bad = True
            elif edge[end] not in ops:
                ctx.problem(
                    edge_loc.child(raw_edges[i], end),
                    f"unknown op '{edge[end]}'; ops: {', '.join(list(ops)[:12])}",
                    nearest(edge[end], ops),
                )
                bad = True
        if bad:
            continue
        nbytes = edge["bytes"] if edge["bytes"] is not None else ops[edge["src"]].output_bytes
        edges.append((edge_loc, Edge(edge["src"], edge["dst"], nbytes, edge["comm_s"])))
    if len(ctx.problems) > start:
        return None
    graph = nx.DiGraph([(e.src, e.dst) for _, e in edges])
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        text = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        ctx.problem(loc.child(raw, "edges"), f"the model graph has a cycle: {text}")
        return None
    seen = set()
    for edge_loc, edge in edges:
        if (edge.src, edge.dst) in seen:
            ctx.problem(edge_loc, f"duplicate edge {edge.src} -> {edge.dst}")
        if edge.src == edge.dst:
            ctx.problem(edge_loc, f"self-loop on op '{edge.src}'")
        seen.add((edge.src, edge.dst))
    if len(ctx.problems) > start:
        return None
    return ModelGraph(name, ops.values(), [e for _, e in edges])


def _unit_names(platform: Any) -> list[str]:
    """Names a time table may use: every ``node.unit`` id and every bare unit name."""
    bare = {uid.split(".", 1)[1]: None for uid in platform.unit_ids}
    return [*platform.unit_ids, *bare]
