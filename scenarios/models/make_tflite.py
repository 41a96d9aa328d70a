"""Write scenarios/models/tiny_mobilenet_int8.tflite deterministically (flatbuffers builder).

Run ``python scenarios/models/make_tflite.py`` to rewrite it; the same flatbuffers version
gives a byte-identical file (``tests/graph/test_tflite_import.py`` checks it). The model is
a tiny MobileNet-like CNN quantized as TFLite's full-integer converter writes one: float32
input and output with QUANTIZE / DEQUANTIZE, int8 activations, int8 weights quantized per
channel (convs, along the output channel; the depthwise conv along its last dimension),
an int8 fully connected layer quantized per tensor, int32 biases. Weights come from a
fixed arithmetic recipe (no random generator). Field numbers are those of TFLite's
``schema.fbs`` (schema version 3).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import flatbuffers

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "tiny_mobilenet_int8.tflite"

# schema.fbs enums used here
FLOAT32, INT32, INT8 = 0, 2, 9
QUANTIZE, DEQUANTIZE, CONV_2D, DEPTHWISE_CONV_2D = 114, 6, 3, 4
ADD, MAX_POOL_2D, AVERAGE_POOL_2D, RESHAPE, FULLY_CONNECTED, SOFTMAX = 0, 17, 1, 22, 9, 25
CONV_OPTS, DW_OPTS, POOL_OPTS, FC_OPTS, SOFTMAX_OPTS, ADD_OPTS, RESHAPE_OPTS = (
    1,
    2,
    5,
    8,
    9,
    11,
    17,
)
SAME, VALID = 0, 1
NONE, RELU6 = 0, 3


@dataclass(frozen=True)
class Layer:
    """One operator of the recipe: its inputs are earlier outputs (by name) or weights."""

    name: str
    op: str  # quantize conv dwconv add maxpool avgpool reshape fc softmax dequantize
    inputs: tuple[str, ...]
    shape: tuple[int, ...]  # output shape (NHWC)
    kernel: int = 1
    stride: int = 1
    relu6: bool = False


#: The model, in order: input (1, 32, 32, 3) float32.
RECIPE: tuple[Layer, ...] = (
    Layer("input_int8", "quantize", ("input",), (1, 32, 32, 3)),
    Layer("conv1", "conv", ("input_int8",), (1, 16, 16, 8), kernel=3, stride=2, relu6=True),
    Layer("dw1", "dwconv", ("conv1",), (1, 16, 16, 8), kernel=3, relu6=True),
    Layer("pw1", "conv", ("dw1",), (1, 16, 16, 16), relu6=True),
    Layer("dw2", "dwconv", ("pw1",), (1, 16, 16, 16), kernel=3, relu6=True),
    Layer("pw2", "conv", ("dw2",), (1, 16, 16, 16)),
    Layer("residual", "add", ("pw1", "pw2"), (1, 16, 16, 16)),
    Layer("maxpool", "maxpool", ("residual",), (1, 8, 8, 16), kernel=2, stride=2),
    Layer("avgpool", "avgpool", ("maxpool",), (1, 1, 1, 16), kernel=8, stride=8),
    Layer("flatten", "reshape", ("avgpool",), (1, 16)),
    Layer("logits", "fc", ("flatten",), (1, 10)),
    Layer("probs_int8", "softmax", ("logits",), (1, 10)),
    Layer("probs", "dequantize", ("probs_int8",), (1, 10)),
)
INPUT_SHAPE = (1, 32, 32, 3)
OP_CODES = {
    "quantize": QUANTIZE,
    "conv": CONV_2D,
    "dwconv": DEPTHWISE_CONV_2D,
    "add": ADD,
    "maxpool": MAX_POOL_2D,
    "avgpool": AVERAGE_POOL_2D,
    "reshape": RESHAPE,
    "fc": FULLY_CONNECTED,
    "softmax": SOFTMAX,
    "dequantize": DEQUANTIZE,
}


def weight_bytes(count: int, seed: int) -> bytes:
    """``count`` int8 values in [-127, 127] from a fixed recipe (a linear congruence)."""
    return bytes(((seed * 31 + i * 37) % 255 - 127) & 0xFF for i in range(count))


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    type: int
    data: bytes = b""
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    axis: int = 0
    dynamic_batch: bool = False


def tensors_and_ops() -> tuple[list[Tensor], list[tuple[Layer, list[int], list[int]]]]:
    """The tensors (in index order) and each layer with its input and output indices."""
    tensors = [Tensor("input", INPUT_SHAPE, FLOAT32, dynamic_batch=True)]
    index = {"input": 0}
    channels = {"input": INPUT_SHAPE[-1]}

    def add(t: Tensor) -> int:
        tensors.append(t)
        return len(tensors) - 1

    ops = []
    for seed, layer in enumerate(RECIPE, start=1):
        ins = [index[n] for n in layer.inputs]
        c_in, c_out = channels[layer.inputs[0]], layer.shape[-1]
        k = layer.kernel
        if layer.op in ("conv", "dwconv"):
            dw = layer.op == "dwconv"
            w_shape = (1, k, k, c_out) if dw else (c_out, k, k, c_in)
            count = k * k * c_out * (1 if dw else c_in)
            scales = tuple(0.01 + 0.001 * j for j in range(c_out))
            zeros = (0,) * c_out
            ins.append(
                add(
                    Tensor(
                        f"{layer.name}/weights",
                        w_shape,
                        INT8,
                        weight_bytes(count, seed),
                        scales,
                        zeros,
                        3 if dw else 0,
                    )
                )
            )
            bias = bytes(4 * c_out)  # int32 zeros
            ins.append(add(Tensor(f"{layer.name}/bias", (c_out,), INT32, bias, scales, zeros)))
        elif layer.op == "fc":
            w = Tensor("logits/weights", (c_out, c_in), INT8, weight_bytes(c_out * c_in, seed))
            w.scales, w.zero_points = (0.02,), (0,)
            ins.append(add(w))
            ins.append(
                add(Tensor("logits/bias", (c_out,), INT32, bytes(4 * c_out), (0.0002,), (0,)))
            )
        elif layer.op == "reshape":
            shape = b"".join(d.to_bytes(4, "little", signed=True) for d in layer.shape)
            ins.append(add(Tensor("flatten/shape", (2,), INT32, shape)))
        out_type = FLOAT32 if layer.op == "dequantize" else INT8
        quant = ((), ()) if out_type == FLOAT32 else ((1.0 / 256,), (-128,))
        out = Tensor(layer.name, layer.shape, out_type, b"", *quant, dynamic_batch=True)
        index[layer.name] = add(out)
        channels[layer.name] = layer.shape[-1]
        ops.append((layer, ins, [index[layer.name]]))
    return tensors, ops


def _vector(b: flatbuffers.Builder, kind: str, values: tuple | list) -> int:
    size, prepend = {
        "i": (4, b.PrependInt32),
        "f": (4, b.PrependFloat32),
        "q": (8, b.PrependInt64),
        "o": (4, b.PrependUOffsetTRelative),
    }[kind]
    b.StartVector(size, len(values), size)
    for v in reversed(values):
        prepend(v)
    return b.EndVector()


def _offsets(b: flatbuffers.Builder, *offsets: int, first: int = 0) -> None:
    """Offset fields ``first``, ``first + 1``, ... of the table being built, in order."""
    for slot, offset in enumerate(offsets, start=first):
        b.PrependUOffsetTRelativeSlot(slot, offset, 0)


def _options(b: flatbuffers.Builder, layer: Layer) -> tuple[int, int]:
    """(union type, table offset) of the layer's builtin options; (0, 0) for none."""
    act = RELU6 if layer.relu6 else NONE
    if layer.op == "conv":
        b.StartObject(6)
        b.PrependInt8Slot(0, SAME, 0)
        b.PrependInt32Slot(1, layer.stride, 0)
        b.PrependInt32Slot(2, layer.stride, 0)
        b.PrependInt8Slot(3, act, 0)
        return CONV_OPTS, b.EndObject()
    if layer.op == "dwconv":
        b.StartObject(7)
        b.PrependInt8Slot(0, SAME, 0)
        b.PrependInt32Slot(1, layer.stride, 0)
        b.PrependInt32Slot(2, layer.stride, 0)
        b.PrependInt32Slot(3, 1, 0)  # depth_multiplier
        b.PrependInt8Slot(4, act, 0)
        return DW_OPTS, b.EndObject()
    if layer.op in ("maxpool", "avgpool"):
        b.StartObject(6)
        b.PrependInt8Slot(0, VALID, 0)
        for slot in (1, 2):
            b.PrependInt32Slot(slot, layer.stride, 0)
        for slot in (3, 4):
            b.PrependInt32Slot(slot, layer.kernel, 0)
        return POOL_OPTS, b.EndObject()
    if layer.op == "fc":
        b.StartObject(4)
        return FC_OPTS, b.EndObject()
    if layer.op == "add":
        b.StartObject(1)
        return ADD_OPTS, b.EndObject()
    if layer.op == "softmax":
        b.StartObject(1)
        b.PrependFloat32Slot(0, 1.0, 0.0)
        return SOFTMAX_OPTS, b.EndObject()
    if layer.op == "reshape":
        shape = _vector(b, "i", list(layer.shape))
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        return RESHAPE_OPTS, b.EndObject()
    return 0, 0


