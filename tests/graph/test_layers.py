"""Hand-computed checks of the shape-tracking builder."""

from __future__ import annotations

import pytest

from simulator.errors import ModelError
from simulator.graph.layers import DEFAULT_PARALLEL_FRACTION, GraphBuilder, conv_output_size
from simulator.graph.model import OP_KINDS


def test_floor_formula():
    assert conv_output_size(224, 11, 4, 2) == 55
    assert conv_output_size(55, 3, 2, 0) == 27
    assert conv_output_size(7, 2, 2, 0) == 3  # floor, not ceil


def test_small_conv_by_hand():
    b = GraphBuilder()
    y = b.conv(b.input((3, 32, 32)), 16, 3, stride=1, padding=1, name="conv")
    op = b.build("one_conv").op("conv")
    assert y.shape == (16, 32, 32)
    assert op.kind == "conv"
    assert op.macs == 16 * 32 * 32 * 3 * 3 * 3 == 442_368
    assert op.flops == 2 * 442_368
    assert op.params == 16 * 27 + 16 == 448
    assert op.input_elems == 3 * 32 * 32
    assert op.output_elems == 16_384
    assert op.parallel_fraction == DEFAULT_PARALLEL_FRACTION["conv"]


def test_depthwise_conv_by_hand():
    # 32 channels, 3x3 depthwise, stride 2, pad 1 on 112x112 -> 56x56, no bias.
    b = GraphBuilder()
    y = b.conv(
        b.input((32, 112, 112)), 32, 3, stride=2, padding=1, groups=32, bias=False, name="dw"
    )
    op = b.build().op("dw")
    assert y.shape == (32, 56, 56)
    assert op.kind == "dwconv"
    assert op.macs == 32 * 56 * 56 * 9 == 903_168
    assert op.params == 32 * 9 == 288
    assert op.output_elems == 32 * 56 * 56


def test_grouped_conv_is_conv_kind():
    b = GraphBuilder()
    b.conv(b.input((8, 4, 4)), 8, 3, padding=1, groups=2, name="g")
    op = b.build().op("g")
    assert op.kind == "conv"
    assert op.macs == 8 * 4 * 4 * 4 * 9


def test_pointwise_ops_and_edges():
    b = GraphBuilder()
    x = b.conv(b.input((4, 8, 8)), 4, 3, padding=1, name="c")
    x = b.bn(x, name="bn")
    x = b.relu(x, name="r")
    y = b.maxpool(x, 2, name="p")
    g = b.build()
    bn, pool = g.op("bn"), g.op("p")
    assert bn.kind == "norm" and bn.params == 8 and bn.macs == 0 and bn.flops == 2 * 256
    assert g.op("r").kind == "activation" and g.op("r").flops == 256
    assert y.shape == (4, 4, 4) and pool.flops == 64 * 4
    assert g.edge("c", "bn").bytes == 256 * 4
    assert g.entry_ops() == ["c"]


def test_fc_flattens_and_lrn():
    b = GraphBuilder(dtype="fp16")
    x = b.lrn(b.input((256, 6, 6)), size=5, name="norm")
    y = b.fc(x, 10, name="fc")
    g = b.build()
    assert y.shape == (10,)
    assert g.op("fc").macs == 9216 * 10 and g.op("fc").params == 9216 * 10 + 10
    assert g.op("norm").kind == "lrn" and g.op("norm").flops == 9216 * 13
    assert g.edge("norm", "fc").bytes == 9216 * 2


def test_matmul_attention_counts():
    b = GraphBuilder()
    x = b.input((16, 64), name="input")
    b.multi_head_attention(x, heads=4, prefix="a.")
    g = b.build()
    scores, context = g.op("a.scores"), g.op("a.context")
    assert scores.macs == 4 * 16 * 16 * 16 and scores.output_elems == 4 * 16 * 16
    assert scores.flops == 2 * scores.macs + 4 * 16 * 16
    assert context.macs == 4 * 16 * 16 * 16 and context.output_elems == 16 * 64
    assert g.predecessors("a.scores") == ["a.q_proj", "a.k_proj"]
    assert g.op("a.q_proj").params == 64 * 64 + 64


def test_concat_and_flatten():
    b = GraphBuilder()
    x = b.input((2, 4, 4), name="in")
    y = b.concat(b.relu(x, name="r1"), b.relu(x, name="r2"), name="cat")
    z = b.flatten(y, name="flat")
    g = b.build()
    assert y.shape == (4, 4, 4) and z.shape == (64,)
    assert g.op("flat").kind == "reshape" and g.op("flat").flops == 0
    assert g.op("cat").input_elems == 64


def test_errors():
    b = GraphBuilder()
    x = b.input((3, 8, 8))
    b.relu(x, name="a")
    with pytest.raises(ModelError, match="duplicate"):
        b.relu(x, name="a")
    with pytest.raises(ModelError, match="impossible output shape"):
        b.conv(x, 4, 11, name="big")
    b.relu(x, name="b")
    with pytest.raises(ModelError, match="model input feeds"):
        b.build()
    with pytest.raises(ModelError, match="dtype"):
        GraphBuilder(dtype="fp64")


def test_parallel_fraction_table_covers_every_kind():
    assert set(DEFAULT_PARALLEL_FRACTION) == set(OP_KINDS)
    assert all(0.0 <= p <= 1.0 for p in DEFAULT_PARALLEL_FRACTION.values())
    b = GraphBuilder(parallel_fraction={"activation": 0.5})
    b.relu(b.input((4,)), name="r")
    assert b.build().op("r").parallel_fraction == 0.5


def test_conv_rejects_bad_arguments():
    b = GraphBuilder()
    x = b.input((4, 8, 8))
    with pytest.raises(ModelError, match="divisible by groups"):
        b.conv(x, 6, 3, groups=4, name="g")
    with pytest.raises(ModelError, match=">= 1"):
        b.conv(x, 4, 3, stride=0, name="s")
