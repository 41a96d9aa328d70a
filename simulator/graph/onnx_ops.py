"""Per-op-type cost rules for the ONNX importer: ``op_type -> handler``.

A handler reads one ONNX node (its attributes and the shapes of its inputs and
outputs, as a :class:`NodeView`) and returns its :class:`OpCost`: the socsim op kind,
FLOPs, multiply-accumulates and learned parameters. The conventions are those of
:mod:`simulator.graph.layers`, so an imported model and the same zoo model agree:

- a multiply-add is 1 MAC and 2 FLOPs; conv / fc / matmul have ``flops = 2 * macs``
  (bias adds are not counted);
- ops without multiply-adds have ``macs = 0`` and a per-element FLOP count
  (:data:`ACTIVATION_FLOPS`, :data:`simulator.graph.layers.FLOPS_PER_ELEMENT`);
- params are the elements of the weight and bias initializers; BatchNormalization
  counts ``2 * C`` (scale and bias; the running mean and variance are buffers, as in
  torchvision's ``num_params``);
- data movement (Reshape, Transpose, Gather on shapes, ...) costs zero FLOPs; its bytes
  are still counted from the element counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from simulator.graph.layers import FLOPS_PER_ELEMENT
from simulator.graph.onnx_contrib import CONTRIB_HANDLERS
from simulator.graph.onnx_view import Handler, NodeView, OpCost, const_elems

#: FLOPs per output element of activations (documented approximations; ReLU, ReLU6
#: (Clip) and GELU follow :data:`simulator.graph.layers.FLOPS_PER_ELEMENT`).
ACTIVATION_FLOPS: Mapping[str, float] = MappingProxyType(
    {
        "Relu": FLOPS_PER_ELEMENT["relu"],
        "Clip": FLOPS_PER_ELEMENT["relu6"],  # min and max
        "LeakyRelu": 2.0,  # compare, multiply
        "PRelu": 2.0,
        "Sigmoid": 4.0,  # negate, exp, add, divide
        "HardSigmoid": 3.0,  # multiply-add, clip
        "HardSwish": 4.0,  # hard sigmoid and a multiply
        "Tanh": 5.0,
        "Elu": 3.0,
        "Selu": 4.0,
        "Softplus": 3.0,
        "Softsign": 3.0,
        "Gelu": FLOPS_PER_ELEMENT["gelu"],
        "Erf": FLOPS_PER_ELEMENT["gelu"],
        "Exp": 1.0,
        "Log": 1.0,
        "Sqrt": 1.0,
        "Reciprocal": 1.0,
        "Neg": 1.0,
        "Abs": 1.0,
        "Floor": 1.0,
        "Ceil": 1.0,
        "Round": 1.0,
        "Sign": 1.0,
        "Not": 1.0,
        "Sin": 1.0,
        "Cos": 1.0,
        "QLinearSigmoid": 4.0,
        "QLinearLeakyRelu": 2.0,
    }
)


# -- convolution and linear ---------------------------------------------------------
def _conv_cost(node: NodeView, x: int, w: int, b: int | None) -> OpCost:
    """Conv-like node with data input ``x``, weight ``w`` and optional bias ``b``.

    MACs = ``N * C_out * prod(out_spatial) * (C_in / group) * prod(kernel)``.
    """
    w_shape = node.shape_of(w)
    c_in = node.shape_of(x)[1]
    group = int(node.attr("group", 1))
    macs = node.out_elems * math.prod(w_shape[1:])
    weights = (w,) if b is None else (w, b)
    params = const_elems(node, weights)
    kind = "dwconv" if group == c_in and group > 1 else "conv"
    return OpCost(kind, 2.0 * macs, macs, params, conv_attrs(node, x, w, b))


def _has_bias(node: NodeView, index: int | None) -> int:
    """1 when input ``index`` is a learned (constant) bias, else 0 (absent, or a tensor
    computed at run time, which holds no parameters)."""
    bias = node.input(index) if index is not None else None
    return int(bias is not None and bias.is_const)


def conv_attrs(node: NodeView, x: int, w: int, b: int | None) -> dict[str, int]:
    """GraphBuilder's conv shape attrs (``in_channels``, ``out_channels``, ``kernel``,
    ``groups``, ``bias``) of a 2-D conv with a constant kernel; a non-square kh x kw
    kernel (Inception v3's 1 x 7) gets ``kernel_h`` and ``kernel_w`` instead of
    ``kernel`` (:func:`~simulator.graph.shape_attrs.kernel_area` reads either). ``{}`` for
    1-D / 3-D convs and weights computed at run time."""
    weight = node.input(w)
    w_shape = node.shape_of(w)
    if weight is None or not weight.is_const or len(w_shape) != 4:
        return {}
    kh, kw = w_shape[2], w_shape[3]
    kernel = {"kernel": kh} if kh == kw else {"kernel_h": kh, "kernel_w": kw}
    return {
        "in_channels": node.shape_of(x)[1],
        "out_channels": w_shape[0],
        **kernel,
        "groups": int(node.attr("group", 1)),
        "bias": _has_bias(node, b),
    }


def conv(node: NodeView) -> OpCost:
    """Conv: (X, W, B)."""
    return _conv_cost(node, 0, 1, 2)


def conv_integer(node: NodeView) -> OpCost:
    """ConvInteger: (X, W, x_zero_point, w_zero_point); no bias (the zero point of X is
    counted as its params, as for Conv's third input)."""
    cost = _conv_cost(node, 0, 1, 2)
    return OpCost(cost.kind, cost.flops, cost.macs, cost.params, {**cost.attrs, "bias": 0})


def fused_conv(node: NodeView) -> OpCost:
    """com.microsoft FusedConv: a Conv with its activation applied in the epilogue."""
    base = conv(node)
    extra = node.out_elems * ACTIVATION_FLOPS.get(node.attr("activation", "Relu"), 1.0)
    sum_input = node.input(3)  # optional residual Z added before the activation
    if sum_input is not None:
        extra += node.out_elems * FLOPS_PER_ELEMENT["add"]
    return OpCost(base.kind, base.flops + extra, base.macs, base.params, base.attrs)


def qlinear_conv(node: NodeView) -> OpCost:
    """QLinearConv: (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B)."""
    return _conv_cost(node, 0, 3, 8)


def conv_transpose(node: NodeView) -> OpCost:
    """ConvTranspose: every input element is scattered through the kernel.

    MACs = ``N * C_in * prod(in_spatial) * (C_out / group) * prod(kernel)``; W is
    ``(C_in, C_out / group, k...)``.
    """
    w_shape = node.shape_of(1)
    macs = node.shape_of(0)[0] * math.prod(node.shape_of(0)[1:]) * math.prod(w_shape[1:])
    return OpCost("conv", 2.0 * macs, macs, const_elems(node, (1, 2)))


def _matmul_cost(node: NodeView, a: int, b: int, bias: int | None, scale: bool) -> OpCost:
    """Matrix product: MACs = output elements x K; ``fc`` when a factor is constant (a
    weight), ``matmul`` when both are activations; constant factors and bias are params."""
    a_shape = node.shape_of(a)
    k = a_shape[-2] if node.attr("transA", 0) else a_shape[-1]
    macs = node.out_elems * k
    factors = [node.input(i) for i in (a, b)]
    kind = "fc" if any(t is not None and t.is_const for t in factors) else "matmul"
    extra = node.out_elems * FLOPS_PER_ELEMENT["scale"] if scale else 0.0
    params = const_elems(node, (a, b) if bias is None else (a, b, bias))
    return OpCost(kind, 2.0 * macs + extra, macs, params, fc_attrs(node, a, b, bias))


def fc_attrs(node: NodeView, a: int, b: int, bias: int | None) -> dict[str, int]:
    """GraphBuilder's fc shape attrs (``in_features``, ``out_features``, ``bias``) of an
    activation times a constant 2-D weight ``B`` (``(K, N)``, or ``(N, K)`` with
    ``transB``); ``{}`` for other products (two activations, a weight on the left)."""
    left, weight = node.input(a), node.input(b)
    if left is None or left.is_const or weight is None or not weight.is_const:
        return {}
    w_shape = node.shape_of(b)
    if len(w_shape) != 2:
        return {}
    k, n = reversed(w_shape) if node.attr("transB", 0) else w_shape
    return {
        "in_features": k,
        "out_features": n,
        "bias": _has_bias(node, bias),
    }


def gemm(node: NodeView) -> OpCost:
    """Gemm: (A, B, C) with transA / transB."""
    return _matmul_cost(node, 0, 1, 2, scale=False)


def fused_gemm(node: NodeView) -> OpCost:
    """com.microsoft FusedGemm: Gemm plus its activation."""
    base = gemm(node)
    extra = node.out_elems * ACTIVATION_FLOPS.get(node.attr("activation", "Relu"), 1.0)
    return OpCost(base.kind, base.flops + extra, base.macs, base.params, base.attrs)


def matmul(node: NodeView) -> OpCost:
    """MatMul / MatMulInteger: (A, B)."""
    return _matmul_cost(node, 0, 1, None, scale=False)


def fused_matmul(node: NodeView) -> OpCost:
    """com.microsoft FusedMatMul: MatMul with transposes and a scalar ``alpha``."""
    return _matmul_cost(node, 0, 1, None, scale=float(node.attr("alpha", 1.0)) != 1.0)


def qlinear_matmul(node: NodeView) -> OpCost:
    """QLinearMatMul: (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)."""
    return _matmul_cost(node, 0, 3, None, scale=False)


def qgemm(node: NodeView) -> OpCost:
    """com.microsoft QGemm: (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp)."""
    return _matmul_cost(node, 0, 3, 6, scale=False)


# -- per-element ---------------------------------------------------------------------
def activation(node: NodeView) -> OpCost:
    """Activations: :data:`ACTIVATION_FLOPS` per output element (PRelu's slope is a param)."""
    per = ACTIVATION_FLOPS[node.op_type]
    params = const_elems(node, (1,)) if node.op_type == "PRelu" else 0
    return OpCost("activation", node.out_elems * per, 0.0, params)


def elementwise(node: NodeView) -> OpCost:
    """N-ary element-wise arithmetic: ``output elems x (inputs - 1)`` FLOPs (at least 1
    per element); constant operands (a bias, a scale) count as params."""
    present = [i for i in range(len(node.inputs)) if node.input(i) is not None]
    per = max(len(present) - 1, 1) * FLOPS_PER_ELEMENT["add"]
    consts = tuple(i for i in present if node.inputs[i].is_const)
    return OpCost("elementwise", node.out_elems * per, 0.0, const_elems(node, consts))


def qlinear_binary(node: NodeView) -> OpCost:
    """QLinearAdd / QLinearMul: (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)."""
    consts = tuple(i for i in (0, 3) if node.inputs[i].is_const)
    return OpCost("elementwise", float(node.out_elems), 0.0, const_elems(node, consts))


def quantize(node: NodeView) -> OpCost:
    """(De)QuantizeLinear: a scale and a zero-point shift per element; a constant input
    (a quantized weight kept for a QDQ pair) is a param."""
    consts = (0,) if node.inputs[0].is_const else ()
    return OpCost("elementwise", 2.0 * node.out_elems, 0.0, const_elems(node, consts))


def _norm(per_elem: str, params_from: tuple[int, ...]) -> Handler:
    def handler(node: NodeView) -> OpCost:
        per = FLOPS_PER_ELEMENT[per_elem]
        return OpCost("norm", node.out_elems * per, 0.0, const_elems(node, params_from))

    handler.__doc__ = f"Normalisation: {FLOPS_PER_ELEMENT[per_elem]:g} FLOPs per element."
    return handler


def softmax(node: NodeView) -> OpCost:
    """Softmax / LogSoftmax: 5 FLOPs per element (max, subtract, exp, sum, divide)."""
    return OpCost("softmax", node.out_elems * FLOPS_PER_ELEMENT["softmax"])


def lrn(node: NodeView) -> OpCost:
    """LRN: ``2 * size + 3`` FLOPs per element, as :meth:`GraphBuilder.lrn`."""
    return OpCost("lrn", node.out_elems * (2 * int(node.attr("size", 5)) + 3))


# -- pooling and reductions ----------------------------------------------------------
#: Pools and reductions that compare (max, min, arg-max) rather than sum: ``attrs['max']
#: = 1`` (0 for the rest), as GraphBuilder marks its pools; the kernel predictor reads it
#: (3 x 3 stride-1 pools on maps of 4 MB and more, run E of 2026-12-07: max 0.60-0.64 ns
#: per output element, average 0.94-0.95 ns).
COMPARING_POOLS: frozenset[str] = frozenset(
    ("MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin")
)


def pool(node: NodeView) -> OpCost:
    """MaxPool / AveragePool / LpPool: ``prod(kernel)`` FLOPs per output element."""
    flops = float(node.out_elems * math.prod(node.attr("kernel_shape", [1])))
    return OpCost("pool", flops, attrs={"max": int(node.op_type in COMPARING_POOLS)})


def reduce(node: NodeView) -> OpCost:
    """Global pools and Reduce*: one FLOP per input element plus one per output element
    (as :meth:`GraphBuilder.global_avgpool`)."""
    flops = float(node.inputs[0].elems + node.out_elems)
    return OpCost("pool", flops, attrs={"max": int(node.op_type in COMPARING_POOLS)})


# -- data movement -------------------------------------------------------------------
def concat(node: NodeView) -> OpCost:
    """Concat / QLinearConcat: a copy, zero FLOPs."""
    return OpCost("concat")


def reshape(node: NodeView) -> OpCost:
    """Views and copies (Reshape, Transpose, Shape, Gather on shapes, ...): zero FLOPs.
    Their constant inputs (target shapes, indices) are not params."""
    return OpCost("reshape")


def view(node: NodeView) -> OpCost:
    """Squeeze / Unsqueeze / Identity / Dropout: a view (``attrs['view'] = 1``): runtimes
    alias the output to the input and copy nothing, unlike a Transpose or a Split."""
    return OpCost("reshape", attrs={"view": 1})


def flatten(node: NodeView) -> OpCost:
    """Flatten / Reshape: zero FLOPs, a view (see :func:`view`). One that flattens every
    dimension after the batch (``(N, C, ...) -> (N, C x ...)``, channels first) carries
    ``attrs['flatten'] = 1``, as :meth:`GraphBuilder.flatten` does: channel pruning
    passes through it to an fc."""
    shape_in, shape_out = node.inputs[0].shape, node.outputs[0].shape
    flat = (
        shape_in is not None
        and shape_out is not None
        and len(shape_in) > 2
        and shape_out == (shape_in[0], math.prod(shape_in[1:]))
    )
    return OpCost("reshape", attrs={"flatten": 1, "view": 1} if flat else {"view": 1})


def gather(node: NodeView) -> OpCost:
    """Gather from a constant table is an embedding lookup (the table is params);
    otherwise it is data movement."""
    table = node.input(0)
    if table is not None and table.is_const and len(table.shape or ()) >= 2:
        return OpCost("embedding", 0.0, 0.0, table.elems)
    return reshape(node)


def resize(node: NodeView) -> OpCost:
    """Resize / Upsample: one FLOP per output element (nearest costs less, linear more:
    a documented middle); the scales / sizes inputs are not params."""
    return OpCost("elementwise", float(node.out_elems))


def _table() -> dict[str, Handler]:
    table: dict[str, Handler] = {
        "Conv": conv,
        "ConvInteger": conv_integer,
        "FusedConv": fused_conv,
        "QLinearConv": qlinear_conv,
        "ConvTranspose": conv_transpose,
        "Gemm": gemm,
        "FusedGemm": fused_gemm,
        "QGemm": qgemm,
        "MatMul": matmul,
        "MatMulInteger": matmul,
        "FusedMatMul": fused_matmul,
        "QLinearMatMul": qlinear_matmul,
        "QLinearAdd": qlinear_binary,
        "QLinearMul": qlinear_binary,
        "QuantizeLinear": quantize,
        "DequantizeLinear": quantize,
        "DynamicQuantizeLinear": quantize,
        "BatchNormalization": _norm("batchnorm", (1, 2)),
        "LayerNormalization": _norm("layernorm", (1, 2)),
        "InstanceNormalization": _norm("layernorm", (1, 2)),
        "GroupNormalization": _norm("layernorm", (1, 2)),
        "Softmax": softmax,
        "LogSoftmax": softmax,
        "LRN": lrn,
        "MaxPool": pool,
        "AveragePool": pool,
        "LpPool": pool,
        "QLinearAveragePool": pool,
        "Concat": concat,
        "QLinearConcat": concat,
        "Gather": gather,
        "Resize": resize,
        "Upsample": resize,
    }
    table.update(dict.fromkeys(ACTIVATION_FLOPS, activation))
    for name in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where"):
        table[name] = elementwise
    for name in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or"):
        table[name] = elementwise
    for name in ("GlobalAveragePool", "GlobalMaxPool", "QLinearGlobalAveragePool", "ArgMax"):
        table[name] = reduce
    for name in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"):
        table[name] = reduce
    for name in ("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ArgMin"):
        table[name] = reduce
    movement = (
        "Reshape Flatten Transpose Squeeze Unsqueeze Shape Size Identity Dropout Slice "
        "Split Pad Expand Tile Cast CastLike ConstantOfShape Range GatherElements "
        "GatherND ScatterND DepthToSpace SpaceToDepth NonZero TopK"
    )
    table.update(dict.fromkeys(movement.split(), reshape))
    table.update(dict.fromkeys(("Flatten", "Reshape"), flatten))
    table.update(dict.fromkeys(("Squeeze", "Unsqueeze", "Identity", "Dropout"), view))
    table.update(CONTRIB_HANDLERS)
    return table


#: Cost handler per ONNX op type (standard and ``com.microsoft`` domains; the
#: transformer contrib ops are in :mod:`simulator.graph.onnx_contrib`).
HANDLERS: Mapping[str, Handler] = MappingProxyType(_table())
