"""Techniques on imported ONNX models: shape attrs as the zoo's, identical results, and
errors (never silent no-ops) when a technique can transform nothing."""

from __future__ import annotations

import functools

import pytest
from onnx import helper
from onnx_util import MODELS_DIR, make_models_module, model, weight

from simulator.errors import ModelError
from simulator.graph.context import CONTEXT_KEYS, FOOTPRINT_KEY
from simulator.graph.onnx_import import load_onnx
from simulator.graph.techniques import TECHNIQUES, apply_techniques
from simulator.graph.zoo import build_zoo_model

make_models = make_models_module()
ZOO_NAMES = ("mobilenet_v1", "resnet18")
TECHNIQUE_CASES = (
    {"name": "prune_channels", "ratio": 0.25},
    {"name": "depthwise_separable"},
    {"name": "prune_weights", "sparsity": 0.5, "format": "csr"},
    {"name": "quantize", "dtype": "int8"},
    {"name": "fuse"},
)


@functools.cache
def imported(zoo_name: str, fuse: str):
    return load_onnx(getattr(make_models, zoo_name)(), fuse=fuse)


def apply(graph, spec):
    options = {k: v for k, v in spec.items() if k != "name"}
    return TECHNIQUES.get(spec["name"]).function.apply(graph, options)


def shape_attrs(op):
    """The op's attrs without the network footprint ModelGraph stamps on every op."""
    return {k: v for k, v in op.attrs.items() if k not in CONTEXT_KEYS}


def figures(op):
    return (op.kind, op.flops, op.macs, op.params, op.input_elems, op.output_elems, op.dtype)


@pytest.mark.parametrize("zoo_name", ZOO_NAMES)
def test_imported_attrs_equal_the_zoo_op_by_op(zoo_name):
    onnx_graph, zoo = imported(zoo_name, "none"), build_zoo_model(zoo_name, "fp32")
    for op in zoo:
        assert shape_attrs(onnx_graph.op(op.name)) == shape_attrs(op), op.name
    assert shape_attrs(onnx_graph.op("flatten")) == {"flatten": 1, "view": 1}  # a view
    for graph in (onnx_graph, zoo):  # every op carries its network's weight bytes
        assert {op.attrs[FOOTPRINT_KEY] for op in graph} == {graph.weight_bytes}
    assert onnx_graph.weight_bytes == zoo.weight_bytes
    convs = [op for op in zoo if op.kind in ("conv", "dwconv", "fc")]
    assert convs and all(op.attrs for op in convs)


@pytest.mark.parametrize("zoo_name", ZOO_NAMES)
@pytest.mark.parametrize("spec", TECHNIQUE_CASES, ids=lambda s: s["name"])
def test_techniques_give_the_zoo_results_on_the_imported_graph(zoo_name, spec):
    ours = apply(imported(zoo_name, "none"), spec)
    zoo = apply(build_zoo_model(zoo_name, "fp32"), spec)
    assert set(ours.order) == set(zoo.order) | {"flatten"}
    for op in zoo:
        mine = ours.op(op.name)
        assert figures(mine) == figures(op), op.name
        assert dict(mine.attrs) == dict(op.attrs), op.name
        assert mine.weight_bytes == op.weight_bytes, op.name
    for total in ("total_flops", "total_macs", "total_params", "weight_bytes"):
        assert getattr(ours, total) == getattr(zoo, total), total
    zoo_edges = {(e.src, e.dst): e.bytes for e in zoo.edges()}
    # the zoo's avgpool -> fc edge runs through the ONNX flatten
    for e in ours.edges():
        key = ("avgpool", "fc") if e.dst == "flatten" else (e.src, e.dst)
        if e.src != "flatten":
            assert zoo_edges[key] == e.bytes, key


def test_channel_pruning_passes_the_flatten_to_the_classifier():
    """MobileNetV1's last pointwise conv feeds avgpool -> flatten -> fc: 1024 -> 768
    channels at ratio 0.25, and the fc reads 768 features."""
    pruned = apply(imported("mobilenet_v1", "none"), {"name": "prune_channels", "ratio": 0.25})
    assert pruned.op("conv_pw_13").attrs["out_channels"] == 768
    assert pruned.op("fc").attrs["in_features"] == 768
    assert pruned.op("fc").params == 768 * 1000 + 1000
    assert pruned.op("flatten").output_elems == 768
    # the depthwise conv after a pruned conv shrinks with it: groups too
    dw = pruned.op("conv_dw_2").attrs
    assert (dw["in_channels"], dw["out_channels"], dw["groups"]) == (48, 48, 48)


