"""Static shapes of every tensor of an ONNX graph, for the importer.

ONNX's own shape inference runs first (``strict_mode``, with data propagation so
shape-computing subgraphs resolve). It stops at ops it has no schema for, such as the
``com.microsoft`` ones onnxruntime writes into an optimized model, and leaves every
tensor downstream unknown; a second pass walks the nodes in order and infers the rest
node by node (:data:`simulator.graph.onnx_ops.SHAPE_RULES` for the contrib ops, ONNX's
per-node inference for the standard ones).
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx
from onnx import numpy_helper, shape_inference

from simulator.errors import ModelError
from simulator.graph.onnx_ops import SHAPE_RULES, NodeView, Shape, TensorView

#: ONNX domains whose ops ONNX's shape inference knows.
STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


def fix_batch(model: onnx.ModelProto, batch: int, label: str) -> None:
    """Set the leading dimension of every graph input to ``batch`` (in place).

    Raises
    ------
    ModelError
        When ``batch < 1``, when an input has a fixed batch other than ``batch``, or a
        symbolic dimension other than the first.
    """
    if batch < 1:
        raise ModelError(f"batch must be >= 1, got {batch}", label)
    inits = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in inits or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        for position, dim in enumerate(dims):
            fixed = dim.HasField("dim_value") and dim.dim_value > 0
            if position == 0 and not fixed:
                dim.Clear()
                dim.dim_value = batch
            elif position == 0 and dim.dim_value != batch:
                raise ModelError(
                    f"graph input '{value.name}' has a fixed batch of {dim.dim_value}; "
                    f"load it with batch={dim.dim_value}",
                    label,
                )
            elif not fixed:
                raise ModelError(
                    f"graph input '{value.name}' has a dynamic dimension "
                    f"{position} ('{dim.dim_param}'); only the batch (first) dimension "
                    "can be fixed at import",
                    label,
                )
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


def infer(model: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """ONNX shape inference, strict; its failures become :class:`ModelError`."""
    try:
        return shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError
        raise ModelError(f"{label}: ONNX shape inference failed: {exc}", label) from None


def constants(model: onnx.ModelProto) -> dict[str, object]:
    """Initializers and Constant-node outputs as numpy arrays (by tensor name)."""
    values: dict[str, object] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS:
            attr = node.attribute[0]
            values[node.output[0]] = (
                numpy_helper.to_array(onnx.helper.get_attribute_value(attr))
                if attr.name == "value"
                else onnx.helper.get_attribute_value(attr)
            )
    return values


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
            schema = onnx.defs.get_schema(node.op_type, versions.get(node.domain, 1), "")
            try:
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
    return shapes


def _view(name: str, node: onnx.NodeProto, shapes: Mapping[str, Shape]) -> NodeView:
    return NodeView(
        name,
        node.op_type,
        {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute},
        tuple(TensorView(i, shapes.get(i)) for i in node.input),
        tuple(TensorView(o, shapes.get(o)) for o in node.output),
    )
