"""ONNX import: per-node FLOPs, MACs, params and bytes computed by hand; options; errors."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx_util import const, model, node, weight

from simulator.errors import ModelError
from simulator.graph.onnx_import import load_onnx
from simulator.graph.onnx_ops import HANDLERS


def test_conv_with_padding_and_stride():
    # out H = (10 + 2*1 - 3) // 2 + 1 = 5: (1, 8, 5, 5) = 200 elements, 3*3*3 MACs each
    m = model(
        [node("Conv", ["x", "w", "b"], "y", strides=[2, 2], pads=[1, 1, 1, 1])],
        {"x": [1, 3, 10, 10]},
        ["y"],
        [weight("w", (8, 3, 3, 3)), weight("b", (8,))],
    )
    op = load_onnx(m).op("y")
    assert (op.kind, op.macs, op.flops) == ("conv", 200 * 27, 2 * 200 * 27)
    assert op.params == 8 * 27 + 8
    assert (op.input_elems, op.output_elems) == (300, 200)
    assert (op.input_bytes, op.weight_bytes) == (1200, 4 * 224)


def test_grouped_conv_divides_macs_by_group():
    # 8 -> 16 channels in 2 groups, 3x3, same padding: each output sees 4 input channels
    m = model(
        [node("Conv", ["x", "w"], "y", group=2, pads=[1, 1, 1, 1])],
        {"x": [1, 8, 6, 6]},
        ["y"],
        [weight("w", (16, 4, 3, 3))],
    )
    op = load_onnx(m).op("y")
    assert (op.kind, op.macs, op.params) == ("conv", 16 * 36 * 4 * 9, 16 * 4 * 9)
    assert op.macs == (16 * 36 * 8 * 9) / 2


def test_depthwise_conv():
    m = model(
        [node("Conv", ["x", "w"], "y", group=8)],
        {"x": [1, 8, 6, 6]},
        ["y"],
        [weight("w", (8, 1, 3, 3))],
    )
    op = load_onnx(m).op("y")
    assert (op.kind, op.macs, op.params, op.output_elems) == ("dwconv", 8 * 16 * 9, 72, 128)


def test_conv_transpose():
    # stride-2 2x2 transposed conv 4 -> 2 channels: every input element meets 2*2*2 weights
    m = model(
        [node("ConvTranspose", ["x", "w"], "y", strides=[2, 2])],
        {"x": [1, 4, 3, 3]},
        ["y"],
        [weight("w", (4, 2, 2, 2))],
    )
    op = load_onnx(m).op("y")
    assert (op.kind, op.macs, op.params, op.output_elems) == ("conv", 36 * 8, 32, 2 * 6 * 6)


def test_gemm_with_trans_b_is_fc():
    m = model(
        [node("Gemm", ["x", "w", "b"], "y", transB=1)],
        {"x": ["N", 16]},
        ["y"],
        [weight("w", (10, 16)), weight("b", (10,))],
    )
    op = load_onnx(m, batch=2).op("y")
    assert (op.kind, op.macs, op.flops, op.params) == ("fc", 2 * 10 * 16, 640, 170)
    assert (op.input_elems, op.output_elems) == (32, 20)


def test_matmul_of_two_activations_is_matmul_with_an_edge_per_tensor():
    m = model(
        [
            node("Transpose", ["x"], "xt", perm=[0, 2, 1]),
            node("MatMul", ["x", "xt"], "y"),
        ],
        {"x": [2, 3, 8]},
        ["y"],
    )
    g = load_onnx(m, fuse="none")
    op = g.op("y")
    assert (op.kind, op.macs, op.params) == ("matmul", 2 * 3 * 3 * 8, 0)
    assert op.input_elems == 48 + 48
    assert g.edge("xt", "y").bytes == 48 * 4
    assert g.op("xt").kind == "reshape" and g.op("xt").flops == 0


def test_pools_softmax_concat_lrn():
    m = model(
        [
            node("MaxPool", ["x"], "mp", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            node("AveragePool", ["x"], "ap", kernel_shape=[2, 2], strides=[2, 2]),
            node("Concat", ["mp", "ap"], "cat", axis=1),
            node("GlobalAveragePool", ["cat"], "gap"),
            node("LRN", ["cat"], "lrn", size=5),
            node("Flatten", ["gap"], "flat"),
            node("Softmax", ["flat"], "sm", axis=-1),
        ],
        {"x": [1, 4, 8, 8]},
        ["sm", "lrn"],
    )
    g = load_onnx(m, fuse="none")
    assert (g.op("mp").kind, g.op("mp").flops, g.op("mp").output_elems) == ("pool", 64 * 9, 64)
    assert g.op("ap").flops == 64 * 4
    cat = g.op("cat")
    assert (cat.kind, cat.flops, cat.input_elems, cat.output_elems) == ("concat", 0, 128, 128)
    assert (g.op("gap").kind, g.op("gap").flops) == ("pool", 128 + 8)
    assert g.op("lrn").flops == 128 * (2 * 5 + 3)
    assert (g.op("sm").kind, g.op("sm").flops) == ("softmax", 8 * 5)
    assert g.predecessors("cat") == ["mp", "ap"] and g.successors("cat") == ["gap", "lrn"]
    assert g.entry_ops() == ["mp", "ap"]


def test_norms_count_scale_and_bias_only():
    c = 4
    m = model(
        [
            node("BatchNormalization", ["x", "s", "b", "m", "v"], "bn"),
            node("Add", ["bn", "k"], "add"),
        ],
        {"x": [1, c, 5, 5]},
        ["add"],
        [weight(n, (c,)) for n in "sbmv"] + [weight("k", (c, 1, 1))],
    )
    g = load_onnx(m, fuse="none")
    assert (g.op("bn").kind, g.op("bn").params, g.op("bn").flops) == ("norm", 2 * c, 2 * 100)
    add = g.op("add")  # a constant operand is a parameter; one FLOP per element
    assert (add.kind, add.params, add.flops, add.input_elems) == ("elementwise", c, 100, 100)


def test_embedding_gather_and_shape_gather():
    m = model(
        [
            node("Gather", ["table", "ids"], "emb", axis=0),
            node("Shape", ["emb"], "shape"),
            node("Gather", ["shape", "zero"], "dim0", axis=0),
        ],
        {"ids": [1, 6]},
        ["emb", "dim0"],
        [weight("table", (50, 8)), const("zero", 0, dtype="int64")],
        elem_type=TensorProto.INT64,
    )
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    g = load_onnx(m, fuse="none", dtype="fp32")
    emb = g.op("emb")
    assert (emb.kind, emb.params, emb.flops, emb.output_elems) == ("embedding", 400, 0, 48)
    assert (g.op("dim0").kind, g.op("dim0").params) == ("reshape", 0)


def test_edges_carry_tensor_bytes_of_the_dtype():
    m = model(
        [node("Relu", ["x"], "a"), node("Sigmoid", ["a"], "b"), node("Add", ["a", "b"], "c")],
        {"x": [1, 10]},
        ["c"],
    )
    for dtype, size in (("fp32", 4), ("fp16", 2), ("int8", 1)):
        g = load_onnx(m, dtype=dtype)
        assert {(e.src, e.dst): e.bytes for e in g.edges()} == {
            ("a", "b"): 10 * size,
            ("a", "c"): 10 * size,
            ("b", "c"): 10 * size,
        }
        assert all(op.dtype == dtype for op in g)


def test_default_dtype_follows_the_model():
    relu = [node("Relu", ["x"], "y")]
    assert load_onnx(model(relu, {"x": [1, 4]}, ["y"])).op("y").dtype == "fp32"
    half = model(relu, {"x": [1, 4]}, ["y"], elem_type=TensorProto.FLOAT16)
    assert load_onnx(half).op("y").dtype == "fp16"
    quant = model(
        [
            node("QuantizeLinear", ["x", "s", "z"], "q"),
            node("DequantizeLinear", ["q", "s", "z"], "y"),
        ],
        {"x": [1, 4]},
        ["y"],
        [const("s", 0.1), const("z", 0, dtype="uint8")],
    )
    g = load_onnx(quant)
    assert {op.dtype for op in g} == {"int8"} and g.edge("q", "y").bytes == 4


def test_dynamic_batch_is_fixed_and_scales_the_work():
    m = model(
        [node("Conv", ["x", "w"], "y")],
        {"x": ["batch", 3, 4, 4]},
        ["y"],
        [weight("w", (2, 3, 1, 1))],
    )
    one, four = load_onnx(m).op("y"), load_onnx(m, batch=4).op("y")
    assert four.macs == 4 * one.macs == 4 * 2 * 16 * 3
    assert four.params == one.params


def test_unnamed_nodes_get_op_type_and_index():
    m = model(
        [node("Relu", ["x"], "a", name=""), node("Relu", ["a"], "b", name="")],
        {"x": [1, 3]},
        ["b"],
    )
    assert load_onnx(m, fuse="none").order == ("Relu_0", "Relu_1")


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "tiny.onnx"
    path.write_bytes(model([node("Relu", ["x"], "y")], {"x": [2]}, ["y"]).SerializeToString())
    assert load_onnx(path).name == "tiny"
    assert load_onnx(str(path), name="other").name == "other"
    assert load_onnx(path.read_bytes()).name == "test"  # the ONNX graph's name


def test_every_handler_names_a_socsim_kind():
    from simulator.graph.model import OP_KINDS

    sample = model([node("Relu", ["x"], "y")], {"x": [1]}, ["y"])
    assert load_onnx(sample).op("y").kind in OP_KINDS
    assert len(HANDLERS) > 80


# -- errors ----------------------------------------------------------------------------
def test_unknown_op_names_node_type_and_nearest():
    m = model([node("Reluu", ["x"], "y", name="mine")], {"x": [1, 3]}, ["y"])
    with pytest.raises(ModelError) as info:
        load_onnx(m)
    text = str(info.value)
    assert "node 'mine'" in text and "'Reluu'" in text and "did you mean 'Relu'" in text
    assert "supported: " in text and "Conv" in text


def test_unknown_domain_is_an_unknown_op():
    m = model([node("Relu", ["x"], "y")], {"x": [1, 3]}, ["y"])
    m.graph.node[0].domain = "org.example"
    m.opset_import.append(helper.make_opsetid("org.example", 1))
    with pytest.raises(ModelError, match=r"unsupported op type 'org\.example:Relu'"):
        load_onnx(m)


def test_malformed_bytes_name_the_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07\xff\xff this is not protobuf")
    with pytest.raises(ModelError) as info:
        load_onnx(path)
    assert str(path) in str(info.value)


def test_truncated_file(tmp_path):
    data = model(
        [node("Conv", ["x", "w"], "y")], {"x": [1, 3, 4, 4]}, ["y"], [weight("w", (2, 3, 1, 1))]
    ).SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=r"cut\.onnx"):
        load_onnx(path)


def test_missing_file():
    with pytest.raises(ModelError) as info:
        load_onnx("/nonexistent/m.onnx")
    assert str(info.value).startswith("model '/nonexistent/m.onnx': cannot read the file")


def test_dangling_input_and_cycle():
    dangling = model([node("Add", ["x", "ghost"], "y")], {"x": [1, 3]}, ["y"])
    with pytest.raises(ModelError, match="reads 'ghost', which no node"):
        load_onnx(dangling)
    cycle = model([node("Add", ["x", "b"], "a"), node("Relu", ["a"], "b")], {"x": [1, 3]}, ["b"])
    with pytest.raises(ModelError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        load_onnx(cycle)


def test_unresolved_dynamic_dimension_is_an_error_naming_the_input():
    m = model([node("Relu", ["x"], "y")], {"x": ["N", "seq", 8]}, ["y"])
    with pytest.raises(ModelError, match="graph input 'x' has a dynamic dimension 1 \\('seq'\\)"):
        load_onnx(m)


def test_shape_unknown_after_inference_names_node_and_tensor():
    # the Reshape target comes from a graph input: its output shape cannot be known
    m = model([node("Reshape", ["x", "shape"], "y", name="r")], {"x": [1, 6], "shape": [2]}, ["y"])
    m.graph.input[1].type.tensor_type.elem_type = TensorProto.INT64
    with pytest.raises(ModelError, match="node 'r' \\(Reshape\\): the shape of output 'y'"):
        load_onnx(m)


def test_duplicate_node_names():
    m = model(
        [node("Relu", ["x"], "a", name="same"), node("Relu", ["a"], "b", name="same")],
        {"x": [1, 3]},
        ["b"],
    )
    with pytest.raises(ModelError, match="duplicate node name 'same'"):
        load_onnx(m)


def test_batch_needs_a_dynamic_batch_dimension():
    m = model([node("Relu", ["x"], "y")], {"x": [2, 3]}, ["y"])
    with pytest.raises(ModelError, match="batch=4 asked for, but no graph input has a dynamic"):
        load_onnx(m, batch=4)
    assert load_onnx(m).op("y").output_elems == 6  # the model's own fixed batch


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fuse": "all"}, "unknown fuse 'all'"),
        ({"dtype": "fp64"}, "unknown dtype 'fp64'"),
        ({"batch": 0}, "batch must be >= 1"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(ModelError, match=message):
        load_onnx(model([node("Relu", ["x"], "y")], {"x": ["N", 3]}, ["y"]), **options)


def test_source_model_is_not_modified():
    m = model([node("Relu", ["x"], "y")], {"x": ["N", 3]}, ["y"])
    before = m.SerializeToString()
    load_onnx(m, batch=3)
    assert m.SerializeToString() == before


def test_external_data_is_read_beside_the_file(tmp_path):
    import onnx

    m = model(
        [node("Gemm", ["x", "w"], "y", transB=1)], {"x": [1, 64]}, ["y"], [weight("w", (32, 64))]
    )
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, location="ext.bin", size_threshold=0)
    assert (tmp_path / "ext.bin").stat().st_size == 32 * 64 * 4
    assert load_onnx(path).op("y").params == 32 * 64
    (tmp_path / "ext.bin").unlink()
    with pytest.raises(ModelError, match=r"ext\.onnx"):
        load_onnx(path)


@settings(max_examples=40, deadline=None)
@given(
    c_in_per_group=st.integers(1, 4),
    groups=st.integers(1, 4),
    out_per_group=st.integers(1, 3),
    kernel=st.integers(1, 4),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    size=st.integers(4, 12),
)
def test_conv_agrees_with_the_zoo_builder(
    c_in_per_group, groups, out_per_group, kernel, stride, padding, size
):
    """Any conv imported from ONNX costs what GraphBuilder.conv says (MACs, params, kind)."""
    from simulator.graph.layers import GraphBuilder

    c_in, c_out = c_in_per_group * groups, out_per_group * groups
    assume(size + 2 * padding >= kernel)
    m = model(
        [
            node(
                "Conv",
                ["x", "w", "b"],
                "y",
                group=groups,
                strides=[stride, stride],
                pads=[padding] * 4,
            )
        ],
        {"x": [1, c_in, size, size]},
        ["y"],
        [weight("w", (c_out, c_in_per_group, kernel, kernel)), weight("b", (c_out,))],
    )
    imported = load_onnx(m).op("y")
    b = GraphBuilder()
    b.conv(b.input((c_in, size, size)), c_out, kernel, stride, padding, groups, name="y")
    ref = b.build().op("y")
    assert (imported.kind, imported.macs, imported.flops, imported.params) == (
        ref.kind,
        ref.macs,
        ref.flops,
        ref.params,
    )
    assert (imported.input_elems, imported.output_elems) == (ref.input_elems, ref.output_elems)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 5),
    inner=st.integers(1, 9),
    cols=st.integers(1, 9),
    trans_a=st.booleans(),
    trans_b=st.booleans(),
)
def test_gemm_macs_for_any_transposition(rows, inner, cols, trans_a, trans_b):
    a_shape = [inner, rows] if trans_a else [rows, inner]
    b_shape = (cols, inner) if trans_b else (inner, cols)
    m = model(
        [node("Gemm", ["a", "b"], "y", transA=int(trans_a), transB=int(trans_b))],
        {"a": a_shape},
        ["y"],
        [weight("b", b_shape)],
    )
    op = load_onnx(m).op("y")
    assert (op.macs, op.output_elems, op.params) == (rows * inner * cols, rows * cols, inner * cols)


def test_unsorted_acyclic_graph_is_an_error():
    m = model([node("Relu", ["a"], "b"), node("Relu", ["x"], "a")], {"x": [1, 3]}, ["b"])
    with pytest.raises(ModelError, match="reads 'a' before it is produced"):
        load_onnx(m)


def test_several_tensors_between_two_ops_make_one_edge():
    m = model(
        [
            helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, num_outputs=2),
            node("Concat", ["b", "a"], "cat", axis=1),
        ],
        {"x": [1, 6, 2]},
        ["cat"],
        opset=18,
    )
    g = load_onnx(m)
    assert [(e.src, e.dst, e.bytes) for e in g.edges()] == [("split", "cat", 12 * 4)]
    assert (g.op("split").output_elems, g.op("cat").input_elems) == (12, 12)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_corrupted_files_load_or_raise_model_error(data):
    """Flipped, cut or spliced bytes never escape as anything but a ModelError."""
    from onnx_util import MODELS_DIR

    raw = bytearray(
        (MODELS_DIR / data.draw(st.sampled_from(["small_cnn.onnx", "tiny_mlp.onnx"]))).read_bytes()
    )
    for _ in range(data.draw(st.integers(1, 4))):
        if not raw:
            break
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "splice"]))
        if action == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            raw = raw[: max(at, 1)]
        else:
            del raw[at : at + data.draw(st.integers(1, 40))]
    try:
        graph = load_onnx(bytes(raw))
    except ModelError:
        return
    assert len(graph) >= 1


def test_shape_inference_sets_weights_aside_and_gives_the_same_model():
    # a 64x64x3x3 conv (147 KB of weights) and a Reshape whose shape constant (int64,
    # 16 bytes) data propagation reads: the fast path must equal ONNX's own inference
    import onnx
    from onnx import shape_inference

    from simulator.graph.onnx_shapes import WEIGHT_BYTES, infer

    m = model(
        [
            node("Conv", ["x", "w"], "y", pads=[1, 1, 1, 1]),
            node("Reshape", ["y", "shape"], "z"),
        ],
        {"x": [1, 64, 8, 8]},
        ["z"],
        [weight("w", (64, 64, 3, 3)), const("shape", [1, -1], "int64")],
    )
    assert len(m.graph.initializer[0].raw_data) > WEIGHT_BYTES
    before = m.SerializeToString()
    expected = shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    assert infer(m, "m.onnx") == expected
    # the weights are back in the source, with the inferred shapes added
    assert (
        m.graph.initializer[0].raw_data
        == onnx.load_from_string(before).graph.initializer[0].raw_data
    )
    assert [d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim] == [1, 4096]


def test_failed_shape_inference_puts_the_weights_back():
    from simulator.graph.onnx_shapes import infer

    m = model(
        [node("Add", ["x", "w"], "y")],
        {"x": [1, 300]},
        ["y"],
        [weight("w", (1, 400))],  # 1.6 KB of weights that do not broadcast to x
    )
    data = m.graph.initializer[0].raw_data
    with pytest.raises(ModelError, match="ONNX shape inference failed"):
        infer(m, "m.onnx")
    assert m.graph.initializer[0].raw_data == data
