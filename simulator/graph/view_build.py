"""Ops and edges from node views: the last step of the ONNX and TFLite importers.

Both importers describe a model as :class:`~simulator.graph.onnx_view.NodeView` s in ONNX
terms (op type, attributes, shapes) and a fusion :class:`~simulator.graph.onnx_fuse.Plan`
(which nodes run as one kernel); :func:`build_graph` costs every node with the one handler
table (:data:`simulator.graph.onnx_ops.HANDLERS`) and makes the ops and edges. No onnx
import here: the TFLite importer does not need the onnx package.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from simulator.errors import ModelError
from simulator.graph.kind_figures import DEFAULT_PARALLEL_FRACTION
from simulator.graph.model import DTYPE_BYTES, Edge, ModelGraph, Op
from simulator.graph.onnx_fuse import Group, Plan, runs_fused_kernel
from simulator.graph.onnx_ops import HANDLERS
from simulator.graph.onnx_view import NodeView, OpCost, TensorView
from simulator.limits import MAX_TENSOR_ELEMENTS


def tensor_elements(dims: Iterable[int], what: str, label: str) -> int:
    """The element count of ``dims``, each >= 0, bounded by :data:`MAX_TENSOR_ELEMENTS`.

    Raises
    ------
    ModelError
        For a negative dimension or a product beyond the bound.
    """
    dims = [int(d) for d in dims]
    if any(d < 0 for d in dims):
        raise ModelError(f"{what} has a negative dimension: {dims}", label)
    count = math.prod(dims)
    if count > MAX_TENSOR_ELEMENTS:
        raise ModelError(
            f"{what} of shape {dims} has {count:.3g} elements, more than the "
            f"{MAX_TENSOR_ELEMENTS:.3g} (MAX_TENSOR_ELEMENTS) socsim accepts",
            label,
        )
    return count


def _cost(view: NodeView, label: str) -> OpCost:
    try:
        return HANDLERS[view.op_type](view)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise ModelError(f"node '{view.name}' ({view.op_type}): {exc}", label) from None


def build_graph(
    name: str,
    views: Sequence[NodeView],
    plan: Plan,
    graph_outputs: frozenset[str],
    dtype: str,
    label: str,
) -> ModelGraph:
    views = plan.views or views
    costs = {m: _cost(views[m], label) for g in plan.groups for m in (g.anchor, *g.fused)}
    group_of = {m: k for k, g in enumerate(plan.groups) for m in g.members}
    producer = {o.name: i for i, v in enumerate(views) for o in v.outputs if o.name}
    consumed: dict[str, set[int]] = {}
    for k, g in enumerate(plan.groups):
        for m in g.members:
            for t in views[m].inputs:
                consumed.setdefault(plan.aliases.get(t.name, t.name), set()).add(k)
    element_bytes = DTYPE_BYTES[dtype]
    ops: list[Op] = []
    edges: dict[tuple[str, str], int] = {}
    for k, group in enumerate(plan.groups):
        reads = _group_inputs(views, group, plan)
        op = _group_op(views, costs, group, reads, consumed, graph_outputs, dtype, k)
        ops.append(op)
        for tensor in {t.name: t for t in reads}.values():
            p = producer.get(tensor.name)
            if p is None or p not in group_of:  # a graph input, or folded away
                continue
            src = views[plan.groups[group_of[p]].anchor].name
            edges[src, op.name] = edges.get((src, op.name), 0) + tensor.elems * element_bytes
    try:
        return ModelGraph(name, ops, [Edge(s, d, b) for (s, d), b in edges.items()])
    except ModelError as exc:
        raise ModelError(exc.message, label) from None


def _group_inputs(views: Sequence[NodeView], group: Group, plan: Plan) -> list[TensorView]:
    """Activation tensors the group reads from outside itself (one per use)."""
    inside = {o.name for m in group.members for o in views[m].outputs}
    reads = []
    for m in group.members:
        for t in views[m].inputs:
            source = plan.aliases.get(t.name, t.name)
            if not t.name or t.is_const or source in plan.constants or source in inside:
                continue
            reads.append(TensorView(source, t.shape))
    return reads


def _group_op(
    views: Sequence[NodeView],
    costs: Mapping[int, OpCost],
    group: Group,
    reads: Sequence[TensorView],
    consumed: dict[str, set[int]],
    graph_outputs: frozenset[str],
    dtype: str,
    index: int,
) -> Op:
    computing = (group.anchor, *group.fused)
    anchor = costs[group.anchor]
    written = [
        o
        for m in group.members
        for o in views[m].outputs
        if o.name and (o.name in graph_outputs or consumed.get(o.name, set()) - {index})
    ]
    output_elems = sum(o.elems for o in written) or views[group.anchor].out_elems
    attrs: dict[str, object] = dict(anchor.attrs)
    if attrs and group.extra_params:  # a folded BatchNorm / bias Add: the op gains a bias
        attrs["bias"] = 1
    if runs_fused_kernel(group, views):  # as the fuse technique marks its fused ops
        attrs["fused"] = tuple(views[m].name for m in (group.anchor, *sorted(group.members[1:])))
    return Op(
        name=views[group.anchor].name,
        kind=anchor.kind,
        flops=float(sum(costs[m].flops for m in computing) + group.extra_flops),
        macs=float(sum(costs[m].macs for m in computing)),
        params=int(anchor.params + group.extra_params),  # fused nodes hold no weights
        input_elems=sum(t.elems for t in reads),
        output_elems=output_elems,
        dtype=dtype,
        parallel_fraction=DEFAULT_PARALLEL_FRACTION[anchor.kind],
        attrs=attrs,
    )
