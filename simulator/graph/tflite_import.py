"""Import a TensorFlow Lite model (``.tflite`` flatbuffer) as a :class:`ModelGraph`.

The flatbuffer is read by :mod:`simulator.graph.tflite_reader` (bounded, no dependency);
each operator of the main subgraph becomes the ONNX node that computes the same thing
(:mod:`simulator.graph.tflite_ops`), costed by the ONNX importer's handlers and built into
ops and edges by the same code (:func:`simulator.graph.view_build.build_graph`), so a
TFLite model and its ONNX twin get the same kinds, FLOPs, MACs and parameters. TFLite
files are already fused by their converter: each operator is one op, its fused activation
included (as onnxruntime's FusedConv). Constant tensors (weights, biases, shapes) and
operators whose inputs are all constant (the DEQUANTIZE of float16 weights, which TFLite
runs once) are not ops. See docs/onnx.md (section TFLite).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from simulator.errors import ModelError, SocsimError
from simulator.graph.model import DTYPE_BYTES, ModelGraph
from simulator.graph.onnx_fuse import Group, Plan
from simulator.graph.onnx_view import NodeView, TensorView
from simulator.graph.tflite_ops import (
    ACTIVATION_SLOTS,
    ADAPTERS,
    BUILTIN_NAMES,
    FUSED_ACTIVATIONS,
    OPTIONS_TYPES,
    TFLITE_TO_ONNX,
    as_is,
)
from simulator.graph.tflite_reader import (
    FlatbufferError,
    OperatorInfo,
    TensorInfo,
    TfliteGraph,
    read_graph,
)
from simulator.graph.view_build import build_graph, tensor_elements

#: Largest ``.tflite`` file read, bytes (a flatbuffer's offsets are 32-bit: 2 GiB at most).
MAX_TFLITE_FILE_BYTES = 2**31
#: Tensor types that make the default dtype ``int8`` (any quantized tensor) and ``fp16``.
_INT8_TYPES = frozenset({3, 9})  # UINT8, INT8
_FP16_TYPES = frozenset({1, 18})  # FLOAT16, BFLOAT16


def load_tflite(
    source: str | Path | bytes,
    *,
    batch: int = 1,
    dtype: str | None = None,
    name: str | None = None,
    allowed_dirs: Sequence[Path] | None = None,
) -> ModelGraph:
    """Build a :class:`ModelGraph` from a TFLite model.

    Parameters
    ----------
    source : str, Path or bytes
        A ``.tflite`` file path or its bytes.
    batch : int
        Value of a dynamic batch dimension (``shape_signature`` -1 in the first
        dimension); asking for ``batch != 1`` when no input has one is an error.
    dtype : str, optional
        Element type of the ops; default from the model: ``int8`` when a tensor is
        int8/uint8 (full-integer, 16x8 or dynamic-range quantization), ``fp16`` when one is
        float16 (float16 quantization), else ``fp32``.
    name : str, optional
        Model name; default the file's stem, else ``tflite_model``.
    allowed_dirs : sequence of Path, optional
        For a file named in a scenario: the directories it must really lie in once opened.

    Returns
    -------
    ModelGraph
        One op per operator, named after its first output tensor (``<BUILTIN>_<index>``
        when that name is empty or taken).

    Raises
    ------
    ModelError
        For an unreadable file, bytes that are not a TFLite flatbuffer (wrong identifier,
        truncated, corrupt), an unsupported operator (with the nearest supported one), a
        bad quantization, or a bad option; the message names the file.
    """
    label = str(source) if isinstance(source, str | Path) else "<tflite bytes>"
    data = source if isinstance(source, bytes) else read_tflite_file(source, allowed_dirs)
    stem = Path(source).stem if isinstance(source, str | Path) else ""
    return import_tflite(data, label, batch=batch, dtype=dtype, name=name or stem)


def read_tflite_file(path: str | Path, allowed: Sequence[Path] | None) -> bytes:
    """The bytes of ``path``, read once within :data:`MAX_TFLITE_FILE_BYTES` (docs/security.md).

    Raises
    ------
    ModelError
        When the file cannot be read, is too large or lies outside ``allowed``.
    """
    from simulator.spec.paths import read_regular_file  # spec imports graph

    try:
        return read_regular_file(path, MAX_TFLITE_FILE_BYTES, allowed)
    except (OSError, SocsimError) as exc:
        message = str(exc) if isinstance(exc, SocsimError) else exc.strerror or str(exc)
        raise ModelError(f"cannot read the file: {message}", str(path)) from None


def import_tflite(
    data: bytes, label: str, *, batch: int = 1, dtype: str | None = None, name: str = ""
) -> ModelGraph:
    """:func:`load_tflite` of bytes already read; ``label`` names the file in errors."""
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise ModelError(f"unknown dtype '{dtype}'; valid: {tuple(DTYPE_BYTES)}", label)
    try:
        graph = read_graph(data)
        return _import(graph, label, batch, dtype, name or "tflite_model")
    except FlatbufferError as exc:
        raise ModelError(f"not a valid TFLite model: {exc}", label) from None


def _import(graph: TfliteGraph, label: str, batch: int, dtype: str | None, name: str) -> ModelGraph:
    if not graph.operators:
        raise ModelError("the model's main subgraph has no operators", label)
    shapes = _shapes(graph, batch, label)
    _check_wiring(graph, label)
    constants = _fold(graph)
    names = _op_names(graph)
    views: list[NodeView] = []
    groups: list[Group] = []
    for k, op in enumerate(graph.operators):
        if k in constants.folded:
            continue
        view = _view(k, op, names[k], graph, shapes, constants.tensors, label)
        activation = _fused_activation(op)
        if activation is None:
            groups.append(Group(len(views)))
            views.append(view)
            continue
        # the operator writes into its activation, which writes the output tensor
        out = view.outputs[0]
        inner = TensorView(f"{out.name}/pre-activation", out.shape)
        anchor = NodeView(view.name, view.op_type, view.attrs, view.inputs, (inner,))
        act = NodeView(f"{view.name}/{activation}", activation, {}, (inner,), view.outputs)
        groups.append(Group(len(views), fused=(len(views) + 1,)))
        views += [anchor, act]
    outputs = frozenset(_tensor_id(i) for i in graph.outputs)
    chosen = dtype or _default_dtype(graph)
    return build_graph(name, views, Plan(tuple(groups)), outputs, chosen, label)


def _tensor_id(index: int) -> str:
    """Tensors are wired by index: TFLite tensor names may be empty or repeated."""
    return f"#{index}"


def _shapes(graph: TfliteGraph, batch: int, label: str) -> list[tuple[int, ...]]:
    """Every tensor's shape, a dynamic batch set to ``batch``; quantization checked."""
    dynamic = [i for i in graph.inputs if graph.tensors[i].signature[:1] == (-1,)]
    if batch != 1 and not dynamic:
        raise ModelError(
            f"batch={batch} but no input has a dynamic batch dimension (shape_signature "
            "-1 first); the model's first dimension is its own",
            label,
        )
    if batch < 1:
        raise ModelError(f"batch must be at least 1, got {batch}", label)
    shapes = []
    for tensor in graph.tensors:
        shape = tensor.shape
        if tensor.signature[:1] == (-1,) and shape:
            shape = (batch, *shape[1:])
        tensor_elements(shape, f"tensor '{tensor.name}'", label)
        _check_quantization(tensor, shape, label)
        shapes.append(shape)
    return shapes


