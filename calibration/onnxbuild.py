"""Building fp32, batch-1 ONNX graphs with ``onnx.helper``: seeded weights, named nodes.

One :class:`Builder` per model accumulates nodes and initialisers; the layer helpers
follow torchvision's conventions (a conv's padding, BatchNorm epsilon, pooling's
``ceil_mode``), so an architecture written with them has torchvision's parameter and
MAC counts (checked in tests/test_calibration_nets.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.graph.onnx_export import seeded_weight, shape_only

OPSET = 17
IR_VERSION = 8  # readable by every onnxruntime >= 1.16


class Builder:
    """Accumulates the nodes and initialisers of one graph (fp32, batch 1).

    Parameters
    ----------
    seed : int
        Seeds the weights (a model is a pure function of its builder calls and seed).
    weights : bool
        False: weight initialisers carry their shape only, no values (not runnable;
        enough for socsim's importer to count parameters and FLOPs, and fast).
    """

    def __init__(self, seed: int, weights: bool = True):
        self.rng = np.random.default_rng(seed)
        self.weights = weights
        self.nodes: list = []
        self.inits: list = []
        self.count = 0
        self.inputs: list = []

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def input(self, shape: Sequence[int], name: str = "input") -> str:
        """Declare a graph input of ``shape`` (fp32); returns its name."""
        from onnx import TensorProto, helper

        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def weight(self, shape: tuple[int, ...], scale: float | None = None) -> str:
        """A He-initialised fp32 initialiser of ``shape`` (or of std ``scale``)."""
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        std = scale if scale is not None else (2.0 / max(fan_in, 1)) ** 0.5
        name = self.name("w")
        if not self.weights:
            self.inits.append(shape_only(name, shape))
            return name
        self.inits.append(seeded_weight(self.rng, name, tuple(shape), std))
        return name

    def const(self, values: Any, dtype: Any = np.float32) -> str:
        """An initialiser holding exactly ``values``."""
        from onnx import numpy_helper

        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def node(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        """One single-output node; returns its output name (= the node name)."""
        return self.multi(op_type, inputs, 1, **attrs)[0]

    def multi(self, op_type: str, inputs: list[str], outputs: int, **attrs: Any) -> list[str]:
        """One node with ``outputs`` outputs; their names."""
        from onnx import helper

        out = self.name(op_type.lower())
        names = [out] if outputs == 1 else [f"{out}:{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=out, **attrs))
        return names

    # -- layers ----------------------------------------------------------------------
    def conv(
        self,
        x: str,
        c_in: int,
        c_out: int,
        k: int | tuple[int, int],
        stride: int = 1,
        group: int = 1,
        pad: int | None = None,
        bias: bool = True,
    ) -> str:
        """k x k convolution (``k = (kh, kw)``: kh x kw, as Inception v3's 1 x 7 and
        7 x 1), padding ``k // 2`` on each axis unless given."""
        kh, kw = (k, k) if isinstance(k, int) else k
        inputs = [x, self.weight((c_out, c_in // group, kh, kw))]
        if bias:
            inputs.append(self.weight((c_out,), scale=0.01))
        pad_h, pad_w = (kh // 2, kw // 2) if pad is None else (pad, pad)
        return self.node(
            "Conv",
            inputs,
            kernel_shape=[kh, kw],
            strides=[stride, stride],
            pads=[pad_h, pad_w, pad_h, pad_w],
            group=group,
        )

    def bn(self, x: str, c: int, eps: float = 1e-5) -> str:
        """Inference BatchNormalization (2 C learned parameters, 2 C running statistics)."""
        scale, bias = self.const(np.ones(c)), self.weight((c,), 0.1)
        mean, var = self.weight((c,), 0.1), self.const(np.ones(c))
        return self.node("BatchNormalization", [x, scale, bias, mean, var], epsilon=eps)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def conv_bn_relu(
        self,
        x: str,
        c_in: int,
        c_out: int,
        k: int | tuple[int, int],
        stride: int = 1,
        group: int = 1,
        pad: int | None = None,
        relu: bool = True,
        eps: float = 1e-5,
        bias: bool = True,
    ) -> str:
        """conv, BatchNorm, ReLU (``relu=False``: no ReLU)."""
        y = self.bn(self.conv(x, c_in, c_out, k, stride, group, pad, bias), c_out, eps)
        return self.relu(y) if relu else y

    def residual(self, x: str, y: str, c_in: int, c_out: int, stride: int) -> str:
        """ReLU(shortcut + ``y``): the shortcut is ``x``, or a 1x1 conv (stride) + BN of it
        where the shape changes (torchvision's ResNet-family projection)."""
        if stride != 1 or c_in != c_out:
            x = self.conv_bn_relu(x, c_in, c_out, 1, stride, bias=False, relu=False)
        return self.relu(self.node("Add", [x, y]))

    def pool(self, x: str, op: str, k: int, stride: int, pad: int = 0, ceil: bool = False) -> str:
        """``MaxPool`` or ``AveragePool``."""
        return self.node(
            op,
            [x],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            ceil_mode=int(ceil),
        )

    def concat(self, xs: list[str], axis: int = 1) -> str:
        return self.node("Concat", xs, axis=axis)

    def dense(self, x: str, d_in: int, d_out: int, relu: bool) -> str:
        """MatMul + bias Add (+ ReLU) over the last dimension."""
        y = self.node("MatMul", [x, self.weight((d_in, d_out))])
        y = self.node("Add", [y, self.weight((d_out,), scale=0.01)])
        return self.relu(y) if relu else y

    def gemm(self, x: str, d_in: int, d_out: int) -> str:
        """A classifier layer on a ``(1, d_in)`` input: ``Gemm`` with transposed weights."""
        w, bias = self.weight((d_out, d_in)), self.weight((d_out,), scale=0.01)
        return self.node("Gemm", [x, w, bias], transB=1)

    def head(self, x: str, channels: int, classes: int) -> str:
        """Global average pool, flatten, classifier."""
        y = self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)
        return self.gemm(y, channels, classes)

    # -- result ----------------------------------------------------------------------
    def model(self, name: str, in_shape: list[int] | None = None, outputs: list[str] | None = None):
        """The ``onnx.ModelProto``.

        ``in_shape`` declares the one input ``input`` when :meth:`input` was not called;
        the graph outputs are ``outputs`` (default: the last node's first output).
        """
        import onnx
        from onnx import TensorProto, helper

        inputs = self.inputs or [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, list(in_shape or []))
        ]
        names = outputs or [self.nodes[-1].output[0]]
        # output shapes by inference on a weightless twin (initialisers as typed inputs:
        # inferring on hundreds of MB of weights is slow)
        twins = [
            helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in self.inits
        ]
        light = helper.make_model(
            helper.make_graph(self.nodes, name, inputs + twins, [], []),
            opset_imports=[helper.make_opsetid("", OPSET)],
        )
        typed = {v.name: v for v in onnx.shape_inference.infer_shapes(light).graph.value_info}
        graph = helper.make_graph(self.nodes, name, inputs, [typed[n] for n in names], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model.producer_name = "socsim.calibration"
        return model
