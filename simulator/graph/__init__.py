"""Model graphs: operators, DAGs, the model zoo and inline (YAML) models."""

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
    "zoo_names",
    "zoo_options",
    "zoo_table",
]


def __getattr__(name: str):
    """``load_onnx`` on first use: importing onnx is slow and most runs do not need it."""
    if name == "load_onnx":
        from simulator.graph.onnx_import import load_onnx

        return load_onnx
    raise AttributeError(f"module 'simulator.graph' has no attribute '{name}'")
