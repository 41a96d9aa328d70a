"""Model graphs: operators, DAGs, the model zoo and inline (YAML) models."""

from typing import Any

from simulator.graph.model import DTYPE_BYTES, OP_KINDS, Edge, ModelGraph, Op
from simulator.graph.zoo import build_zoo_model, zoo_names, zoo_options, zoo_table

__all__ = [
    "DTYPE_BYTES",
    "OP_KINDS",
    "Edge",
    "ModelGraph",
    "Op",
    "build_zoo_model",
    "load_onnx",
    "load_tflite",
    "zoo_names",
    "zoo_options",
    "zoo_table",
]


def __getattr__(name: str) -> Any:
    """``load_onnx`` / ``load_tflite`` on first use: importing onnx is slow and most runs
    import no model file."""
    if name == "load_onnx":
        from simulator.graph.onnx_import import load_onnx

        return load_onnx
    if name == "load_tflite":
        from simulator.graph.tflite_import import load_tflite

        return load_tflite
    raise AttributeError(f"module 'simulator.graph' has no attribute '{name}'")
