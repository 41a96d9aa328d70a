"""Nodes onnxruntime removes before it fuses (ReluClipFusion, MatMulScaleFusion of
inputs), for the ``fuse="ort"`` plan of :mod:`simulator.graph.onnx_fuse`."""

from __future__ import annotations

from collections.abc import Sequence

from simulator.graph.onnx_patterns import (
    gemm_bias,
    is_scalar_scaling,
    readers_by_tensor,
    scaled_input,
    swaps_last_axes,
    through,
)
from simulator.graph.onnx_view import NodeView


def drop_relu_before_clip(
    nodes: Sequence[NodeView],
    dropped: set[int],
    aliases: dict[str, str],
    graph_outputs: frozenset[str],
) -> None:
    """Relu -> Clip: onnxruntime removes the Relu (ReluClipFusion raises Clip's min to 0),
    repeatedly, so a chain of Relus before a Clip all go."""
    changed = True
    while changed:
        changed = False
        consumers = readers_by_tensor([through(n, aliases) for n in nodes], dropped)
        for i, node in enumerate(nodes):
            out = node.outputs[0].name if node.outputs else ""
            users = consumers.get(out, [])
            if (
                node.op_type == "Relu"
                and i not in dropped
                and out not in graph_outputs
                and len(users) == 1
                and nodes[users[0]].op_type == "Clip"
                and all(t.is_const for t in nodes[users[0]].inputs[1:2] if t.name)  # min known
            ):
                dropped.add(i)
                source = aliases.get(node.inputs[0].name, node.inputs[0].name)
                # re-point what read this Relu's output through an earlier removal, so
                # the Relu before it is seen feeding the Clip too (aliases stay one hop)
                for name, target in aliases.items():
                    if target == out:
                        aliases[name] = source
                aliases[out] = source
                changed = True
                break  # the consumers changed


def drop_input_scales(
    nodes: Sequence[NodeView],
    dropped: set[int],
    aliases: dict[str, str],
    graph_outputs: frozenset[str],
    rewired: dict[int, dict[str, str]],
) -> set[int]:
    """MatMulScaleFusion of inputs: a MatMul (directly or through a Transpose it takes in)
    reading a Mul / Div by a constant scalar reads its input instead and takes the factor
    into its ``alpha`` (``rewired``: node -> {tensor: tensor read instead}); the scaling
    is removed when no other node reads it. Returns those MatMuls. A scaling of a
    MatMul's output stays with that MatMul (:func:`_matmul`); MatMuls becoming Gemms take
    none.
    """
    viewed = [through(n, aliases) for n in nodes]
    readers = readers_by_tensor(viewed, dropped)
    producer = {o.name: i for i, n in enumerate(viewed) if i not in dropped for o in n.outputs}

    def sole(tensor: str) -> int | None:
        users = readers.get(tensor, [])
        return users[0] if len(users) == 1 and tensor not in graph_outputs else None

    def plain_matmul(j: int) -> bool:
        if viewed[j].op_type != "MatMul":
            return False
        add = sole(viewed[j].outputs[0].name)
        out = viewed[j].outputs[0].name
        return not (
            add is not None
            and viewed[add].op_type == "Add"
            and gemm_bias(viewed[j], viewed[add], out) is not None
        )

    def matmul_of(k: int) -> int | None:
        if plain_matmul(k):
            return k
        if viewed[k].op_type == "Transpose" and swaps_last_axes(viewed[k]):
            users = set(readers.get(viewed[k].outputs[0].name, []))
            if len(users) == 1 and plain_matmul(m := users.pop()):
                return m
        return None

    scaled: set[int] = set()
    changed = True
    while changed:  # onnxruntime repeats the pass: a chain of scalings merges one by one
        changed = False
        for i, node in enumerate(viewed):
            if i in dropped or not node.outputs or node.outputs[0].name in graph_outputs:
                continue
            x, out = scaled_input(node), node.outputs[0].name
            shape = next((t.shape for t in node.inputs if t.name == x), None)
            if not shape or not is_scalar_scaling(node, x):
                continue
            p = producer.get(x)
            if p is not None and plain_matmul(p) and sole(x) == i:
                continue  # the output scaling of that MatMul
            takers = [k for k in dict.fromkeys(readers.get(out, [])) if matmul_of(k) is not None]
            if not takers:
                continue
            for k in takers:
                rewired.setdefault(k, {})[out] = x
                scaled.add(matmul_of(k))  # type: ignore[arg-type]
                moved = [r for r in readers[out] if r == k]
                readers[out] = [r for r in readers[out] if r != k]
                readers.setdefault(x, []).extend(moved)
            if not readers[out]:  # nobody else reads the scaling: it is gone
                dropped.add(i)
                aliases[out] = x
                readers[x] = [r for r in readers[x] if r != i]
            changed = True
    return scaled
