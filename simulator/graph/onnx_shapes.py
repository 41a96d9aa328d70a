"""Static shapes of every tensor of an ONNX graph, for the importer.

ONNX's own shape inference runs first (``strict_mode``, with data propagation so
shape-computing subgraphs resolve). It stops at ops it has no schema for, such as the
``com.microsoft`` ones onnxruntime writes into an optimized model, and leaves every
tensor downstream unknown; a second pass walks the nodes in order and infers the rest
node by node (:data:`SHAPE_RULES` for the contrib ops, ONNX's
per-node inference for the standard ones).

"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import onnx
from onnx import shape_inference

from simulator.errors import ModelError
from simulator.graph.onnx_contrib import CONTRIB_SHAPES
from simulator.graph.onnx_view import NodeView, Shape, TensorView
from simulator.graph.view_build import tensor_elements


# -- shapes of the ops ONNX's shape inference does not know --------------------------
def _conv_shape(x: Shape, w: Shape, node: NodeView) -> Shape:
    spatial = len(x) - 2
    kernel = node.attr("kernel_shape") or list(w[2:])
    strides = node.attr("strides") or [1] * spatial
    dilations = node.attr("dilations") or [1] * spatial
    pads = node.attr("pads") or [0] * (2 * spatial)
    auto_pad = node.attr("auto_pad", "NOTSET")
    out = []
    for i in range(spatial):
        extent = dilations[i] * (kernel[i] - 1) + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-x[2 + i] // strides[i]))
        elif auto_pad == "VALID":
            out.append((x[2 + i] - extent) // strides[i] + 1)
        else:
            total = x[2 + i] + pads[i] + pads[i + spatial]
            out.append((total - extent) // strides[i] + 1)
    return (x[0], w[0], *out)


def _matmul_shape(a: Shape, b: Shape, node: NodeView) -> Shape:
    if node.attr("transA", 0):
        a = (*a[:-2], a[-1], a[-2])
    if node.attr("transB", 0):
        b = (*b[:-2], b[-1], b[-2])
    if len(a) == 1:
        return (*b[:-2], b[-1])
    batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(b) > 1 else ()
    return (*batch, a[-2], b[-1]) if len(b) > 1 else a[:-1]


def _gemm_shape(a: Shape, b: Shape, node: NodeView) -> Shape:
    m = a[1] if node.attr("transA", 0) else a[0]
    n = b[0] if node.attr("transB", 0) else b[1]
    return (m, n)


ShapeRule = Callable[[NodeView], list[Shape]]


def _with(inputs: Sequence[int], rule: Callable[..., Shape]) -> ShapeRule:
    return lambda node: [rule(*(node.shape_of(i) for i in inputs), node)]


def _same(index: int) -> ShapeRule:
    return lambda node: [node.shape_of(index)]


def _broadcast(*indices: int) -> ShapeRule:
    return lambda node: [tuple(np.broadcast_shapes(*(node.shape_of(i) for i in indices)))]


def _global_pool(node: NodeView) -> list[Shape]:
    x = node.shape_of(0)
    if node.attr("channels_last", 0):
        return [(x[0], *([1] * (len(x) - 2)), x[-1])]
    return [(*x[:2], *([1] * (len(x) - 2)))]


def _qlinear_concat(node: NodeView) -> list[Shape]:
    parts = [node.shape_of(i) for i in range(2, len(node.inputs), 3)]
    axis = int(node.attr("axis", 0)) % len(parts[0])
    out = list(parts[0])
    out[axis] = sum(p[axis] for p in parts)
    return [tuple(out)]


#: Output shapes of ``com.microsoft`` ops that ``onnx.shape_inference`` leaves unknown.
SHAPE_RULES: Mapping[str, ShapeRule] = MappingProxyType(
    {
        "FusedConv": _with((0, 1), _conv_shape),
        "QLinearConv": _with((0, 3), _conv_shape),
        "FusedGemm": _with((0, 1), _gemm_shape),
        "QGemm": _with((0, 3), _gemm_shape),
        "FusedMatMul": _with((0, 1), _matmul_shape),
        "QLinearAdd": _broadcast(0, 3),
        "QLinearMul": _broadcast(0, 3),
        "QLinearSigmoid": _same(0),
        "QLinearLeakyRelu": _same(0),
        "QLinearGlobalAveragePool": _global_pool,
        "QLinearConcat": _qlinear_concat,
        "Gelu": _same(0),
        **CONTRIB_SHAPES,
    }
)


#: ONNX domains whose ops ONNX's shape inference knows.
STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


def fix_batch(model: onnx.ModelProto, batch: int, label: str) -> None:
    """Set the leading dimension of every graph input to ``batch`` (in place).

    Raises
    ------
    ModelError
        When ``batch < 1``, when ``batch != 1`` but no input has a dynamic first
        dimension (a fixed first dimension is the model's own), or when an input has a
        dynamic dimension other than the first.
    """
    if batch < 1:
        raise ModelError(f"batch must be >= 1, got {batch}", label)
    inits = {t.name for t in model.graph.initializer}
    dynamic = False
    for value in model.graph.input:
        if value.name in inits or not value.type.tensor_type.HasField("shape"):
            continue
        for position, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value"):  # only a named or unknown dimension is dynamic
                if dim.dim_value < 1:
                    raise ModelError(
                        f"graph input '{value.name}' has dimension {position} = "
                        f"{dim.dim_value}; a dimension must be >= 1 (a dynamic one is named, "
                        "e.g. 'N', or left unknown)",
                        label,
                    )
                continue
            if position > 0:
                raise ModelError(
                    f"graph input '{value.name}' has a dynamic dimension "
                    f"{position} ('{dim.dim_param}'); only the batch (first) dimension "
                    "can be fixed at import",
                    label,
                )
            dim.Clear()
            dim.dim_value = batch
            dynamic = True
    if batch != 1 and not dynamic:
        raise ModelError(
            f"batch={batch} asked for, but no graph input has a dynamic batch dimension",
            label,
        )
    for value in model.graph.input:  # before ONNX's inference multiplies them
        if (shape := _static(value.type)) is not None:
            tensor_elements(shape, f"graph input '{value.name}'", label)
    # declared shapes elsewhere may still name the symbolic batch: infer them anew
    del model.graph.value_info[:]
    for value in model.graph.output:
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.Clear()


def _static(type_proto: onnx.TypeProto) -> Shape | None:
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = tensor.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        return None
    return tuple(int(d.dim_value) for d in dims)


#: Initializers with more raw bytes than this are weights to shape inference: it reads
#: their type and dims, never their values (the small integer tensors data propagation
#: reads, such as a Reshape's shape, stay in).
WEIGHT_BYTES = 1024


def infer(model: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """ONNX shape inference, strict; its failures become :class:`ModelError`.

    ONNX's inference serializes the whole model into C++ and parses the result back,
    weights included: VGG-19's 575 MB took 2.9-7.6 s that way. A graph without
    subgraphs or functions is inferred with its weights' bytes set aside and gets the
    inferred shapes (its ``value_info`` and outputs) back: 0.9-1.1 s, the same model out
    (2026-12-07/08, four tries each, a freshly loaded model). The weights are put back
    whatever happens.
    """
    if model.functions or any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for n in model.graph.node
        for a in n.attribute
    ):
        return _infer(model, label)
    weights = {}
    for i, tensor in enumerate(model.graph.initializer):
        if len(tensor.raw_data) > WEIGHT_BYTES:
            weights[i] = tensor.raw_data
            tensor.ClearField("raw_data")
    try:
        shaped = _infer(model, label).graph
    finally:
        for i, data in weights.items():
            model.graph.initializer[i].raw_data = data
    del model.graph.value_info[:]
    model.graph.value_info.extend(shaped.value_info)
    for output, inferred in zip(model.graph.output, shaped.output, strict=True):
        output.CopyFrom(inferred)
    return model


def _infer(model: onnx.ModelProto, label: str) -> onnx.ModelProto:
    try:
        return shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise ModelError(f"ONNX shape inference failed: {exc}", label) from None


def constants(model: onnx.ModelProto) -> frozenset[str]:
    """Names of the constant tensors: initializers and Constant-node outputs."""
    names = {t.name for t in model.graph.initializer}
    names.update(n.output[0] for n in model.graph.node if n.op_type == "Constant" and n.output)
    return frozenset(names)


def resolve(
    model: onnx.ModelProto, nodes: list[tuple[str, onnx.NodeProto]], label: str
) -> dict[str, Shape]:
    """Static shape of every tensor the graph's ``(name, node)`` pairs read or write.

    Raises
    ------
    ModelError
        Naming the node and tensor whose shape stays unknown.
    """
    g = model.graph
    types: dict[str, onnx.TypeProto] = {}
    for value in (*g.input, *g.value_info, *g.output):
        types[value.name] = value.type
    for t in g.initializer:
        types[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    shapes = {name: s for name, tp in types.items() if (s := _static(tp)) is not None}
    opsets = list(model.opset_import)
    versions = {o.domain: o.version for o in opsets}
    inits = {t.name: t for t in g.initializer}
    for name, node in nodes:
        missing = [o for o in node.output if o and o not in shapes]
        if not missing:
            continue
        if node.op_type in SHAPE_RULES:
            view = _view(name, node, shapes)
            try:
                outs = SHAPE_RULES[node.op_type](view)
            except (ValueError, IndexError, TypeError) as exc:
                raise ModelError(f"node '{name}' ({node.op_type}): {exc}", label) from None
            elem = types[node.input[0]].tensor_type.elem_type if node.input[0] in types else 1
            for out, shape in zip(node.output, outs, strict=False):
                shapes[out] = tuple(int(d) for d in shape)
                types[out] = onnx.helper.make_tensor_type_proto(elem, list(shape))
        elif node.domain in STANDARD_DOMAINS and all(i in types for i in node.input if i):
            try:
                schema = onnx.defs.get_schema(node.op_type, versions.get(node.domain, 1), "")
                inferred = shape_inference.infer_node_outputs(
                    schema,
                    node,
                    {i: types[i] for i in node.input if i},
                    {i: inits[i] for i in node.input if i in inits},
                    opset_imports=opsets,
                )
            except Exception as exc:  # onnx's C++ inference raises several types
                raise ModelError(f"node '{name}' ({node.op_type}): {exc}", label) from None
            for out, tp in inferred.items():
                types[out] = tp
                if (s := _static(tp)) is not None:
                    shapes[out] = s
    for tensor, shape in shapes.items():  # byte counts and FLOPs stay exact
        tensor_elements(shape, f"tensor '{tensor}'", label)
    return shapes


def _view(name: str, node: onnx.NodeProto, shapes: Mapping[str, Shape]) -> NodeView:
    return NodeView(
        name,
        node.op_type,
        {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute},
        tuple(TensorView(i, shapes.get(i)) for i in node.input),
        tuple(TensorView(o, shapes.get(o)) for o in node.output),
    )
