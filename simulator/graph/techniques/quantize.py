"""Quantization: every op's element type narrowed (fp32 -> fp16 or int8).

Element bytes shrink (:data:`~simulator.graph.model.DTYPE_BYTES`): an op's input,
output and weight bytes, and every edge's bytes, scale by ``new / old`` element bytes
(edges: ``bytes x new // old``, exact for the builder's edges, which are whole
elements). FLOP counts are unchanged; a unit's throughput is its ``peak_gflops`` entry
for the new dtype, and a unit without one cannot run the op (so an int8-only NPU
becomes usable). Ops already at the target width or narrower are left alone: quantizing
never widens a tensor.

Accuracy: the top-1 change of 8-bit quantization per model family, in percentage
points, from Krishnamoorthi 2018, "Quantizing deep convolutional networks for
efficient inference: A whitepaper", arXiv:1806.08342 — Table 4 (post-training,
asymmetric per-channel weights, per-layer activations; ``mode: ptq``) and Table 5
(quantization-aware training, symmetric per-channel; ``mode: qat``), each against the
float column of the same table:

================  =====  ======  =====  ====================
family            float  PTQ     QAT    table row
================  =====  ======  =====  ====================
mobilenet_v1      70.9   70.3    70.7   Mobilenet-v1_1_224
mobilenet_v2      71.9   69.7    71.1   Mobilenet-v2_1_224
resnet50          75.2   75.1    75.0   Resnet-v1_50
resnet18          75.2   75.1    75.0   Resnet-v1_50 (same family, no own row)
================  =====  ======  =====  ====================

Jacob et al. (CVPR 2018, arXiv:1712.05877) report the same order for integer-only
QAT (ResNet-50 76.4 -> 74.9). fp16 is taken as lossless (0 pp): half precision keeps
inference accuracy (Micikevicius et al., ICLR 2018, arXiv:1710.03740, match fp32
even when training in it). Other families (vgg16, alexnet, transformers, inline
models) have no row: their delta is unknown unless ``accuracy_delta`` is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from simulator.errors import ModelError
from simulator.graph.model import DTYPE_BYTES, ModelGraph
from simulator.graph.techniques.base import (
    ACCURACY_DELTA,
    OPS_GLOB,
    TECHNIQUES,
    Technique,
    rebuild,
    select,
)
from simulator.schema import Field, Record, Text

#: Quantization modes: post-training and quantization-aware training.
MODES: tuple[str, ...] = ("ptq", "qat")

#: (float top-1 %, int8 PTQ top-1 %, int8 QAT top-1 %) per family; see the docstring.
INT8_TOP1: Mapping[str, tuple[float, float, float]] = MappingProxyType(
    {
        "mobilenet_v1": (70.9, 70.3, 70.7),
        "mobilenet_v2": (71.9, 69.7, 71.1),
        "resnet50": (75.2, 75.1, 75.0),
        "resnet18": (75.2, 75.1, 75.0),
    }
)


def quantize(graph: ModelGraph, dtype: str = "int8", ops: str = "*") -> ModelGraph:
    """Narrow the element type of the ops matching ``ops`` to ``dtype``.

    Parameters
    ----------
    graph : ModelGraph
    dtype : str
        Target element type, one of :data:`~simulator.graph.model.DTYPE_BYTES`.
    ops : str
        Glob over op names (default: every op).

    Returns
    -------
    ModelGraph
        Same ops, names and edges; narrowed ops have the new dtype, and the edges out
        of them carry ``bytes x new // old``.

    Raises
    ------
    ModelError
        On an unknown dtype, or when no op matches ``ops``.
    """
    if dtype not in DTYPE_BYTES:
        raise ModelError(f"quantize: unknown dtype '{dtype}'; valid: {', '.join(DTYPE_BYTES)}")
    new_bytes = DTYPE_BYTES[dtype]
    old_bytes = {}
    new_ops = []
    chosen = {op.name for op in select(graph, ops, "quantize")}
    for op in graph:
        old_bytes[op.name] = op.element_bytes
        if op.name in chosen and op.element_bytes > new_bytes:
            op = replace(op, dtype=dtype)
        new_ops.append(op)
    narrowed = {op.name: op.element_bytes for op in new_ops}
    edges = [replace(e, bytes=e.bytes * narrowed[e.src] // old_bytes[e.src]) for e in graph.edges()]
    return rebuild(graph, new_ops, edges)


def quantize_accuracy(family: str | None, options: Mapping[str, Any]) -> float | None:
    """Top-1 change (pp) of the quantization: the override, the table, or None."""
    if options.get("accuracy_delta") is not None:
        return options["accuracy_delta"]
    if options.get("dtype", "int8") == "fp16":
        return 0.0
    if options.get("dtype", "int8") == "fp32":
        return 0.0
    row = INT8_TOP1.get(family or "")
    if row is None:
        return None
    fp, ptq, qat = row
    return round((ptq if options.get("mode", "ptq") == "ptq" else qat) - fp, 6)


TECHNIQUES.register(
    "quantize",
    Record(
        {
            "dtype": Field(Text(choices=tuple(DTYPE_BYTES), what="dtype"), default="int8"),
            "mode": Field(
                Text(choices=MODES, what="quantization mode"),
                default="ptq",
                doc="ptq: post-training; qat: quantization-aware training (accuracy table)",
            ),
            "ops": OPS_GLOB,
            "accuracy_delta": ACCURACY_DELTA,
        },
        name="quantize options",
    ),
    doc="narrow element types (fp32 -> fp16 / int8); accuracy from Krishnamoorthi 2018",
)(
    Technique(
        lambda graph, o: quantize(graph, o.get("dtype", "int8"), o.get("ops", "*")),
        quantize_accuracy,
    )
)
