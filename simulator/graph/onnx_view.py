"""What the ONNX importer's per-op handlers see and return.

A :class:`NodeView` is one ONNX node with the static shapes of its inputs and outputs;
a handler (``NodeView -> OpCost``) turns it into the socsim op kind, FLOPs, MACs and
learned parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorView:
    """One input or output of a node.

    Attributes
    ----------
    name : str
        ONNX tensor name ('' for an omitted optional input).
    shape : tuple of int or None
        Static shape including the batch dimension; ``None`` when unknown.
    is_const : bool
        True for initializers and Constant-node outputs (weights, shapes, indices).
    """

    name: str
    shape: Shape | None
    is_const: bool = False

    @property
    def elems(self) -> int:
        return math.prod(self.shape) if self.shape is not None else 0


@dataclass(frozen=True)
class NodeView:
    """An ONNX node with resolved shapes, as the handlers see it."""

    name: str
    op_type: str
    attrs: Mapping[str, Any]
    inputs: tuple[TensorView, ...]
    outputs: tuple[TensorView, ...]

    def input(self, index: int) -> TensorView | None:
        """Input ``index``, or ``None`` when it is omitted."""
        if index < len(self.inputs) and self.inputs[index].name:
            return self.inputs[index]
        return None

    def shape_of(self, index: int) -> Shape:
        """Shape of input ``index``; ValueError when it is omitted or unknown."""
        t = self.input(index)
        if t is None or t.shape is None:
            raise ValueError(f"input {index} has no known shape")
        return t.shape

    def attr(self, key: str, default: Any = None) -> Any:
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value

    @property
    def out_elems(self) -> int:
        return self.outputs[0].elems


@dataclass(frozen=True)
class OpCost:
    """What one node costs: socsim kind, FLOPs, MACs and learned parameters, and the
    shape attributes (``Op.attrs``) the techniques read, as
    :class:`~simulator.graph.layers.GraphBuilder` sets them (empty when unknown)."""

    kind: str
    flops: float = 0.0
    macs: float = 0.0
    params: int = 0
    attrs: Mapping[str, int] = field(default_factory=dict)


Handler = Callable[[NodeView], OpCost]


def const_elems(node: NodeView, indices: Sequence[int]) -> int:
    """Elements of the constant inputs among ``indices`` (learned parameters)."""
    total = 0
    for i in indices:
        t = node.input(i)
        if t is not None and t.is_const:
            total += t.elems
    return total