def _check_quantization(tensor: TensorInfo, shape: tuple[int, ...], label: str) -> None:
    """Per-tensor (one scale) or per-channel (one scale per index of ``axis``)."""
    q = tensor.quantization
    if q is None:
        return
    what = f"tensor '{tensor.name}' ({tensor.type_name})"
    if q.zero_points not in (0, q.scales):
        raise ModelError(f"{what}: {q.scales} scales but {q.zero_points} zero points", label)
    if q.scales > 1:
        if not 0 <= q.axis < len(shape):
            raise ModelError(
                f"{what}: per-channel quantization along dimension {q.axis} of a "
                f"{len(shape)}-D tensor",
                label,
            )
        if q.scales != shape[q.axis]:
            raise ModelError(
                f"{what}: per-channel quantization has {q.scales} scales for the "
                f"{shape[q.axis]} channels of dimension {q.axis} (shape {list(shape)})",
                label,
            )


def _check_wiring(graph: TfliteGraph, label: str) -> None:
    """Every operator reads a constant, a graph input or an earlier operator's output
    (TFLite stores operators in execution order)."""
    available = set(graph.constants) | set(graph.inputs)
    produced = {i for op in graph.operators for i in op.outputs}
    for k, op in enumerate(graph.operators):
        for i in op.inputs:
            if i >= 0 and i not in available:
                tensor = f"tensor {i} '{graph.tensors[i].name}'"
                late = "before it is produced" if i in produced else "which nothing provides"
                raise ModelError(f"operator {k} ({_builtin_name(op)}) reads {tensor} {late}", label)
        available.update(op.outputs)
    missing = [i for i in graph.outputs if i not in available]
    if missing:
        raise ModelError(f"graph output tensor {missing[0]} is produced by no operator", label)


