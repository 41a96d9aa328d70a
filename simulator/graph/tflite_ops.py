"""How TFLite operators map onto the ONNX importer's cost rules.

A TFLite builtin operator is costed as the ONNX op that computes the same thing
(:data:`TFLITE_TO_ONNX`), by that op's handler in :data:`simulator.graph.onnx_ops.HANDLERS`:
one table of FLOP rules for both formats. What differs is layout and where attributes
live, and an adapter (:data:`ADAPTERS`) converts those: TFLite activations are NHWC and a
conv's weights ``OHWI`` (a depthwise conv's ``1HWC``), which the conv rule reads as ONNX's
NCHW and ``OIHW``; a fully connected layer is a Gemm with ``transB``; a pool's window is an
option, not an attribute. A fused activation (``fused_activation_function`` of the
operator's options) becomes the ONNX activation it computes (:data:`FUSED_ACTIVATIONS`),
fused into its operator as onnxruntime fuses Conv + Relu.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from simulator.graph.onnx_view import TensorView
from simulator.graph.tflite_reader import Table

_BUILTIN_OPERATOR = """\
ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE
EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D
LOCAL_RESPONSE_NORMALIZATION LOGISTIC LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU
RELU_N1_TO_1 RELU6 RESHAPE RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH SVDF TANH
CONCAT_EMBEDDINGS SKIP_GRAM CALL CUSTOM EMBEDDING_LOOKUP_SPARSE PAD
UNIDIRECTIONAL_SEQUENCE_RNN GATHER BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN
SUB DIV SQUEEZE UNIDIRECTIONAL_SEQUENCE_LSTM STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN
EXP TOPK_V2 SPLIT LOG_SOFTMAX DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM CAST PRELU MAXIMUM
ARG_MAX MINIMUM LESS NEG PADV2 GREATER GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN
TRANSPOSE_CONV SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT SHAPE
POW ARG_MIN FAKE_QUANT REDUCE_PROD REDUCE_MAX PACK LOGICAL_OR ONE_HOT LOGICAL_AND
LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD
RANGE RESIZE_NEAREST_NEIGHBOR LEAKY_RELU SQUARED_DIFFERENCE MIRROR_PAD ABS SPLIT_V
UNIQUE CEIL REVERSE_V2 ADD_N GATHER_ND COS WHERE RANK ELU REVERSE_SEQUENCE MATRIX_DIAG
QUANTIZE MATRIX_SET_DIAG ROUND HARD_SWISH IF WHILE NON_MAX_SUPPRESSION_V4
NON_MAX_SUPPRESSION_V5 SCATTER_ND SELECT_V2 DENSIFY SEGMENT_SUM BATCH_MATMUL
PLACEHOLDER_FOR_GREATER_OP_CODES CUMSUM CALL_ONCE BROADCAST_TO RFFT2D CONV_3D IMAG REAL
COMPLEX_ABS HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT HASHTABLE_SIZE REDUCE_ALL
CONV_3D_TRANSPOSE VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE BROADCAST_ARGS
RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM MULTINOMIAL GELU DYNAMIC_UPDATE_SLICE
RELU_0_TO_1 UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX UNSORTED_SEGMENT_SUM ATAN2
UNSORTED_SEGMENT_MIN SIGN BITCAST BITWISE_XOR RIGHT_SHIFT"""
#: ``BuiltinOperator`` enum of TFLite's schema.fbs, by value (0 to 161; the StableHLO codes
#: after it are not listed and print as ``builtin <code>``).
BUILTIN_NAMES: tuple[str, ...] = tuple(_BUILTIN_OPERATOR.split())

#: TFLite builtin -> the ONNX op type whose handler costs it.
TFLITE_TO_ONNX: Mapping[str, str] = MappingProxyType(
    {
        "CONV_2D": "Conv",
        "DEPTHWISE_CONV_2D": "Conv",
        "TRANSPOSE_CONV": "ConvTranspose",
        "FULLY_CONNECTED": "Gemm",
        "BATCH_MATMUL": "MatMul",
        "AVERAGE_POOL_2D": "AveragePool",
        "MAX_POOL_2D": "MaxPool",
        "L2_POOL_2D": "LpPool",
        **{"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_PROD": "ReduceProd"},
        **{"REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin"},
        **{"ARG_MAX": "ArgMax", "ARG_MIN": "ArgMin"},
        **{"SOFTMAX": "Softmax", "LOG_SOFTMAX": "LogSoftmax"},
        "LOCAL_RESPONSE_NORMALIZATION": "LRN",
        **{"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "POW": "Pow"},
        **{"MAXIMUM": "Max", "MINIMUM": "Min", "ADD_N": "Sum"},
        **{"SELECT": "Where", "SELECT_V2": "Where"},
        **{"EQUAL": "Equal", "LESS": "Less", "GREATER": "Greater"},
        **{"GREATER_EQUAL": "GreaterOrEqual", "LESS_EQUAL": "LessOrEqual"},
        **{"LOGICAL_AND": "And", "LOGICAL_OR": "Or", "LOGICAL_NOT": "Not"},
        **{"RELU": "Relu", "RELU6": "Clip", "RELU_N1_TO_1": "Clip", "RELU_0_TO_1": "Clip"},
        **{"LEAKY_RELU": "LeakyRelu", "PRELU": "PRelu", "ELU": "Elu"},
        **{"LOGISTIC": "Sigmoid", "TANH": "Tanh", "HARD_SWISH": "HardSwish", "GELU": "Gelu"},
        **{"EXP": "Exp", "LOG": "Log", "SQRT": "Sqrt", "NEG": "Neg", "ABS": "Abs"},
        **{"FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round", "SIGN": "Sign"},
        **{"SIN": "Sin", "COS": "Cos"},
        **{"QUANTIZE": "QuantizeLinear", "DEQUANTIZE": "DequantizeLinear"},
        **{"CONCATENATION": "Concat", "PACK": "Concat"},
        **{"RESHAPE": "Reshape", "SQUEEZE": "Squeeze", "EXPAND_DIMS": "Unsqueeze"},
        **{"TRANSPOSE": "Transpose", "PAD": "Pad", "PADV2": "Pad", "MIRROR_PAD": "Pad"},
        **{"SLICE": "Slice", "STRIDED_SLICE": "Slice"},
        **{"SPLIT": "Split", "SPLIT_V": "Split", "UNPACK": "Split"},
        **{"GATHER": "Gather", "EMBEDDING_LOOKUP": "Gather", "GATHER_ND": "GatherND"},
        **{"SCATTER_ND": "ScatterND", "CAST": "Cast", "TILE": "Tile"},
        **{"BROADCAST_TO": "Expand", "SHAPE": "Shape", "RANGE": "Range", "TOPK_V2": "TopK"},
        **{"DEPTH_TO_SPACE": "DepthToSpace", "SPACE_TO_DEPTH": "SpaceToDepth"},
        **{"RESIZE_BILINEAR": "Resize", "RESIZE_NEAREST_NEIGHBOR": "Resize"},
    }
)

#: ``ActivationFunctionType`` of schema.fbs -> the ONNX activation it computes (0: none).
FUSED_ACTIVATIONS: Mapping[int, str] = MappingProxyType(
    {1: "Relu", 2: "Clip", 3: "Clip", 4: "Tanh", 5: "Sign"}
)

#: ``BuiltinOptions`` union type -> the vtable slot of its ``fused_activation_function``
#: (Conv2D, DepthwiseConv2D, Pool2D, FullyConnected, Concatenation, Add, L2Norm, Mul,
#: Sub, Div options).
ACTIVATION_SLOTS: Mapping[int, int] = MappingProxyType(
    {1: 10, 2: 12, 5: 14, 8: 4, 10: 6, 11: 4, 12: 4, 21: 4, 28: 4, 29: 4}
)

#: The options union types the adapters read: Pool2D, LRN, BatchMatMul.
_POOL2D, _LRN, _BATCH_MATMUL = 5, 13, 101

Views = tuple[list[TensorView], list[TensorView], dict[str, Any]]
#: ``(inputs, outputs, options table or None) -> (ONNX inputs, outputs, attributes)``.
Adapter = Callable[[list[TensorView], list[TensorView], Table | None], Views]


def _shaped(t: TensorView, shape: tuple[int, ...] | None) -> TensorView:
    return TensorView(t.name, shape, t.is_const)


def _nchw(t: TensorView) -> TensorView:
    """An NHWC activation as ONNX's NCHW (other ranks unchanged)."""
    s = t.shape
    return _shaped(t, (s[0], s[3], s[1], s[2]) if s is not None and len(s) == 4 else s)