def conv_bn_relu(graph, name: str) -> tuple[str, ...]:
    """(conv, bn, relu) when ``name`` -> BatchNorm -> ReLU, each the other's only link."""
    (bn,) = graph.successors(name)
    after = graph.successors(bn)
    sole = len(after) == 1 and graph.predecessors(after[0]) == [bn]
    return (name, bn, after[0]) if sole and graph.op(after[0]).kind == "activation" else ()


@pytest.mark.parametrize("zoo_name", ZOO_NAMES)
def test_ort_fused_ops_carry_the_anchor_attrs_and_prune_alike(zoo_name):
    """Under fuse='ort' a conv keeps its shape, gains a bias from its folded BatchNorm and
    is marked fused when onnxruntime runs it as a FusedConv (an activation joined it).
    Channel pruning cuts the same MACs as without fusion (folding costs no MACs)."""
    ort, none = imported(zoo_name, "ort"), imported(zoo_name, "none")
    shape_keys = ("in_channels", "out_channels", "kernel", "groups", "in_features")
    for op in ort:
        ref = none.op(op.name)
        assert {k: op.attrs.get(k) for k in shape_keys} == {
            k: ref.attrs.get(k) for k in shape_keys
        }, op.name
        if op.kind in ("conv", "dwconv"):
            assert op.attrs["bias"] == 1, op.name  # BatchNorm folded into a bias
            assert op.fused == conv_bn_relu(none, op.name), op.name
    spec = {"name": "prune_channels", "ratio": 0.25}
    assert apply(ort, spec).total_macs == apply(none, spec).total_macs


def test_substitution_after_ort_fusion_is_an_error_that_says_what_to_do():
    with pytest.raises(ModelError) as info:
        apply(imported("mobilenet_v1", "ort"), {"name": "depthwise_separable"})
    message = info.value.message
    assert "fused convs (substitute before fusing" in message and "fuse: none" in message
    assert (
        "fused convs (substitute before fusing; for an ONNX model import with fuse: none"
        " and apply the fuse technique after): conv1, conv_pw_1," in message
    )
    assert "depthwise convs (already separable): conv_dw_1, conv_dw_2" in message
    # ResNet-18's conv2 + bn2 run as a plain Conv (no activation joined): substituted
    resnet = apply(imported("resnet18", "ort"), {"name": "depthwise_separable"})
    added = set(resnet.order) - set(imported("resnet18", "ort").order)
    assert added == {f"layer{s}.{b}.conv2_dw" for s in range(1, 5) for b in range(2)}


def test_fusing_an_ort_fused_model_again_is_an_error():
    with pytest.raises(ModelError, match=r"already fused .*conv1"):
        apply(imported("mobilenet_v1", "ort"), {"name": "fuse"})


def test_a_glob_matching_no_op_is_an_error_naming_the_nearest():
    graph = imported("resnet18", "none")
    for spec in TECHNIQUE_CASES[:4]:
        with pytest.raises(ModelError, match=r"no op matches glob 'layer9\.\*'"):
            apply(graph, {**spec, "ops": "layer9.*"})


def test_channel_pruning_with_nothing_prunable_says_why_per_op():
    """tiny_mlp unfused: every MatMul's output goes to its bias Add (an elementwise op
    of its own), and the last is the answer; fused (MatMul + Add = Gemm) it prunes."""
    mlp = MODELS_DIR / "tiny_mlp.onnx"
    with pytest.raises(ModelError) as info:
        apply_techniques(load_onnx(mlp, fuse="none"), [{"name": "prune_channels", "ratio": 0.5}])
    message = info.value.message
    assert message.startswith("techniques[0] (prune_channels): prune_channels matched no op")
    assert "cannot shrink with them" in message and "fc0, fc1, fc2" in message
    pruned, _ = apply_techniques(load_onnx(mlp), [{"name": "prune_channels", "ratio": 0.5}])
    # fc0: 64 -> 128 becomes 64 -> 64; fc1: 128 -> 128 becomes 64 -> 64; fc2 (the
    # answer) keeps 10 outputs and reads 64: MACs 64*64 + 64*64 + 64*10
    assert pruned.total_macs == 64 * 64 + 64 * 64 + 64 * 10