class _Constants:
    """Constant tensors, and the operators folded because all their inputs are constant."""

    def __init__(self, tensors: set[int], folded: set[int]) -> None:
        self.tensors, self.folded = tensors, folded


def _fold(graph: TfliteGraph) -> _Constants:
    constants = set(graph.constants)
    folded: set[int] = set()
    outputs = set(graph.outputs)
    for k, op in enumerate(graph.operators):
        read = [i for i in op.inputs if i >= 0]
        if read and all(i in constants for i in read) and not outputs & set(op.outputs):
            folded.add(k)
            constants.update(op.outputs)
    return _Constants(constants, folded)


def _builtin_name(op: OperatorInfo) -> str:
    if op.builtin < len(BUILTIN_NAMES):
        return BUILTIN_NAMES[op.builtin]
    return f"builtin {op.builtin}"


def _op_names(graph: TfliteGraph) -> list[str]:
    """Each operator's first output tensor's name, ``<BUILTIN>_<index>`` when empty or taken."""
    firsts = [graph.tensors[op.outputs[0]].name if op.outputs else "" for op in graph.operators]
    counts = Counter(firsts)
    names, seen = [], set()
    for k, (op, first) in enumerate(zip(graph.operators, firsts, strict=True)):
        unique = first and counts[first] == 1 and first not in seen
        name = first if unique else f"{_builtin_name(op)}_{k}"
        seen.add(name)
        names.append(name)
    return names


def _view(
    k: int,
    op: OperatorInfo,
    name: str,
    graph: TfliteGraph,
    shapes: list[tuple[int, ...]],
    constants: set[int],
    label: str,
) -> NodeView:
    builtin = _builtin_name(op)
    if builtin not in TFLITE_TO_ONNX:
        raise _unsupported(k, op, name, label)
    if not op.outputs:
        raise ModelError(f"operator {k} '{name}' ({builtin}) has no output", label)

    def view(i: int) -> TensorView:
        if i < 0:
            return TensorView("", None)  # an omitted optional input
        return TensorView(_tensor_id(i), shapes[i], i in constants)

    options = op.options
    wanted = OPTIONS_TYPES.get(builtin)
    if wanted is not None and op.options_type != wanted:
        options = None  # absent or of another type: the schema's defaults
    try:
        inputs, outputs, attrs = ADAPTERS.get(builtin, as_is)(
            [view(i) for i in op.inputs], [view(i) for i in op.outputs], options
        )
    except (ValueError, IndexError) as exc:
        raise ModelError(f"operator {k} '{name}' ({builtin}): {exc}", label) from None
    return NodeView(name, TFLITE_TO_ONNX[builtin], attrs, tuple(inputs), tuple(outputs))


def _fused_activation(op: OperatorInfo) -> str | None:
    """The ONNX activation the operator's ``fused_activation_function`` computes."""
    slot = ACTIVATION_SLOTS.get(op.options_type)
    if slot is None or op.options is None:
        return None
    return FUSED_ACTIVATIONS.get(op.options.scalar(slot, "<b", 0))


def _unsupported(k: int, op: OperatorInfo, name: str, label: str) -> ModelError:
    builtin = _builtin_name(op)
    if builtin == "CUSTOM":
        what = f"custom operator '{op.custom}'"
        near = []
    else:
        what = f"operator type '{builtin}'"
        near = difflib.get_close_matches(builtin, list(TFLITE_TO_ONNX), n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    return ModelError(
        f"operator {k} '{name}': unsupported {what}{hint}; supported: "
        f"{', '.join(sorted(TFLITE_TO_ONNX))}",
        label,
    )


def _default_dtype(graph: TfliteGraph) -> str:
    """int8 when any tensor is (u)int8, fp16 when any is float16, else fp32."""
    types = {t.type for t in graph.tensors}
    if types & _INT8_TYPES:
        return "int8"
    return "fp16" if types & _FP16_TYPES else "fp32"