def _tensor(b: flatbuffers.Builder, t: Tensor, buffer: int) -> int:
    name = b.CreateString(t.name)
    shape = _vector(b, "i", list(t.shape))
    signature = _vector(b, "i", [-1, *t.shape[1:]]) if t.dynamic_batch else 0
    quant = 0
    if t.scales:
        scales = _vector(b, "f", list(t.scales))
        zeros = _vector(b, "q", list(t.zero_points))
        b.StartObject(7)
        b.PrependUOffsetTRelativeSlot(2, scales, 0)
        b.PrependUOffsetTRelativeSlot(3, zeros, 0)
        b.PrependInt32Slot(6, t.axis, 0)
        quant = b.EndObject()
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(0, shape, 0)
    b.PrependInt8Slot(1, t.type, 0)
    b.PrependUint32Slot(2, buffer, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    if quant:
        b.PrependUOffsetTRelativeSlot(4, quant, 0)
    if signature:
        b.PrependUOffsetTRelativeSlot(7, signature, 0)
    return b.EndObject()


def tflite_bytes(
    tensors: list[Tensor] | None = None,
    ops: list[tuple[Layer, list[int], list[int]]] | None = None,
    op_codes: dict[str, int] | None = None,
    version: int = 3,
) -> bytes:
    """The model's flatbuffer; the tests pass edited tensors, ops or codes for bad files."""
    if tensors is None or ops is None:
        tensors, ops = tensors_and_ops()
    op_codes = {**OP_CODES, **(op_codes or {})}
    b = flatbuffers.Builder(4096)
    # buffers: 0 is the empty sentinel, then one per tensor that holds data
    buffer_of, datas = {}, [b""]
    for i, t in enumerate(tensors):
        if t.data:
            buffer_of[i] = len(datas)
            datas.append(t.data)
    buffers = []
    for data in datas:
        vec = 0
        if data:
            b.StartVector(1, len(data), 16)  # schema.fbs: force_align 16
            b.head = b.head - len(data)
            b.Bytes[b.head : b.head + len(data)] = data
            vec = b.EndVector()
        b.StartObject(3)
        if vec:
            b.PrependUOffsetTRelativeSlot(0, vec, 0)
        buffers.append(b.EndObject())
    tensor_offsets = [_tensor(b, t, buffer_of.get(i, 0)) for i, t in enumerate(tensors)]
    codes = sorted({op_codes[layer.op] for layer, _, _ in ops})
    operators = []
    for layer, ins, outs in ops:
        kind, table = _options(b, layer)
        inputs, outputs = _vector(b, "i", ins), _vector(b, "i", outs)
        b.StartObject(5)
        b.PrependUint32Slot(0, codes.index(op_codes[layer.op]), 0)
        b.PrependUOffsetTRelativeSlot(1, inputs, 0)
        b.PrependUOffsetTRelativeSlot(2, outputs, 0)
        if kind:
            b.PrependUint8Slot(3, kind, 0)
            b.PrependUOffsetTRelativeSlot(4, table, 0)
        operators.append(b.EndObject())
    code_offsets = []
    for code in codes:
        b.StartObject(4)
        b.PrependInt8Slot(0, min(code, 127), 0)
        b.PrependInt32Slot(2, 1, 1)
        b.PrependInt32Slot(3, code, 0)
        code_offsets.append(b.EndObject())
    name = b.CreateString("main")
    t_vec, o_vec = _vector(b, "o", tensor_offsets), _vector(b, "o", operators)
    in_vec, out_vec = _vector(b, "i", [0]), _vector(b, "i", [ops[-1][2][0]])
    b.StartObject(5)
    _offsets(b, t_vec, in_vec, out_vec, o_vec, name)
    subgraph = b.EndObject()
    description = b.CreateString("socsim make_tflite.py: tiny MobileNet-like CNN, int8")
    codes_vec, sub_vec = _vector(b, "o", code_offsets), _vector(b, "o", [subgraph])
    buf_vec = _vector(b, "o", buffers)
    b.StartObject(5)
    b.PrependUint32Slot(0, version, 0)
    _offsets(b, codes_vec, sub_vec, description, buf_vec, first=1)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUTPUT
    out.write_bytes(tflite_bytes())
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
