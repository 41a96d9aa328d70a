"""TFLite import: the shipped model against hand-computed figures and its ONNX twin."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper
from onnx_util import MODELS_DIR, const, node, weight

from simulator.errors import ModelError
from simulator.graph.onnx_import import load_onnx
from simulator.graph.onnx_ops import HANDLERS
from simulator.graph.tflite_import import load_tflite
from simulator.graph.tflite_ops import BUILTIN_NAMES, TFLITE_TO_ONNX

SHIPPED = MODELS_DIR / "tiny_mobilenet_int8.tflite"


@functools.cache
def make_tflite():
    """scenarios/models/make_tflite.py, imported from its path (registered: dataclasses)."""
    path = MODELS_DIR / "make_tflite.py"
    spec = importlib.util.spec_from_file_location("socsim_make_tflite", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


#: Per op by hand: (kind, MACs, FLOPs, params, input elems, output elems). Convs: MACs =
#: output elems x (C_in / group) x k x k; a fused ReLU6 is ONNX's Clip, 2 FLOPs per element.
EXPECTED = {
    "input_int8": ("elementwise", 0, 2 * 3072, 0, 3072, 3072),  # quantize: scale, shift
    "conv1": ("conv", 2048 * 27, 2 * 2048 * 27 + 2 * 2048, 8 * 27 + 8, 3072, 2048),
    "dw1": ("dwconv", 2048 * 9, 2 * 2048 * 9 + 2 * 2048, 8 * 9 + 8, 2048, 2048),
    "pw1": ("conv", 4096 * 8, 2 * 4096 * 8 + 2 * 4096, 16 * 8 + 16, 2048, 4096),
    "dw2": ("dwconv", 4096 * 9, 2 * 4096 * 9 + 2 * 4096, 16 * 9 + 16, 4096, 4096),
    "pw2": ("conv", 4096 * 16, 2 * 4096 * 16, 16 * 16 + 16, 4096, 4096),
    "residual": ("elementwise", 0, 4096, 0, 2 * 4096, 4096),
    "maxpool": ("pool", 0, 1024 * 4, 0, 4096, 1024),  # 2x2 window per output
    "avgpool": ("pool", 0, 16 * 64, 0, 1024, 16),  # 8x8 window
    "flatten": ("reshape", 0, 0, 0, 16, 16),
    "logits": ("fc", 160, 320, 16 * 10 + 10, 16, 10),
    "probs_int8": ("softmax", 0, 5 * 10, 0, 10, 10),
    "probs": ("elementwise", 0, 2 * 10, 0, 10, 10),  # dequantize
}


def figures(op):
    return (op.kind, op.macs, op.flops, op.params, op.input_elems, op.output_elems)


def test_shipped_file_is_byte_identical_to_what_the_script_writes():
    assert SHIPPED.read_bytes() == make_tflite().tflite_bytes()


def test_every_op_matches_the_hand_computed_figures():
    graph = load_tflite(SHIPPED)
    assert graph.name == "tiny_mobilenet_int8"
    assert list(graph.order) == list(EXPECTED)
    for name, expected in EXPECTED.items():
        assert figures(graph.op(name)) == expected, name
    assert {op.dtype for op in graph} == {"int8"}  # quantized model: int8 by default
    assert graph.total_params == 1050
    assert graph.total_macs == 55296 + 18432 + 32768 + 36864 + 65536 + 160
    # shapes for the techniques, as the zoo's layer builder sets them
    assert dict(graph.op("dw1").attrs)["groups"] == 8
    assert dict(graph.op("logits").attrs)["in_features"] == 16
    assert graph.op("conv1").fused == ("conv1", "conv1/Clip")  # one kernel with its ReLU6
    assert graph.op("pw2").fused == ()
    # int8 edges: one byte per element; the residual add reads pw1 and pw2
    assert graph.edge("pw1", "residual").bytes == 4096
    assert graph.edge("pw1", "dw2").bytes == 4096
    assert set(graph.predecessors("residual")) == {"pw1", "pw2"}


def onnx_twin():
    """The same network written as an exporter writes it in ONNX (NCHW, Conv + Clip)."""
    lo, hi = const("lo", 0.0), const("hi", 6.0)
    scale, zero = const("s", 1 / 256), const("z", -128, dtype="int8")
    nodes, inits = [node("QuantizeLinear", ["input", "s", "z"], "input_int8")], [scale, zero]
    nodes.append(node("DequantizeLinear", ["input_int8", "s", "z"], "input_f"))
    x, c_in = "input_f", 3
    convs = (("conv1", 8, 3, 2, 1, True), ("dw1", 8, 3, 1, 8, True), ("pw1", 16, 1, 1, 1, True))
    convs += (("dw2", 16, 3, 1, 16, True), ("pw2", 16, 1, 1, 1, False))
    for seed, (name, c_out, k, stride, group, relu6) in enumerate(convs):
        inits += [
            weight(f"{name}_w", (c_out, c_in // group, k, k), seed),
            weight(f"{name}_b", (c_out,)),
        ]
        pad = k // 2
        out = f"{name}_conv" if relu6 else name
        nodes.append(
            node(
                "Conv",
                [x, f"{name}_w", f"{name}_b"],
                out,
                name=name,
                group=group,
                strides=[stride] * 2,
                pads=[pad] * 4,
            )
        )
        if relu6:
            nodes.append(node("Clip", [out, "lo", "hi"], name, name=f"{name}_relu6"))
        x, c_in = name, c_out
    nodes += [
        node("Add", ["pw1", "pw2"], "residual"),
        node("MaxPool", ["residual"], "maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        node("AveragePool", ["maxpool"], "avgpool", kernel_shape=[8, 8], strides=[8, 8]),
        node("Reshape", ["avgpool", "shape"], "flatten"),
        node("Gemm", ["flatten", "fc_w", "fc_b"], "logits", transB=1),
        node("Softmax", ["logits"], "probs_int8"),
        node("QuantizeLinear", ["probs_int8", "s", "z"], "probs_q"),
        node("DequantizeLinear", ["probs_q", "s", "z"], "probs"),
    ]
    inits += [lo, hi, const("shape", [1, 16], dtype="int64")]
    inits += [weight("fc_w", (10, 16)), weight("fc_b", (10,))]
    graph = helper.make_graph(
        nodes,
        "twin",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_onnx_twin_imports_to_the_same_ops():
    """Conv + Clip fuse as onnxruntime fuses them (FusedConv), matching TFLite's fused
    activations; the twin's QDQ pairs around the float ops are its only extra ops."""
    twin = load_onnx(onnx_twin(), dtype="int8")
    tflite = load_tflite(SHIPPED)
    assert [n for n in twin.order if n not in tflite] == ["input_f", "probs_q"]
    for name in tflite.order:
        assert figures(twin.op(name)) == figures(tflite.op(name)), name
        assert len(twin.op(name).fused) == len(tflite.op(name).fused), name
        assert dict(twin.op(name).attrs).keys() == dict(tflite.op(name).attrs).keys(), name
    for src, dst in (("conv1", "dw1"), ("pw1", "residual"), ("avgpool", "flatten")):
        assert twin.edge(src, dst).bytes == tflite.edge(src, dst).bytes


