"""Model graphs: operators, DAGs, the model zoo and inline (YAML) models."""

from simulator.graph.model import DTYPE_BYTES, OP_KINDS, Edge, ModelGraph, Op

__all__ = ["DTYPE_BYTES", "OP_KINDS", "Edge", "ModelGraph", "Op"]
