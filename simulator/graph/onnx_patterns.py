"""Small predicates on ONNX node views shared by the fusion rules and the node removals
(:mod:`simulator.graph.onnx_fuse`, :mod:`simulator.graph.onnx_removals`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from simulator.graph.onnx_view import NodeView, TensorView


def readers_by_tensor(nodes: Sequence[NodeView], dropped: set[int]) -> dict[str, list[int]]:
    """Tensor -> the nodes reading it (once per use), removed nodes left out."""
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        if i not in dropped:
            for t in node.inputs:
                if t.name:
                    consumers.setdefault(t.name, []).append(i)
    return consumers


def through(node: NodeView, aliases: Mapping[str, str]) -> NodeView:
    """``node`` reading the inputs of the removed nodes it read."""
    if not any(t.name in aliases for t in node.inputs):
        return node
    inputs = tuple(replace(t, name=aliases.get(t.name, t.name)) for t in node.inputs)
    return replace(node, inputs=inputs)


def other_input(node: NodeView, tensor: str) -> str | None:
    names = [t.name for t in node.inputs]
    if len(names) != 2 or names.count(tensor) != 1:
        return None
    return names[1] if names[0] == tensor else names[0]


def gemm_bias(node: NodeView, add: NodeView, out: str) -> TensorView | None:
    """The bias ``add`` adds to MatMul ``node``'s output, when Gemm can take it as C:
    shape ``(N,)``, or for a 2-D A also ``(1, N)``, ``(M, 1)`` or ``(M, N)``."""
    a, b = node.inputs[0].shape or (), node.inputs[1].shape or ()
    bias = next((t for t in add.inputs if t.name == other_input(add, out)), None)
    if bias is None or len(b) != 2 or len(a) < 2:
        return None
    m, n = a[0], b[1]
    valid = [(n,)] + ([(1, n), (m, 1), (m, n)] if len(a) == 2 else [])
    return bias if bias.shape in valid else None


def scaled_input(node: NodeView) -> str:
    """The non-constant operand of a Mul / Div (its first input for anything else)."""
    names = [t.name for t in node.inputs if not t.is_const]
    return names[0] if len(names) == 1 else node.inputs[0].name


def is_scalar_scaling(node: NodeView, tensor: str) -> bool:
    """``node`` multiplies ``tensor`` by, or divides it by, a constant scalar."""
    if node.op_type not in ("Mul", "Div"):
        return False
    scale = other_input(node, tensor)
    view = next((t for t in node.inputs if t.name == scale), None)
    divides_by = node.op_type == "Mul" or node.inputs[1].name == scale
    return view is not None and view.is_const and view.elems == 1 and divides_by


def swaps_last_axes(node: NodeView) -> bool:
    """A Transpose of the last two axes only (what MatMul's transA / transB express)."""
    perm = list(node.attr("perm") or [])
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]
