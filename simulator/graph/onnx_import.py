"""Import an ONNX model as a :class:`~simulator.graph.model.ModelGraph`.

The file is checked (``onnx.checker``), its batch dimension fixed and every tensor's
shape inferred (:mod:`simulator.graph.onnx_shapes`); each node is costed by its
op-type handler (:mod:`simulator.graph.onnx_ops`) and nodes that run as one kernel are
grouped (:mod:`simulator.graph.onnx_fuse`). Graph inputs, initializers and ``Constant``
nodes are not ops. Edges carry the bytes of the tensors between ops. See docs/onnx.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

import networkx as nx
import onnx

from simulator.errors import ModelError
from simulator.graph.model import DTYPE_BYTES, ModelGraph
from simulator.graph.onnx_files import read_onnx_file
from simulator.graph.onnx_fuse import PLANS
from simulator.graph.onnx_ops import HANDLERS
from simulator.graph.onnx_shapes import STANDARD_DOMAINS, constants, fix_batch, infer, resolve
from simulator.graph.onnx_view import NodeView, TensorView
from simulator.graph.view_build import build_graph

#: Domains whose ops the importer knows (standard ONNX and onnxruntime's contrib ops).
DOMAINS = STANDARD_DOMAINS | {"com.microsoft"}
#: ONNX element types that make an imported model's default dtype.
_ELEM_DTYPES = {
    onnx.TensorProto.FLOAT: "fp32",
    onnx.TensorProto.DOUBLE: "fp32",
    onnx.TensorProto.FLOAT16: "fp16",
    onnx.TensorProto.BFLOAT16: "fp16",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "int8",
}
_QUANTIZED = frozenset(
    {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger"}
    | {"MatMulInteger", "QGemm"}
)

Source = str | Path | bytes | onnx.ModelProto


def load_onnx(
    source: Source,
    *,
    batch: int = 1,
    fuse: str = "ort",
    dtype: str | None = None,
    name: str | None = None,
    allowed_dirs: Sequence[Path] | None = None,
) -> ModelGraph:
    """Build a :class:`ModelGraph` from an ONNX model.

    Parameters
    ----------
    source : str, Path, bytes or onnx.ModelProto
        A file path, the serialized model, or a loaded model (not modified).
    batch : int
        Value of the graph inputs' dynamic first (batch) dimension.
    fuse : {'ort', 'none'}
        ``'ort'``: group nodes as onnxruntime fuses them (ORT_ENABLE_EXTENDED, CPU);
        ``'none'``: one op per node (for a model onnxruntime already optimized).
    dtype : str, optional
        Element type of the ops; default from the model (float32 -> fp32,
        float16 -> fp16, quantized int8/uint8 -> int8).
    name : str, optional
        Model name; default the file's stem, else the ONNX graph name.
    allowed_dirs : sequence of Path, optional
        For a file named in a scenario: the directories it and its external data must
        really lie in once opened (:func:`simulator.graph.onnx_files.read_onnx_file`);
        default: external data beside the file.

    Returns
    -------
    ModelGraph
        One op per node or fused group, named after the ONNX node (the anchor node of a
        group; ``<op_type>_<index>`` for unnamed nodes).

    Raises
    ------
    ModelError
        For unreadable or malformed files, unknown op types, shapes that stay
        unknown, duplicate node names, or a bad option; the message names the file.
    """
    label = _label(source)
    _check_options(fuse, dtype, label)
    model = _read(source, label, allowed_dirs)
    name = name or (Path(source).stem if isinstance(source, str | Path) else "")
    return import_model(model, label, batch=batch, fuse=fuse, dtype=dtype, name=name)


def _check_options(fuse: str, dtype: str | None, label: str) -> None:
    if fuse not in PLANS:
        raise ModelError(f"unknown fuse '{fuse}'; valid: {tuple(PLANS)}", label)
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise ModelError(f"unknown dtype '{dtype}'; valid: {tuple(DTYPE_BYTES)}", label)


def import_model(
    model: onnx.ModelProto,
    label: str,
    *,
    batch: int = 1,
    fuse: str = "ort",
    dtype: str | None = None,
    name: str = "",
) -> ModelGraph:
    """:func:`load_onnx` of a model already read (by
    :func:`~simulator.graph.onnx_files.read_onnx_file`, so its bounds are checked), which
    it modifies; ``label`` names the file in errors, ``name`` defaults to the graph's.

    Raises
    ------
    ModelError
        As :func:`load_onnx`.
    """
    _check_options(fuse, dtype, label)
    if not model.HasField("graph") or not model.graph.node:
        raise ModelError("not an ONNX model with a graph of nodes", label)
    _check_wiring(model.graph, label)
    fix_batch(model, batch, label)
    model = infer(model, label)
    model_name = name or model.graph.name or "onnx_model"
    nodes = _named_nodes(model, label)
    shapes = resolve(model, nodes, label)
    consts = constants(model)
    views = [_node_view(n, node, shapes, consts, label) for n, node in nodes]
    outputs = frozenset(o.name for o in model.graph.output)
    plan = PLANS[fuse](views, outputs)
    return build_graph(model_name, views, plan, outputs, dtype or _default_dtype(model), label)


def _label(source: Source) -> str:
    if isinstance(source, str | Path):
        return str(source)
    return "<onnx bytes>" if isinstance(source, bytes) else "<onnx model>"


def _read(source: Source, label: str, allowed: Sequence[Path] | None) -> onnx.ModelProto:
    """Parse and check the model; a copy when ``source`` is a ModelProto."""
    if isinstance(source, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(source)
    elif isinstance(source, str | Path):  # bounded, and external data checked first
        model = read_onnx_file(source, allowed)
    else:
        try:
            model = onnx.load_model_from_string(source)
        except Exception as exc:  # protobuf's DecodeError and friends
            raise ModelError(f"not an ONNX model (protobuf: {exc})", label) from None
    return model


def _check_wiring(graph: onnx.GraphProto, label: str) -> None:
    """Every node input exists and is produced earlier (ONNX graphs are sorted).

    ``onnx.checker`` would also do this, but it rejects graph outputs declared without a
    shape, which onnxruntime (and this importer) accept.
    """
    known = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {""}
    produced = {o for n in graph.node for o in n.output}
    for node in graph.node:
        reader = node.name or node.op_type
        for tensor in node.input:
            if tensor in known:
                continue
            if tensor not in produced:
                message = (
                    f"node '{reader}' reads '{tensor}', which no node, graph input or "
                    "initializer provides"
                )
            elif cycle := _cycle(graph):
                message = f"the graph has a cycle: {cycle}"
            else:
                message = f"node '{reader}' reads '{tensor}' before it is produced (unsorted)"
            raise ModelError(message, label)
        known.update(node.output)


def _cycle(graph: onnx.GraphProto) -> str:
    """A cycle through the graph's nodes as ``a -> b -> a``, or '' when acyclic."""
    g = nx.DiGraph()
    producers = {o: n.name or n.op_type for n in graph.node for o in n.output}
    for node in graph.node:
        for tensor in node.input:
            if tensor in producers:
                g.add_edge(producers[tensor], node.name or node.op_type)
    try:
        edges = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return ""
    return " -> ".join([u for u, _ in edges] + [edges[0][0]])