def test_a_dynamic_batch_scales_every_op():
    one, four = load_tflite(SHIPPED), load_tflite(SHIPPED, batch=4)
    for a, b in zip(one, four, strict=True):
        assert (b.macs, b.flops, b.output_elems) == (4 * a.macs, 4 * a.flops, 4 * a.output_elems)
        assert b.params == a.params


def test_every_mapped_op_is_costed_by_an_onnx_handler():
    """One table of rules: every TFLite op maps onto an ONNX op type the importer costs."""
    assert set(TFLITE_TO_ONNX.values()) <= set(HANDLERS)
    assert set(TFLITE_TO_ONNX) <= set(BUILTIN_NAMES)


def variant(edit_tensor=None, edit_op=None, **kwargs) -> bytes:
    m = make_tflite()
    tensors, ops = m.tensors_and_ops()
    for i, t in enumerate(tensors):
        if edit_tensor is not None:
            tensors[i] = edit_tensor(m, t)
    if edit_op is not None:
        ops = [(edit_op(layer), ins, outs) for layer, ins, outs in ops]
    return m.tflite_bytes(tensors, ops, **kwargs)


def test_dtype_defaults_follow_the_tensor_types():
    def floats(m, t, weights=0):  # float model: no quantization; weights of the given type
        kind = weights if t.data and t.type == m.INT8 else m.FLOAT32 if t.type == m.INT8 else t.type
        return dataclasses.replace(t, type=kind, scales=(), zero_points=())

    fp32 = load_tflite(variant(lambda m, t: floats(m, t, 0)))
    fp16 = load_tflite(variant(lambda m, t: floats(m, t, 1)))
    assert {op.dtype for op in fp32} == {"fp32"} and {op.dtype for op in fp16} == {"fp16"}
    assert load_tflite(SHIPPED, dtype="fp16").op("conv1").dtype == "fp16"
    assert fp32.total_macs == load_tflite(SHIPPED).total_macs


def expect_error(data: bytes, *fragments: str) -> str:
    with pytest.raises(ModelError) as info:
        load_tflite(data)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_bytes_that_are_not_a_flatbuffer():
    expect_error(b"hello", "5 bytes: too short")
    expect_error(b"name: a scenario\n", "file identifier b': a '", "expected b'TFL3'")
    onnx_bytes = (MODELS_DIR / "small_cnn.onnx").read_bytes()
    expect_error(onnx_bytes, "not a TensorFlow Lite flatbuffer")


