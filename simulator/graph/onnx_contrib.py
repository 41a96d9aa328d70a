"""Cost and shape rules for onnxruntime's transformer contrib ops (``com.microsoft``).

onnxruntime's CPU optimizer (``ORT_ENABLE_EXTENDED``) rewrites transformer blocks into
these ops: a residual Add + LayerNormalization becomes ``SkipLayerNormalization``, a
bias Add + Gelu ``BiasGelu``, a whole self-attention ``Attention``. Loading such an
optimized model with ``fuse="none"`` needs their costs (same conventions as
:mod:`simulator.graph.onnx_ops`; attention as in
:meth:`simulator.graph.layers.GraphBuilder.multi_head_attention`) and their output
shapes, which ONNX's shape inference does not know.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from simulator.graph.kind_figures import FLOPS_PER_ELEMENT
from simulator.graph.onnx_view import Handler, NodeView, OpCost, Shape, const_elems

#: RMS normalisation per element: square, accumulate, multiply by the inverse RMS, scale.
RMS_NORM_FLOPS = 4.0


def _skip_norm(per_elem: float, params_from: tuple[int, ...]) -> Handler:
    def handler(node: NodeView) -> OpCost:
        adds = 1 + (node.input(params_from[-1]) is not None)  # the skip, and a bias
        flops = node.out_elems * (per_elem + adds * FLOPS_PER_ELEMENT["add"])
        return OpCost("norm", flops, 0.0, const_elems(node, params_from))

    handler.__doc__ = (
        f"Skip(+bias) + normalisation: {per_elem:g} FLOPs per element plus one per add."
    )
    return handler


def simplified_layer_norm(node: NodeView) -> OpCost:
    """SimplifiedLayerNormalization (RMSNorm): (X, scale)."""
    return OpCost("norm", node.out_elems * RMS_NORM_FLOPS, 0.0, const_elems(node, (1,)))


def bias_gelu(node: NodeView) -> OpCost:
    """BiasGelu (A, bias) / FastGelu (X, optional bias): GELU plus the bias add."""
    has_bias = node.input(1) is not None
    per = FLOPS_PER_ELEMENT["gelu"] + (FLOPS_PER_ELEMENT["add"] if has_bias else 0.0)
    return OpCost("activation", node.out_elems * per, 0.0, const_elems(node, (1,)))


def _attention_core(batch_heads_q: int, kv_len: int, qk: int, v: int) -> tuple[float, float]:
    """MACs and extra FLOPs of scores + softmax + context for ``batch*heads*q`` queries.

    ``qk`` / ``v`` are the per-head sizes; the ``1/sqrt(d)`` scaling costs one FLOP per
    score and the softmax five, as the zoo counts them.
    """
    scores = batch_heads_q * kv_len
    macs = scores * (qk + v)
    extra = scores * (FLOPS_PER_ELEMENT["scale"] + FLOPS_PER_ELEMENT["softmax"])
    return macs, extra


def _qkv_sizes(node: NodeView) -> tuple[int, int, int]:
    sizes = node.attr("qkv_hidden_sizes")
    if sizes:
        return int(sizes[0]), int(sizes[1]), int(sizes[2])
    third = node.shape_of(1)[1] // 3
    return third, third, third


def attention(node: NodeView) -> OpCost:
    """Attention: (input (B, S, D_in), weights (D_in, D_q + D_k + D_v), bias, mask...).

    MACs = QKV projection ``B * S * D_in * (D_q + D_k + D_v)`` + scores
    ``B * S * S * D_q`` + context ``B * S * S * D_v``.
    """
    batch, seq, d_in = node.shape_of(0)
    heads = int(node.attr("num_heads"))
    d_q, d_k, d_v = _qkv_sizes(node)
    projection = batch * seq * d_in * (d_q + d_k + d_v)
    macs, extra = _attention_core(batch * heads * seq, seq, d_q // heads, d_v // heads)
    total = projection + macs
    return OpCost("attention", 2.0 * total + extra, total, const_elems(node, (1, 2)))


def multi_head_attention(node: NodeView) -> OpCost:
    """MultiHeadAttention on projected (B, S, D) query, key and value (3-D inputs)."""
    batch, seq, d_q = node.shape_of(0)
    kv_len = node.shape_of(1)[1]
    d_v = node.shape_of(2)[2] if len(node.shape_of(1)) == 3 else d_q
    heads = int(node.attr("num_heads"))
    macs, extra = _attention_core(batch * heads * seq, kv_len, d_q // heads, d_v // heads)
    return OpCost("attention", 2.0 * macs + extra, macs, const_elems(node, (3,)))


#: Cost handlers of the transformer contrib ops, merged into ``onnx_ops.HANDLERS``.
CONTRIB_HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        "SkipLayerNormalization": _skip_norm(FLOPS_PER_ELEMENT["layernorm"], (2, 3, 4)),
        "SkipSimplifiedLayerNormalization": _skip_norm(RMS_NORM_FLOPS, (2, 3)),
        "SimplifiedLayerNormalization": simplified_layer_norm,
        "BiasGelu": bias_gelu,
        "FastGelu": bias_gelu,
        "Attention": attention,
        "MultiHeadAttention": multi_head_attention,
    }
)


def _norm_shapes(node: NodeView) -> list[Shape]:
    """Output, mean, inverse std (reduced last axis), and the skip sum of a skip norm."""
    x = node.shape_of(0)
    reduced = (*x[:-1], 1)
    return [x, reduced, reduced, x][: len(node.outputs)]


def _attention_shape(node: NodeView) -> list[Shape]:
    batch, seq, _ = node.shape_of(0)
    return [(batch, seq, _qkv_sizes(node)[2])]


def _mha_shape(node: NodeView) -> list[Shape]:
    batch, seq, d_q = node.shape_of(0)
    d_v = node.shape_of(2)[2] if len(node.shape_of(1)) == 3 else d_q
    return [(batch, seq, d_v)]


#: Output shapes of the transformer contrib ops (merged into ``onnx_shapes.SHAPE_RULES``).
CONTRIB_SHAPES: Mapping[str, Callable[[NodeView], list[Shape]]] = MappingProxyType(
    {
        "SkipLayerNormalization": _norm_shapes,
        "SkipSimplifiedLayerNormalization": _norm_shapes,
        "SimplifiedLayerNormalization": _norm_shapes,
        "BiasGelu": lambda node: [node.shape_of(0)],
        "FastGelu": lambda node: [node.shape_of(0)],
        "Attention": _attention_shape,
        "MultiHeadAttention": _mha_shape,
    }
)