def _oihw(t: TensorView) -> TensorView:
    """A conv weight ``(O, H, W, I)`` as ONNX's ``(O, I, H, W)``."""
    return _nchw(t)


def _option(options: Table | None, slot: int, fmt: str, default: Any) -> Any:
    return default if options is None else options.scalar(slot, fmt, default)


def _shape4(t: TensorView) -> tuple[int, int, int, int]:
    """The shape of a 4-D tensor; ValueError (a ModelError naming the operator) for another
    rank, rather than a cost computed from a wrong shape."""
    if t.shape is None or len(t.shape) != 4:
        shape = list(t.shape) if t.shape is not None else "unknown"
        raise ValueError(f"expected a 4-D tensor, got shape {shape}")
    a, b, c, d = t.shape
    return a, b, c, d


def conv(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """CONV_2D (x NHWC, w OHWI, bias): ``group = C_in / I`` (grouped convs keep ``I < C_in``)."""
    x, w = ins[0], ins[1]
    group = _shape4(x)[3] // max(_shape4(w)[3], 1)
    return [_nchw(x), _oihw(w), *ins[2:]], [_nchw(o) for o in outs], {"group": group}


def depthwise(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """DEPTHWISE_CONV_2D (x NHWC, w ``(1, H, W, C_out)``, bias): a Conv with ``group = C_in``
    and weight ``(C_out, 1, H, W)``."""
    x, w = ins[0], ins[1]
    _, kh, kw, c_out = _shape4(w)
    weight = _shaped(w, (c_out, 1, kh, kw))
    return [_nchw(x), weight, *ins[2:]], [_nchw(o) for o in outs], {"group": _shape4(x)[3]}


def transpose_conv(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """TRANSPOSE_CONV (output_shape, w ``(O, H, W, I)``, x NHWC, bias): ConvTranspose reads
    (x NCHW, w ``(I, O, H, W)``, bias)."""
    w = ins[1]
    o, kh, kw, i = _shape4(w)
    weight = _shaped(w, (i, o, kh, kw))
    return [_nchw(ins[2]), weight, *ins[3:]], [_nchw(o) for o in outs], {}


def fully_connected(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """FULLY_CONNECTED (x, w ``(N, K)``, bias): a Gemm with ``transB``, x seen as
    ``(elements / K, K)`` as TFLite flattens it."""
    x, w = ins[0], ins[1]
    k = w.shape[-1] if w.shape else 0
    flat = (x.elems // k, k) if k and x.shape is not None else x.shape
    return [_shaped(x, flat), *ins[1:]], outs, {"transB": 1}


def pool(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """AVERAGE / MAX / L2_POOL_2D: the window (``filter_height``, ``filter_width``)."""
    height = _option(options, 12, "<i", 0)
    width = _option(options, 10, "<i", 0)
    if height < 1 or width < 1:
        raise ValueError(f"pool window {height} x {width}: expected at least 1 x 1")
    return ins, outs, {"kernel_shape": [height, width]}


def lrn(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """LOCAL_RESPONSE_NORMALIZATION: ONNX's ``size`` is ``2 * radius + 1``."""
    return ins, outs, {"size": 2 * _option(options, 4, "<i", 0) + 1}


def batch_matmul(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """BATCH_MATMUL: ``adj_x`` is MatMul's ``transA`` (where K is read)."""
    return ins, outs, {"transA": int(bool(_option(options, 4, "<B", 0)))}


def embedding_lookup(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """EMBEDDING_LOOKUP (ids, table): a Gather (table, ids)."""
    return [ins[1], ins[0], *ins[2:]], outs, {}


def as_is(ins: list[TensorView], outs: list[TensorView], options: Table | None) -> Views:
    """Inputs and outputs as stored (element-wise ops, reductions, data movement)."""
    return ins, outs, {}


#: Adapter per TFLite builtin (:func:`as_is` for the others).
ADAPTERS: Mapping[str, Adapter] = MappingProxyType(
    {
        "CONV_2D": conv,
        "DEPTHWISE_CONV_2D": depthwise,
        "TRANSPOSE_CONV": transpose_conv,
        "FULLY_CONNECTED": fully_connected,
        "AVERAGE_POOL_2D": pool,
        "MAX_POOL_2D": pool,
        "L2_POOL_2D": pool,
        "LOCAL_RESPONSE_NORMALIZATION": lrn,
        "BATCH_MATMUL": batch_matmul,
        "EMBEDDING_LOOKUP": embedding_lookup,
    }
)

#: Options union type each adapter reads (a table of another type is ignored).
OPTIONS_TYPES: Mapping[str, int] = MappingProxyType(
    {
        "AVERAGE_POOL_2D": _POOL2D,
        "MAX_POOL_2D": _POOL2D,
        "L2_POOL_2D": _POOL2D,
        "LOCAL_RESPONSE_NORMALIZATION": _LRN,
        "BATCH_MATMUL": _BATCH_MATMUL,
    }
)