def _named_nodes(model: onnx.ModelProto, label: str) -> list[tuple[str, onnx.NodeProto]]:
    """Nodes (Constant nodes excepted) with their op names; duplicates are errors."""
    named: list[tuple[str, onnx.NodeProto]] = []
    seen: set[str] = set()
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS:
            continue
        name = node.name or f"{node.op_type}_{index}"
        if node.domain not in DOMAINS or node.op_type not in HANDLERS:
            raise _unknown_op(name, node, label)
        if name in seen:
            raise ModelError(f"duplicate node name '{name}' (op names must be unique)", label)
        seen.add(name)
        named.append((name, node))
    return named


def _node_view(
    name: str,
    node: onnx.NodeProto,
    shapes: dict[str, tuple[int, ...]],
    consts: frozenset[str],
    label: str,
) -> NodeView:
    outputs = list(node.output)
    for position, tensor in enumerate([*node.input, *outputs[:1]]):
        if tensor and tensor not in shapes:
            role = "output" if position == len(node.input) else f"input {position}"
            raise ModelError(
                f"node '{name}' ({node.op_type}): the shape of {role} '{tensor}' is unknown "
                "after shape inference (a dynamic dimension other than the batch?)",
                label,
            )
    return NodeView(
        name,
        node.op_type,
        {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute},
        tuple(TensorView(t, shapes.get(t), t in consts) for t in node.input),
        tuple(TensorView(t, shapes.get(t)) for t in outputs),
    )


def _unknown_op(name: str, node: onnx.NodeProto, label: str) -> ModelError:
    op = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
    near = difflib.get_close_matches(node.op_type, list(HANDLERS), n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    return ModelError(
        f"node '{name}': unsupported op type '{op}'{hint}; supported: "
        f"{', '.join(sorted(HANDLERS))} (domains: {', '.join(sorted(repr(d) for d in DOMAINS))})",
        label,
    )


def _default_dtype(model: onnx.ModelProto) -> str:
    """int8 when the graph is quantized, else the element type of the first input."""
    if any(n.op_type in _QUANTIZED or n.op_type.startswith("QLinear") for n in model.graph.node):
        return "int8"
    inits = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name not in inits:
            return _ELEM_DTYPES.get(value.type.tensor_type.elem_type, "fp32")
    return "fp32"
