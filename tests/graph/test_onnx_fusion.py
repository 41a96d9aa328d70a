"""fuse='ort' groups nodes as onnxruntime's optimizer does; ORT-optimized models load.

Every case asks onnxruntime itself (ORT_ENABLE_EXTENDED, CPU) for its optimized model
and compares: the ops of ``load_onnx(original, fuse='ort')`` are exactly the nodes of
the model onnxruntime writes (names mapped back to their anchor node), with the same
FLOPs, MACs and params as loading that optimized model with ``fuse='none'``.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from onnx import numpy_helper
from onnx_util import const, make_models_module, model, node, weight

from simulator.graph.context import CONTEXT_KEYS
from simulator.graph.onnx_fuse import ort_anchor
from simulator.graph.onnx_import import load_onnx

ort = pytest.importorskip("onnxruntime")


def run_ort(m, tmp_path, profile: bool = False):
    """Optimize ``m`` with onnxruntime; the optimized file and the profiled node names."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no notes on unused initializers
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = str(tmp_path / "profile")
    session = ort.InferenceSession(
        m.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names: set[str] = set()
    if profile:
        feeds = {}
        for value in session.get_inputs():
            shape = [d if isinstance(d, int) else 1 for d in value.shape]
            dtype = np.int64 if "int64" in value.type else np.float32
            feeds[value.name] = np.ones(shape, dtype=dtype)
        session.run(None, feeds)
        with open(session.end_profiling(), encoding="utf-8") as f:
            events = json.load(f)
        names = {e["name"].removesuffix("_kernel_time") for e in events if e.get("cat") == "Node"}
    return tmp_path / "optimized.onnx", names


def without_fused(attrs) -> dict:
    """The op's own attributes: without ``fused`` and the context its graph stamps (an
    op's input age follows its graph's order, which ORT's saved graph may not share)."""
    return {k: v for k, v in attrs.items() if k != "fused" and k not in CONTEXT_KEYS}


def assert_same_grouping(m, tmp_path, exact_reads: bool = True):
    optimized, _ = run_ort(m, tmp_path)
    ours = load_onnx(m, fuse="ort")
    theirs = load_onnx(optimized, fuse="none")
    by_anchor = {ort_anchor(n): theirs.op(n) for n in theirs.order}
    assert sorted(by_anchor) == sorted(ours.order)  # onnxruntime may order them otherwise
    for op in ours:
        ref = by_anchor[op.name]
        assert (op.kind, op.macs, op.params) == (ref.kind, ref.macs, ref.params), op.name
        assert op.flops == pytest.approx(ref.flops), op.name
        assert op.output_elems == ref.output_elems, op.name
        # the shape attrs the techniques read, and whether the kernel is a fused one
        assert without_fused(op.attrs) == without_fused(ref.attrs), op.name
        assert bool(op.fused) == bool(ref.fused), op.name
        if exact_reads:
            assert op.input_elems == ref.input_elems, op.name
        else:  # a fused scaling feeding both operands: ORT's kernel reads its input twice
            assert op.input_elems in (ref.input_elems, ref.input_elems / 2), op.name
    return ours


def test_small_cnn_fusion_matches_ort(tmp_path):
    ours = assert_same_grouping(make_models_module().small_cnn(), tmp_path)
    # conv1 = conv + bn (folded, free) + relu (fused): 16*16*16 outputs x 27 MACs
    conv1 = ours.op("conv1")
    assert conv1.macs == 16 * 16 * 16 * 27
    assert conv1.flops == 2 * conv1.macs + 16 * 16 * 16  # + one FLOP per ReLU
    assert conv1.params == 16 * 27 + 16  # the folded BatchNorm becomes a bias
    assert "pw1" in ours and "res1" in ours and "res1_relu" in ours  # add+relu stay apart


def test_mlp_matmul_add_relu_becomes_one_gemm(tmp_path):
    ours = assert_same_grouping(make_models_module().tiny_mlp(), tmp_path)
    assert ours.order == ("fc0", "fc1", "fc2", "softmax")
    fc0 = ours.op("fc0")
    assert (fc0.kind, fc0.macs, fc0.params) == ("fc", 64 * 128, 64 * 128 + 128)
    assert fc0.flops == 2 * 64 * 128 + 128  # + ReLU


@pytest.mark.parametrize("act", ["Relu", "Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh", "Elu"])
def test_activation_fusion_per_anchor(act, tmp_path):
    """Which activations fuse into Conv and Gemm differs (Clip: conv only; Elu: gemm only)."""
    m = model(
        [
            node("Conv", ["x", "w"], "conv", group=4),
            node(act, ["conv"], "conv_act"),
            node("Flatten", ["conv_act"], "flat"),
            node("Gemm", ["flat", "g"], "gemm", transB=1),
            node(act, ["gemm"], "gemm_act"),
        ],
        {"x": [1, 4, 4, 4]},
        ["gemm_act"],
        [weight("w", (4, 1, 3, 3)), weight("g", (5, 16))],
    )
    assert_same_grouping(m, tmp_path)


def test_clip_fuses_into_conv_not_gemm(tmp_path):
    m = model(
        [
            node("Conv", ["x", "w"], "conv"),
            node("Clip", ["conv", "lo", "hi"], "relu6"),
            node("Flatten", ["relu6"], "flat"),
            node("Gemm", ["flat", "g"], "gemm", transB=1),
            node("Clip", ["gemm", "lo", "hi"], "clip2"),
        ],
        {"x": [1, 2, 3, 3]},
        ["clip2"],
        [weight("w", (2, 2, 1, 1)), weight("g", (3, 18)), const("lo", 0.0), const("hi", 6.0)],
    )
    ours = assert_same_grouping(m, tmp_path)
    assert ours.order == ("conv", "flat", "gemm", "clip2")


def test_conv_folds_constant_add_and_mul_and_keeps_fan_out(tmp_path):
    m = model(
        [
            node("Conv", ["x", "w"], "conv"),
            node("Add", ["conv", "k"], "add_k"),
            node("Mul", ["add_k", "s"], "mul_s"),
            node("Conv", ["mul_s", "w2"], "conv2"),
            node("Relu", ["conv2"], "relu"),
            node("Add", ["conv2", "relu"], "out"),  # conv2 feeds two nodes: no fusion
        ],
        {"x": [1, 4, 5, 5]},
        ["out"],
        [weight(n, s) for n, s in (("w", (4, 4, 1, 1)), ("k", (4, 1, 1)), ("s", (1, 4, 1, 1)))]
        + [weight("w2", (4, 4, 1, 1))],
    )
    ours = assert_same_grouping(m, tmp_path)
    assert ours.order == ("conv", "conv2", "relu", "out")
    assert ours.op("conv").flops == 2 * 25 * 4 * 4  # folded nodes cost nothing


def test_transpose_and_scale_fuse_into_matmul(tmp_path):
    m = model(
        [
            node("Transpose", ["x"], "xt", perm=[0, 2, 1]),
            node("MatMul", ["x", "xt"], "scores"),
            node("Mul", ["scores", "scale"], "scaled"),
            node("Softmax", ["scaled"], "y", axis=-1),
        ],
        {"x": [2, 3, 8]},
        ["y"],
        [const("scale", 0.125)],
    )
    ours = assert_same_grouping(m, tmp_path)
    scores = ours.op("scores")
    assert (scores.kind, scores.macs) == ("matmul", 2 * 3 * 3 * 8)
    assert scores.flops == 2 * scores.macs + 18  # the folded scaling, as the zoo counts it


def test_shape_subgraph_folds_and_identity_is_removed(tmp_path):
    m = model(
        [
            node("Identity", ["x"], "ident"),
            node("Shape", ["ident"], "shape"),
            node("Gather", ["shape", "zero"], "batch", axis=0),
            node("Unsqueeze", ["batch", "axes"], "batch1"),
            node("Concat", ["batch1", "minus1"], "target", axis=0),
            node("Reshape", ["ident", "target"], "flat"),
            node("Relu", ["flat"], "relu"),
            node("Dropout", ["relu"], "y"),  # produces the graph output: kept
        ],
        {"x": ["N", 3, 8]},
        ["y"],
        [const("zero", 0, "int64"), const("axes", [0], "int64"), const("minus1", [-1], "int64")],
    )
    ours = assert_same_grouping(m, tmp_path)
    assert ours.order == ("flat", "relu", "y")
    assert load_onnx(m, fuse="none").order[:2] == ("ident", "shape")


def test_fusion_sees_through_removed_identity(tmp_path):
    m = model(
        [
            node("Conv", ["x", "w"], "conv"),
            node("Identity", ["conv"], "ident"),
            node("BatchNormalization", ["ident", "s", "b", "m", "v"], "bn"),
            node("Dropout", ["bn"], "drop"),
            node("Relu", ["drop"], "y"),
        ],
        {"x": [1, 3, 4, 4]},
        ["y"],
        [weight("w", (2, 3, 1, 1)), *(weight(n, (2,)) for n in "sbm"), const("v", [1.0, 2.0])],
    )
    ours = assert_same_grouping(m, tmp_path)
    assert ours.order == ("conv",)


def test_ort_optimized_model_ops_are_the_profiled_nodes(tmp_path):
    """load_onnx(optimized, fuse='none') has one op per node ORT times, by node name."""
    m = make_models_module().small_cnn()
    optimized, profiled = run_ort(m, tmp_path, profile=True)
    assert set(load_onnx(optimized, fuse="none").order) == profiled
    # the contrib ops ORT writes are costed like the nodes they replace
    assert load_onnx(optimized, fuse="none").total_macs == load_onnx(m).total_macs
    # and the profiled names map onto the ops of the original model under fuse="ort"
    assert {ort_anchor(n) for n in profiled} == set(load_onnx(m, fuse="ort").order)


def test_ort_optimized_transformer_loads_with_its_contrib_ops(tmp_path):
    """onnxruntime rewrites residual + LayerNorm into SkipLayerNormalization, bias + Gelu
    into BiasGelu and the scaled scores into FusedMatMul; all load and cost the same."""
    m = make_models_module().transformer_encoder(layers=1)
    optimized, profiled = run_ort(m, tmp_path, profile=True)
    graph = load_onnx(optimized, fuse="none")
    assert set(graph.order) == profiled
    types = {n.op_type for n in onnx.load(str(optimized)).graph.node}
    assert {"SkipLayerNormalization", "BiasGelu", "FusedMatMul"} <= types
    original = load_onnx(m, fuse="none")
    assert graph.total_macs == original.total_macs
    assert graph.total_params == original.total_params - 1  # the scale constant is folded


@pytest.mark.parametrize("quant_format", ["QOperator", "QDQ"])
def test_quantized_model_after_ort(quant_format, tmp_path):
    """A statically quantized model: QLinearConv, QLinearAdd, QGemm, QLinearGlobalAveragePool
    (QDQ), QuantizeLinear / DequantizeLinear, as onnxruntime's optimizer leaves them."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    m = make_models_module().small_cnn()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    (tmp_path / "float.onnx").write_bytes(m.SerializeToString())

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.feeds = iter(
                [{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}] * 2
            )

        def get_next(self):
            return next(self.feeds, None)

    quantization.quantize_static(
        str(tmp_path / "float.onnx"),
        str(tmp_path / "int8.onnx"),
        Reader(),
        quant_format=getattr(quantization.QuantFormat, quant_format),
    )
    quantized = onnx.load(str(tmp_path / "int8.onnx"))
    optimized, profiled = run_ort(quantized, tmp_path, profile=True)
    graph = load_onnx(optimized, fuse="none")
    assert set(graph.order) == profiled
    assert {op.dtype for op in graph} == {"int8"}
    assert graph.total_macs == load_onnx(m).total_macs  # same convs and gemm, in int8
    kinds = {op.kind for op in graph}
    assert {"conv", "dwconv", "fc", "elementwise"} <= kinds
    weights = {
        t.name: numpy_helper.to_array(t) for t in onnx.load(str(optimized)).graph.initializer
    }
    assert any(w.dtype == np.int8 for w in weights.values())


LAYERS = ("conv", "dwconv", "bn", "act", "residual", "identity", "scale", "shift", "pool")
ACTS = ("Relu", "Clip", "Sigmoid", "LeakyRelu", "HardSigmoid", "Tanh", "Elu")


def random_cnn(draw_layers, acts, head_act, matmul_head) -> onnx.ModelProto:
    """A 4-channel 6x6 CNN from a layer list; every tensor keeps its shape so residual
    adds can reach back to any earlier tensor (which then has two consumers)."""
    c = 4
    nodes, inits, tensors = [], [const("lo", 0.0), const("hi", 6.0)], ["x"]
    for i, (layer, pick) in enumerate(draw_layers):
        x, y = tensors[-1], f"t{i}"
        if layer in ("conv", "dwconv"):
            group = c if layer == "dwconv" else 1
            inits.append(weight(f"w{i}", (c, c // group, 3, 3), seed=i))
            bias = [f"b{i}"] if pick % 2 else []
            inits += [weight(b, (c,), seed=i) for b in bias]
            nodes.append(node("Conv", [x, f"w{i}", *bias], y, pads=[1] * 4, group=group))
        elif layer == "bn":
            inits += [weight(f"bn{i}_{p}", (c,), seed=i) for p in "sbm"]
            inits.append(const(f"bn{i}_v", [1.0] * c))
            nodes.append(node("BatchNormalization", [x, *(f"bn{i}_{p}" for p in "sbmv")], y))
        elif layer == "act":
            act = acts[pick % len(acts)]
            extra = ["lo", "hi"] if act == "Clip" else []
            nodes.append(node(act, [x, *extra], y))
        elif layer == "residual":
            nodes.append(node("Add", [x, tensors[pick % len(tensors)]], y))
        elif layer == "identity":
            nodes.append(node("Identity" if pick % 2 else "Dropout", [x], y))
        elif layer in ("scale", "shift"):
            inits.append(weight(f"k{i}", (c, 1, 1), seed=i))
            nodes.append(node("Mul" if layer == "scale" else "Add", [x, f"k{i}"], y))
        else:
            nodes.append(node("MaxPool", [x], y, kernel_shape=[3, 3], pads=[1] * 4))
        tensors.append(y)
    nodes += [node("GlobalAveragePool", [tensors[-1]], "gap"), node("Flatten", ["gap"], "flat")]
    if matmul_head:
        inits += [weight("fc_w", (c, 3)), weight("fc_b", (3,))]
        nodes += [node("MatMul", ["flat", "fc_w"], "fc"), node("Add", ["fc", "fc_b"], "fc_out")]
    else:
        inits.append(weight("fc_w", (3, c)))
        nodes.append(node("Gemm", ["flat", "fc_w"], "fc_out", transB=1))
    nodes.append(node(head_act, ["fc_out", *(["lo", "hi"] if head_act == "Clip" else [])], "y"))
    return model(nodes, {"x": ["N", c, 6, 6]}, ["y"], inits)


@pytest.mark.parametrize("relus", [1, 2, 3])
def test_every_relu_of_a_chain_before_a_clip_goes(relus, tmp_path):
    """ReluClipFusion removes the Relu before a Clip, then the one before that, ...: x ->
    Relu^n -> Clip is one Clip in onnxruntime's graph. Found by the property below
    (2026-12-08): three Relus left the first one standing."""
    layers = [("act", 0)] * relus + [("act", 1)]  # ACTS[0] = Relu, ACTS[1] = Clip
    ours = assert_same_grouping(random_cnn(layers, ACTS, "Softmax", False), tmp_path)
    assert [op.name for op in ours if op.kind == "activation"] == [f"t{relus}"]


@settings(max_examples=40, deadline=None)  # 5 x 1000 passed when written
@given(
    layers=st.lists(st.tuples(st.sampled_from(LAYERS), st.integers(0, 20)), min_size=1, max_size=8),
    head_act=st.sampled_from([*ACTS, "Softmax"]),
    matmul_head=st.booleans(),
)
def test_random_cnn_grouping_matches_ort(layers, head_act, matmul_head, tmp_path_factory):
    """Random conv / bn / activation / residual / identity chains group as ORT groups them."""
    m = random_cnn(layers, ACTS, head_act, matmul_head)
    assert_same_grouping(m, tmp_path_factory.mktemp("ort"))


MATRIX_LAYERS = ("linear", "bias", "act", "matmul", "transpose", "scale", "residual", "softmax")


def random_mlp(layers) -> onnx.ModelProto:
    """2-D (4 x 4) tensors through MatMuls (constant or activation operands), bias adds,
    transposes, scalar scalings, activations, residual adds and softmaxes."""
    n = 4
    nodes, inits, tensors = [], [const("lo", 0.0), const("hi", 6.0)], ["x"]
    for i, (layer, pick) in enumerate(layers):
        x, y = tensors[-1], f"t{i}"
        other = tensors[pick % len(tensors)]
        if layer == "linear":
            inits.append(weight(f"w{i}", (n, n), seed=i))
            nodes.append(node("MatMul", [x, f"w{i}"], y))
        elif layer == "bias":
            inits.append(weight(f"b{i}", (n,) if pick % 2 else (1, n), seed=i))
            nodes.append(node("Add", [x, f"b{i}"] if pick % 3 else [f"b{i}", x], y))
        elif layer == "act":
            act = ACTS[pick % len(ACTS)]
            nodes.append(node(act, [x, *(["lo", "hi"] if act == "Clip" else [])], y))
        elif layer == "matmul":
            nodes.append(node("MatMul", [x, other] if pick % 2 else [other, x], y))
        elif layer == "transpose":  # only into a MatMul: ORT's transpose optimizer moves
            # and cancels other Transposes, which the importer does not reproduce
            nodes.append(node("Transpose", [x], f"{y}_t", perm=[1, 0]))
            nodes.append(node("MatMul", [f"{y}_t", other] if pick % 2 else [other, f"{y}_t"], y))
        elif layer == "scale":  # 0.5 and 3 never cancel: a fused alpha is never 1
            inits.append(const(f"s{i}", 0.5 if pick % 2 else 3.0))
            nodes.append(node("Mul" if pick % 2 else "Div", [x, f"s{i}"], y))
        elif layer == "residual":
            nodes.append(node("Add", [x, other], y))
        else:
            nodes.append(node("Softmax", [x], y, axis=-1))
        tensors.append(y)
    nodes.append(node("Identity", [tensors[-1]], "y"))
    return model(nodes, {"x": [n, n]}, ["y"], inits)


@settings(max_examples=40, deadline=None)  # 5 x 1000 passed when written
@given(
    layers=st.lists(
        st.tuples(st.sampled_from(MATRIX_LAYERS), st.integers(0, 20)), min_size=1, max_size=8
    )
)
def test_random_matrix_graph_grouping_matches_ort(layers, tmp_path_factory):
    """MatMul + Add -> Gemm (+ activation), Transpose / scaling -> FusedMatMul, at random."""
    m = random_mlp(layers)
    try:
        quiet = ort.SessionOptions()
        quiet.log_severity_level = 3
        ort.InferenceSession(m.SerializeToString(), quiet, providers=["CPUExecutionProvider"])
    except Exception:  # onnxruntime's own optimizer breaks some chains of scalings
        reject()
    assert_same_grouping(m, tmp_path_factory.mktemp("ort"), exact_reads=False)
