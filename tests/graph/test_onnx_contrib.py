"""onnxruntime's transformer contrib ops (com.microsoft), costed by hand."""

from __future__ import annotations

from onnx import helper
from onnx_util import model, weight

from simulator.graph.onnx_import import load_onnx


def contrib(op: str, inputs: list[str], outputs: list[str], **attrs):
    return helper.make_node(op, inputs, outputs, name=op, domain="com.microsoft", **attrs)


def with_contrib_opset(m):
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def test_attention_projection_scores_and_context():
    b, s, d, heads = 2, 5, 8, 2
    m = with_contrib_opset(
        model(
            [contrib("Attention", ["x", "w", "bias"], ["y"], num_heads=heads)],
            {"x": [b, s, d]},
            ["y"],
            [weight("w", (d, 3 * d)), weight("bias", (3 * d,))],
        )
    )
    op = load_onnx(m).op("Attention")
    projection = b * s * d * 3 * d
    scores = context = b * heads * s * s * (d // heads)
    assert op.kind == "attention" and op.output_elems == b * s * d
    assert op.macs == projection + scores + context
    assert op.flops == 2 * op.macs + b * heads * s * s * (1 + 5)  # scaling and softmax
    assert op.params == d * 3 * d + 3 * d


def test_multi_head_attention_on_projected_inputs():
    b, s, kv, d, heads = 1, 4, 6, 8, 4
    m = with_contrib_opset(
        model(
            [contrib("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=heads)],
            {"q": [b, s, d], "k": [b, kv, d], "v": [b, kv, d]},
            ["y"],
        )
    )
    op = load_onnx(m).op("MultiHeadAttention")
    assert op.macs == 2 * b * s * kv * d and op.params == 0
    assert (op.input_elems, op.output_elems) == (32 + 48 + 48, 32)


def test_skip_layer_norm_and_bias_gelu_feed_each_other():
    d = 6
    m = with_contrib_opset(
        model(
            [
                contrib("SkipLayerNormalization", ["x", "r", "g", "b", "bias"], ["n"]),
                contrib("BiasGelu", ["n", "gb"], ["y"]),
            ],
            {"x": [1, 3, d], "r": [1, 3, d]},
            ["y"],
            [weight(n, (d,)) for n in ("g", "b", "bias", "gb")],
        )
    )
    g = load_onnx(m)
    norm, gelu = g.op("SkipLayerNormalization"), g.op("BiasGelu")
    assert (norm.kind, norm.params, norm.flops) == ("norm", 3 * d, 18 * (8 + 2))
    assert (gelu.kind, gelu.params, gelu.flops) == ("activation", d, 18 * (8 + 1))
    assert g.edge("SkipLayerNormalization", "BiasGelu").bytes == 18 * 4
