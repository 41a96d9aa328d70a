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
    "zoo_names",
    "zoo_options",
    "zoo_table",
]
