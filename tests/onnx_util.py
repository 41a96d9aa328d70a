"""Small ONNX graphs for the importer tests, built with onnx.helper."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / "scenarios" / "models"


def weight(name: str, shape: Sequence[int], seed: int = 0) -> onnx.TensorProto:
    data = np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)
    return numpy_helper.from_array(data, name)


def const(name: str, values, dtype=np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence],
    outputs: Sequence[str],
    inits: Sequence[onnx.TensorProto] = (),
    elem_type: int = TensorProto.FLOAT,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model with graph ``inputs`` (name -> shape, str dims symbolic) and ``outputs``."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, elem_type, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem_type, None) for n in outputs],
        list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def node(op: str, inputs: Sequence[str], output: str, name: str | None = None, **attrs):
    return helper.make_node(
        op, list(inputs), [output], name=output if name is None else name, **attrs
    )


def make_models_module():
    """scenarios/models/make_models.py, imported from its path."""
    path = MODELS_DIR / "make_models.py"
    spec = importlib.util.spec_from_file_location("socsim_make_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
