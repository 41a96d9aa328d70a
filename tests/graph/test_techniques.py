"""Deployment techniques: exact FLOP / byte / param arithmetic on hand-built graphs."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from simulator.errors import ModelError
from simulator.graph.layers import GraphBuilder
from simulator.graph.model import ModelGraph
from simulator.graph.sparse import stored_weight_bytes
from simulator.graph.techniques import apply_techniques, baseline_top1
from simulator.graph.techniques.fusion import fuse
from simulator.graph.techniques.prune import prune_channels, prune_weights
from simulator.graph.techniques.quantize import quantize, quantize_accuracy
from simulator.graph.techniques.substitute import depthwise_separable
from simulator.graph.zoo import build_zoo_model


def conv_chain(c_in=512, c_mid=512, c_out=512, hw=14, k=3) -> ModelGraph:
    """conv1 (k x k, c_in -> c_mid) -> bn1 -> relu1 -> conv2 (k x k, c_mid -> c_out) -> fc."""
    b = GraphBuilder(model="chain")
    x = b.input((c_in, hw, hw))
    x = b.relu(b.bn(b.conv(x, c_mid, k, padding=k // 2, bias=False, name="conv1"), "bn1"), "relu1")
    x = b.conv(x, c_out, k, padding=k // 2, name="conv2")
    b.fc(x, 10, name="fc")
    return b.build()


# -- depthwise-separable substitution ------------------------------------------------
def test_depthwise_separable_cost_ratio_is_one_over_n_plus_one_over_k_squared():
    g = conv_chain(c_in=512, c_mid=512, hw=14, k=3)
    h = depthwise_separable(g, ops="conv1")
    before = g.op("conv1").macs
    after = h.op("conv1_dw").macs + h.op("conv1").macs
    assert Fraction(int(after), int(before)) == Fraction(1, 512) + Fraction(1, 9)
    # the halves: dw 512 x 14 x 14 x 9, pw 512 x 14 x 14 x 512; params 512 x 9, 512 x 512
    assert h.op("conv1_dw").macs == 512 * 196 * 9
    assert h.op("conv1").macs == 512 * 196 * 512
    assert h.op("conv1_dw").params == 512 * 9 and h.op("conv1").params == 512 * 512
    assert h.op("conv1_dw").kind == "dwconv" and h.op("conv1").kind == "conv"
    assert h.predecessors("conv1") == ["conv1_dw"] and h.successors("conv1") == ["bn1"]
    assert h.edge("conv1_dw", "conv1").bytes == 512 * 196 * 4


def test_depthwise_separable_ratio_with_unequal_channels_and_bias():
    g = conv_chain(c_in=64, c_mid=512, c_out=128, hw=7, k=5)
    h = depthwise_separable(g, ops="conv2")  # 512 -> 128, 5 x 5, with bias
    ratio = Fraction(int(h.op("conv2_dw").macs + h.op("conv2").macs), int(g.op("conv2").macs))
    assert ratio == Fraction(1, 128) + Fraction(1, 25)
    assert h.op("conv2_dw").params == 512 * 25 + 512
    assert h.op("conv2").params == 128 * 512 + 128
    assert len(h) == len(g) + 1


# -- channel pruning -----------------------------------------------------------------
def test_prune_channels_scales_the_op_and_its_consumer_exactly():
    g = conv_chain(c_in=64, c_mid=128, c_out=96, hw=8, k=3)
    h = prune_channels(g, 0.25)
    # conv1: 128 -> 96 output channels; bn1 and relu1 follow; conv2 reads 96 channels
    assert h.op("conv1").macs == 96 * 64 * 9 * 64
    assert h.op("conv1").params == 96 * 64 * 9
    assert h.op("conv1").output_elems == 96 * 64
    assert h.op("bn1").params == 2 * 96 and h.op("relu1").output_elems == 96 * 64
    assert h.edge("relu1", "conv2").bytes == 96 * 64 * 4
    # conv2: out 96 -> 72 (pruned itself) and in 128 -> 96: (1 - r)^2 of its MACs
    assert h.op("conv2").macs == 72 * 64 * 96 * 9
    assert Fraction(int(h.op("conv2").macs), int(g.op("conv2").macs)) == Fraction(9, 16)
    assert h.op("conv2").params == 72 * 96 * 9 + 72
    # fc (exit op) keeps its 10 outputs; its input shrinks with conv2's channels
    assert h.op("fc").output_elems == 10
    assert h.op("fc").macs == 72 * 64 * 10
    assert h.order == g.order


def test_prune_channels_ratio_is_read_as_a_decimal():
    g = conv_chain(c_in=8, c_mid=10, c_out=10, hw=4)
    h = prune_channels(g, 0.3)  # floor(0.3 x 10) = 3 exactly, not 2 from 0.29999...
    assert h.op("conv1").attrs["out_channels"] == 7


def test_prune_channels_skips_residual_producers():
    g = build_zoo_model("resnet18")
    h = prune_channels(g, 0.5)
    # layer1.0.conv2 feeds a residual add through its bn: not pruned
    names = [op.name for op in g if op.kind == "conv"]
    kept = [n for n in names if h.op(n).attrs["out_channels"] == g.op(n).attrs["out_channels"]]
    cut = [n for n in names if n not in kept]
    assert cut and kept
    for name in cut:  # every pruned conv is a block's first conv
        assert name.endswith("conv1")


# -- weight pruning ------------------------------------------------------------------
def test_sparse_formats_exact_bytes():
    # 1000 fp32 weights at 75 %: 250 kept
    assert stored_weight_bytes(1000, 4, 0.75, "bitmask") == 250 * 4 + 125
    assert stored_weight_bytes(1000, 4, 0.75, "csr", rows=10) == 250 * 6 + 4 * 11
    assert stored_weight_bytes(1001, 1, 0.5, "bitmask") == 501 * 1 + 126
    with pytest.raises(ValueError, match="valid: bitmask, csr"):
        stored_weight_bytes(10, 4, 0.5, "coo")


def test_prune_weights_shrinks_storage_not_flops_and_composes():
    g = conv_chain(c_in=16, c_mid=16, c_out=16, hw=4)
    h = prune_weights(g, 0.5, "bitmask")
    op = h.op("conv1")
    assert op.flops == g.op("conv1").flops and op.params == g.op("conv1").params
    assert op.weight_bytes == (16 * 16 * 9) // 2 * 4 + math.ceil(16 * 16 * 9 / 8)
    assert op.dense_weight_bytes == g.op("conv1").weight_bytes
    assert h.op("bn1").sparsity == 0.0  # norms are not pruned
    twice = prune_weights(h, 0.5, "bitmask")
    assert twice.op("conv1").sparsity == 0.75


# -- quantization --------------------------------------------------------------------
def test_quantize_int8_quarters_every_byte_and_keeps_flops():
    g = conv_chain()
    h = quantize(g, "int8")
    assert h.total_flops == g.total_flops
    assert h.weight_bytes * 4 == g.weight_bytes
    for e in h.edges():
        assert e.bytes * 4 == g.edge(e.src, e.dst).bytes
    assert {op.dtype for op in h} == {"int8"}
    assert quantize(h, "fp16").weight_bytes == h.weight_bytes  # never widens


def test_quantize_accuracy_table():
    assert quantize_accuracy("mobilenet_v1", {"dtype": "int8", "mode": "ptq"}) == -0.6
    assert quantize_accuracy("mobilenet_v1", {"dtype": "int8", "mode": "qat"}) == -0.2
    assert quantize_accuracy("mobilenet_v2", {"dtype": "int8", "mode": "ptq"}) == -2.2
    assert quantize_accuracy("resnet50", {"dtype": "int8", "mode": "ptq"}) == -0.1
    assert quantize_accuracy("vgg16", {"dtype": "int8"}) is None
    assert quantize_accuracy("vgg16", {"dtype": "int8", "accuracy_delta": -0.4}) == -0.4
    assert quantize_accuracy("vgg16", {"dtype": "fp16"}) == 0.0


# -- fusion --------------------------------------------------------------------------
def test_fuse_conv_bn_relu_sums_work_and_drops_intermediate_traffic():
    g = conv_chain(c_in=8, c_mid=8, c_out=8, hw=4)
    h = fuse(g)
    assert h.order == ("conv1", "conv2", "fc")
    conv = h.op("conv1")
    parts = [g.op(n) for n in ("conv1", "bn1", "relu1")]
    assert conv.flops == sum(p.flops for p in parts)
    assert conv.params == sum(p.params for p in parts)
    assert conv.fused == ("conv1", "bn1", "relu1")
    # the two intermediate tensors (written, then read back) are no longer moved
    saved = sum(p.bytes_moved for p in parts) - conv.bytes_moved
    assert saved == 2 * (parts[0].output_bytes + parts[1].output_bytes)
    assert h.edge("conv1", "conv2").bytes == g.edge("relu1", "conv2").bytes


def test_fuse_resnet_add_relu_chains():
    g = build_zoo_model("resnet18")
    h = fuse(g)
    add = h.op("layer1.0.add")
    assert add.fused == ("layer1.0.add", "layer1.0.relu2") or add.fused[0] == "layer1.0.add"
    assert h.total_flops == pytest.approx(g.total_flops, rel=1e-12)
    assert len(h) < len(g)


# -- composition and accuracy -----------------------------------------------------------
def test_composition_order_matters():
    g = conv_chain(c_in=64, c_mid=128, c_out=96, hw=8)
    prune_then_fuse, _ = apply_techniques(
        g, [{"name": "prune_channels", "ratio": 0.5}, {"name": "fuse"}]
    )
    fuse_then_prune, _ = apply_techniques(
        g, [{"name": "fuse"}, {"name": "prune_channels", "ratio": 0.5}]
    )
    # after fusion conv1 -> conv2 is direct, the fused op is still a prunable conv: same work
    assert prune_then_fuse.total_macs == fuse_then_prune.total_macs
    # substitution commutes with channel pruning on a chain: the depthwise half passes
    # the pruned channels through, so either order gives conv1 64 -> 64 and conv2 64 -> 48
    sub_then_prune, _ = apply_techniques(
        g, [{"name": "depthwise_separable"}, {"name": "prune_channels", "ratio": 0.5}]
    )
    prune_then_sub, _ = apply_techniques(
        g, [{"name": "prune_channels", "ratio": 0.5}, {"name": "depthwise_separable"}]
    )
    expected = 64 * 64 * 9 + 64 * 64 * 64 + 64 * 64 * 9 + 48 * 64 * 64 + 48 * 64 * 10
    assert sub_then_prune.total_macs == prune_then_sub.total_macs == expected
    # fusion before substitution keeps the fused convs standard; after, the halves fuse
    fuse_then_sub, _ = apply_techniques(g, [{"name": "fuse"}, {"name": "depthwise_separable"}])
    sub_then_fuse, _ = apply_techniques(g, [{"name": "depthwise_separable"}, {"name": "fuse"}])
    conv2_separable = 128 * 64 * 9 + 96 * 64 * 128  # conv2 is unfused (an fc follows)
    assert fuse_then_sub.total_macs == 128 * 64 * 64 * 9 + conv2_separable + 96 * 64 * 10
    assert sub_then_fuse.total_macs == 64 * 64 * 9 + 128 * 64 * 64 + conv2_separable + 96 * 640
    assert "conv1_dw" in sub_then_fuse and "conv1_dw" not in fuse_then_sub


def test_quantize_then_prune_weights_stores_int8_values():
    g = conv_chain(c_in=16, c_mid=16, c_out=16, hw=4)
    bitmask = {"name": "prune_weights", "sparsity": 0.5, "format": "bitmask"}
    a, _ = apply_techniques(g, [{"name": "quantize"}, bitmask])
    b, _ = apply_techniques(g, [bitmask, {"name": "quantize"}])
    assert a.weight_bytes == b.weight_bytes  # storage follows the final dtype
    params = 16 * 16 * 9
    assert a.op("conv1").weight_bytes == params // 2 * 1 + params // 8
    # int8 CSR at 50 %: 1152 x (1 + 2) + 4 x 17 > 2304 dense bytes, so it stays dense
    csr, _ = apply_techniques(g, [{"name": "quantize"}, {**bitmask, "format": "csr"}])
    assert csr.op("conv1").weight_bytes == params


def test_accuracy_composes_from_the_baseline():
    g = build_zoo_model("mobilenet_v1")
    base = baseline_top1("mobilenet_v1")
    assert base == 70.6
    _, top1 = apply_techniques(
        g,
        [{"name": "quantize", "dtype": "int8", "mode": "qat"}, {"name": "fuse"}],
        "mobilenet_v1",
        base,
    )
    assert top1 == pytest.approx(70.4, abs=1e-9)
    _, unknown = apply_techniques(
        g, [{"name": "prune_channels", "ratio": 0.5}], "mobilenet_v1", base
    )
    assert unknown is None
    assert baseline_top1("mobilenet_v1", {"width_multiplier": 0.5}) == 63.7
    assert baseline_top1("vgg16", {"num_classes": 10}) is None
    assert baseline_top1("resnet50") == 76.13


# -- bad input -----------------------------------------------------------------------
@pytest.mark.parametrize("ratio", [-0.1, 1.0, 1.5, float("nan")])
def test_prune_ratio_outside_unit_interval_is_rejected(ratio):
    with pytest.raises(ModelError, match=r"techniques\[0\] \(prune_channels\).*\[0, 1\)"):
        apply_techniques(conv_chain(), [{"name": "prune_channels", "ratio": ratio}])


def test_unknown_technique_names_the_nearest():
    with pytest.raises(ModelError, match=r"techniques\[1\].*'quantise'.*did you mean 'quantize'"):
        apply_techniques(conv_chain(), [{"name": "fuse"}, {"name": "quantise"}])