def test_ratio_zero_is_a_valid_baseline_not_an_error():
    graph = imported("resnet18", "none")
    same = apply(graph, {"name": "prune_channels", "ratio": 0.0})
    assert [figures(op) for op in same] == [figures(op) for op in graph]


def test_a_fused_conv_adding_a_residual_is_not_pruned():
    """A FusedConv with its optional sum input Z reads two tensors: cutting its output
    channels would need Z cut alike, so it is not a candidate (and says why)."""
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], name="conv0"),
        helper.make_node("Conv", ["x", "w0"], ["z"], name="conv_z"),
        helper.make_node(
            "FusedConv",
            ["a", "w1", "", "z"],
            ["b"],
            name="fused",
            domain="com.microsoft",
            activation="Relu",
        ),
        helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2"),
    ]
    m = model(
        nodes,
        {"x": [1, 4, 5, 5]},
        ["y"],
        [weight("w0", (4, 4, 1, 1)), weight("w1", (4, 4, 1, 1)), weight("w2", (2, 4, 1, 1))],
    )
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    graph = load_onnx(m, fuse="none")
    assert graph.op("fused").fused == ("fused",) and graph.op("fused").macs == 400
    with pytest.raises(ModelError) as info:
        apply(graph, {"name": "prune_channels", "ratio": 0.5, "ops": "fused"})
    assert "ops reading several tensors" in info.value.message


def factorised_pair():
    """A 1 x 1 conv (8 -> 16) feeding a 1 x 7 conv (16 -> 24) then a 7 x 1 (24 -> 24),
    all on 17 x 17 (Inception v3's factorised 7 x 7)."""
    from calibration.onnxbuild import Builder

    b = Builder(seed=1)
    x = b.relu(b.conv(b.input([1, 8, 17, 17]), 8, 16, 1))
    b.relu(b.conv(b.relu(b.conv(x, 16, 24, (1, 7))), 24, 24, (7, 1)))
    return load_onnx(b.model("factorised"), fuse="none")


def test_a_non_square_conv_imports_its_kernel_shape_and_prunes_by_hand():
    graph = factorised_pair()
    one_by_one, one_by_seven, seven_by_one = (op for op in graph if op.kind == "conv")
    assert shape_attrs(one_by_seven) == {
        "in_channels": 16,
        "out_channels": 24,
        "kernel_h": 1,
        "kernel_w": 7,
        "groups": 1,
        "bias": 1,
    }
    assert one_by_seven.params == 24 * (16 * 7 + 1)  # 2,712
    assert one_by_seven.macs == 24 * 17 * 17 * 16 * 7  # padding (0, 3) keeps 17 x 17
    assert shape_attrs(seven_by_one)["kernel_h"] == 7
    # pruning the 1x1's 16 outputs to 12 feeds the 1 x 7 12 channels: 24 x (12 x 7 + 1);
    # the 1 x 7's own 24 outputs to 18 feed the 7 x 1: 24 x (18 x 7 + 1)
    pruned = apply(graph, {"name": "prune_channels", "ratio": 0.25, "ops": "*"})
    assert pruned.op(one_by_seven.name).params == 18 * (12 * 7 + 1)
    assert pruned.op(seven_by_one.name).params == 24 * (18 * 7 + 1)
    assert pruned.op(one_by_one.name).params == 12 * (8 + 1)


def test_substitution_says_a_non_square_conv_cannot_become_separable():
    graph = factorised_pair()
    with pytest.raises(ModelError) as info:
        apply_techniques(graph, [{"name": "depthwise_separable"}])
    assert "non-square kernel" in info.value.message  # the 1 x 7 and the 7 x 1
    assert "1 x 1 convs (already pointwise)" in info.value.message