def test_a_wrong_file_identifier_or_schema_version():
    data = SHIPPED.read_bytes()
    expect_error(data[:4] + b"TFL2" + data[8:], "file identifier b'TFL2'", "expected b'TFL3'")
    expect_error(variant(version=2), "schema version 2, expected 3")


def test_every_truncation_of_the_file_is_a_clear_error():
    data = SHIPPED.read_bytes()
    for length in range(0, len(data), 3):
        message = expect_error(data[:length], "<tflite bytes>")
        assert "not a valid TFLite model" in message, (length, message)


@pytest.mark.parametrize("seed", range(3))
def test_corrupt_bytes_are_a_model_error_or_a_graph_never_a_crash(seed):
    import random

    data = bytearray(SHIPPED.read_bytes())
    rng = random.Random(seed)
    for _ in range(150):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(8, len(corrupt))] = rng.randrange(256)
        with contextlib.suppress(ModelError):
            load_tflite(bytes(corrupt))


def test_an_unsupported_op_names_the_nearest_supported_one():
    rsqrt = BUILTIN_NAMES.index("RSQRT")
    data = variant(edit_op=lambda layer: layer, op_codes={"softmax": rsqrt})
    expect_error(data, "operator 11 'probs_int8'", "unsupported operator type 'RSQRT'", "'SQRT'")
    lstm = variant(op_codes={"softmax": BUILTIN_NAMES.index("LSTM")})
    expect_error(lstm, "unsupported operator type 'LSTM'", "supported: ABS, ADD")


def test_per_channel_quantization_must_match_the_channels():
    def bad(m, t):
        if t.name != "dw1/weights":
            return t
        return dataclasses.replace(t, scales=t.scales[:3], zero_points=t.zero_points[:3])

    expect_error(
        variant(bad), "tensor 'dw1/weights' (INT8)", "3 scales for the 8 channels of dimension 3"
    )

    def zero_points(m, t):
        return dataclasses.replace(t, zero_points=(0, 0)) if t.name == "logits/weights" else t

    expect_error(variant(zero_points), "1 scales but 2 zero points")


def test_a_file_path_names_the_file(tmp_path: Path):
    path = tmp_path / "broken.tflite"
    path.write_bytes(b"TFL3TFL3")
    with pytest.raises(ModelError, match=str(path)):
        load_tflite(path)
    with pytest.raises(ModelError, match="cannot read the file"):
        load_tflite(tmp_path / "missing.tflite")


def test_a_conv_weight_of_another_rank_names_the_operator():
    def flat(m, t):
        return dataclasses.replace(t, shape=(8, 27)) if t.name == "conv1/weights" else t

    expect_error(variant(flat), "operator 1 'conv1' (CONV_2D): expected a 4-D tensor", "[8, 27]")


def test_an_operator_reading_a_later_tensor_is_an_error():
    m = make_tflite()
    tensors, ops = m.tensors_and_ops()
    later = ops[7][2][0]  # the max pool's output, read by the residual add (op 6)
    ops[6] = (ops[6][0], [ops[6][1][0], later], ops[6][2])
    expect_error(
        m.tflite_bytes(tensors, ops), "operator 6 (ADD) reads tensor", "before it is produced"
    )


def test_importing_a_tflite_model_does_not_import_onnx():
    """The TFLite path shares the ONNX importer's rules, not the onnx package."""
    import subprocess

    code = (
        "import sys; from simulator.graph import load_tflite; "
        f"g = load_tflite({str(SHIPPED)!r}); print(len(g), 'onnx' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["13", "False"]


def test_a_dequantize_of_float16_weights_is_folded_into_the_weights():
    """Float16 quantization: conv1's weights are stored as FLOAT16 and a DEQUANTIZE makes
    the float32 weights the conv reads; TFLite runs it once at load, so it is no op."""
    m = make_tflite()
    tensors, ops = m.tensors_and_ops()
    w = next(i for i, t in enumerate(tensors) if t.name == "conv1/weights")
    stored = dataclasses.replace(tensors[w], name="conv1/weights_fp16", type=1, scales=())
    tensors.append(stored)
    tensors[w] = dataclasses.replace(tensors[w], type=m.FLOAT32, data=b"", scales=())
    unquantize = m.Layer("conv1/dequantize", "dequantize", ("x",), stored.shape)
    ops.insert(0, (unquantize, [len(tensors) - 1], [w]))
    graph = load_tflite(m.tflite_bytes(tensors, ops))
    assert list(graph.order) == list(EXPECTED)  # no op for the DEQUANTIZE
    assert figures(graph.op("conv1")) == EXPECTED["conv1"]  # its weights still params
    assert load_tflite(m.tflite_bytes(tensors, ops), dtype="int8").total_params == 1050
