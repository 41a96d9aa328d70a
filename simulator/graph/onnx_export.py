"""Export a convolutional :class:`ModelGraph` (the zoo's CNNs) to an ONNX file.

``socsim zoo NAME --onnx FILE`` writes the zoo model as a runnable fp32, batch-1 ONNX
graph with seeded random weights, e.g. to time it with onnxruntime or to calibrate on
it. The graph keeps only what socsim records per op, so layer details are recovered
from the shapes: a conv's stride and padding are the smallest that give its output
size (padding ``k // 2`` first), a pool's window from its FLOPs (``k²`` per output
element; adaptive average pools sum every input once), an activation's function from
its FLOPs per element. A window pool is exported as ``MaxPool``, or ``AveragePool`` when
the op is marked an average pool (``attrs['max'] = 0``, :meth:`GraphBuilder.avgpool`);
adaptive and global pools as ``AveragePool`` / ``GlobalAveragePool``. Re-importing the file with
:func:`simulator.graph.onnx_import.load_onnx` gives the graph's FLOPs and parameters
(tested for every CNN of the zoo).

Transformer graphs (token-wise ``fc``, ``matmul`` between activations) are not
exportable: their head split is a free view socsim does not record.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from simulator.errors import ModelError
from simulator.graph.kind_figures import FLOPS_PER_ELEMENT
from simulator.graph.model import ModelGraph, Op

OPSET = 17
IR_VERSION = 8
EXPORTABLE = frozenset(
    {
        "conv",
        "dwconv",
        "fc",
        "pool",
        "norm",
        "activation",
        "elementwise",
        "concat",
        "reshape",
        "lrn",
        "softmax",
    }
)
#: Distinct random values per weight tensor (larger tensors repeat them).
WEIGHT_BLOCK = 1 << 16


def shape_only(name: str, shape: tuple[int, ...]):
    """An fp32 ``onnx.TensorProto`` with a shape and no values: socsim's importer counts
    its parameters and bytes; onnxruntime cannot run a graph holding it."""
    from onnx import TensorProto

    return TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)


def seeded_weight(rng: np.random.Generator, name: str, shape: tuple[int, ...], std: float):
    """An fp32 ``onnx.TensorProto`` of ``shape``: normal values of standard deviation
    ``std`` from ``rng``, :data:`WEIGHT_BLOCK` of them repeated over a larger tensor.

    Timing does not depend on the values, and repeating one block's bytes builds VGG-16's
    553 MB without the element-wise passes of ``numpy.resize`` and a scaled copy (the same
    bytes as ``np.resize(block, shape) * std``, the rule before 2026-12-08).
    """
    from onnx import TensorProto

    size = math.prod(shape)
    block = rng.standard_normal(min(size, WEIGHT_BLOCK), dtype=np.float32) * np.float32(std)
    raw = block.astype("<f4", copy=False).tobytes()  # ONNX raw_data is little-endian
    whole, rest = divmod(size, block.size) if size else (0, 0)
    return TensorProto(
        name=name, data_type=TensorProto.FLOAT, dims=shape, raw_data=raw * whole + raw[: rest * 4]
    )


def _side(elems: int, channels: int, op: Op) -> int:
    side = math.isqrt(elems // channels)
    if side * side * channels != elems:
        raise ModelError(f"op '{op.name}': output of {elems} elements is not {channels} x H x H")
    return side


def _stride_pad(size: int, out: int, k: int, op: Op) -> tuple[int, int]:
    """The smallest stride (and padding, ``k // 2`` first) mapping ``size`` to ``out``."""
    for stride in range(1, max(size, 1) + 1):
        for pad in (k // 2, *range(k)):
            if (size + 2 * pad - k) // stride + 1 == out and size + 2 * pad >= k:
                return stride, pad
    raise ModelError(f"op '{op.name}': no stride and padding map {size} to {out} with k={k}")


def _window(k: int, stride: int, pad: int) -> dict[str, list[int]]:
    """A square window's ONNX attributes (conv and pooling)."""
    return {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4}


class _Exporter:
    def __init__(self, graph: ModelGraph, seed: int, weights: bool = True):
        from onnx import helper

        self.helper = helper
        self.graph = graph
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.weights = weights

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int) -> str:

        if not self.weights:  # shape only: counts, not runnable
            self.inits.append(shape_only(name, shape))
            return name

        std = (2.0 / max(fan_in, 1)) ** 0.5  # He initialisation
        self.inits.append(seeded_weight(self.rng, name, shape, std))
        return name

    def emit(self, op_type: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(self.helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def export_op(self, op: Op, inputs: list[str]) -> tuple[int, ...]:
        shapes = [self.shapes[i] for i in inputs]
        x = shapes[0]
        kind, name, a = op.kind, op.name, op.attrs
        if kind in ("conv", "dwconv"):
            k, c_in, c_out, groups = a["kernel"], a["in_channels"], a["out_channels"], a["groups"]
            out = _side(op.output_elems, c_out, op)
            stride, pad = _stride_pad(x[-1], out, k, op)
            args = [
                inputs[0],
                self.weight(
                    f"{name}.weight", (c_out, c_in // groups, k, k), c_in // groups * k * k
                ),
            ]
            if a.get("bias"):
                args.append(self.weight(f"{name}.bias", (c_out,), c_out))
            self.emit("Conv", args, name, group=groups, **_window(k, stride, pad))
            return (1, c_out, out, out)
        if kind == "fc":
            d_in, d_out = a["in_features"], a["out_features"]
            if len(x) != 2 or x[1] != d_in:
                if math.prod(x) != d_in:
                    raise ModelError(f"op '{name}': token-wise fc is not exportable")
                inputs = [self.emit("Flatten", inputs, f"{name}.flatten", axis=1)]
            args = [inputs[0], self.weight(f"{name}.weight", (d_out, d_in), d_in)]
            if a.get("bias"):
                args.append(self.weight(f"{name}.bias", (d_out,), d_out))
            self.emit("Gemm", args, name, transB=1)
            return (1, d_out)
        if kind == "pool":
            c = x[1]
            out = _side(op.output_elems, c, op)
            if out == 1:
                self.emit("GlobalAveragePool", inputs, name)
                return (1, c, 1, 1)
            k = math.isqrt(round(op.flops / op.output_elems))
            if k * k * op.output_elems == op.flops:
                stride, pad = _stride_pad(x[-1], out, k, op)
                op_type = "AveragePool" if op.attrs.get("max") == 0 else "MaxPool"
                self.emit(op_type, inputs, name, **_window(k, stride, pad))
            else:  # adaptive average pool: exact for divisible sizes
                k = x[-1] // out
                self.emit("AveragePool", inputs, name, kernel_shape=[k, k], strides=[k, k])
            return (1, c, out, out)
        if kind == "norm":
            c = x[1]
            stats = [self.weight(f"{name}.{s}", (c,), 1) for s in ("scale", "bias")]
            stats += [
                self._const(f"{name}.mean", np.zeros(c)),
                self._const(f"{name}.var", np.ones(c)),
            ]
            self.emit("BatchNormalization", inputs + stats, name)
            return x
        if kind == "activation":
            per = op.flops / max(op.output_elems, 1)
            if per == FLOPS_PER_ELEMENT["relu6"]:
                lo, hi = self._const(f"{name}.min", 0.0), self._const(f"{name}.max", 6.0)
                self.emit("Clip", [inputs[0], lo, hi], name)
            else:
                self.emit("Relu", inputs, name)
            return x
        if kind == "elementwise":
            self.emit("Add" if len(inputs) == 2 else "Sum", inputs, name)
            return x
        if kind == "concat":
            self.emit("Concat", inputs, name, axis=1)
            return (1, sum(s[1] for s in shapes), *x[2:])
        if kind == "reshape":
            self.emit("Flatten", inputs, name, axis=1)
            return (1, math.prod(x[1:]))
        if kind == "lrn":
            size = round((op.flops / op.output_elems - 3) / 2)
            self.emit("LRN", inputs, name, size=size)
            return x
        if kind == "softmax":
            self.emit("Softmax", inputs, name, axis=-1)
            return x
        raise ModelError(f"op '{name}': kind '{kind}' is not exportable")

    def _const(self, name: str, values) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(values, np.float32), name))
        return name

    def run(self):
        from onnx import TensorProto

        graph = self.graph
        bad = sorted({op.kind for op in graph} - EXPORTABLE)
        if bad or any(op.kind == "matmul" for op in graph):
            raise ModelError(
                f"ONNX export covers convolutional graphs; '{graph.name}' has op kinds {bad} "
                f"(exportable: {', '.join(sorted(EXPORTABLE))})"
            )
        (entry,) = graph.entry_ops()
        first = graph.op(entry)
        channels = first.attrs.get("in_channels", 3)
        side = _side(first.input_elems, channels, first)
        in_shape = (1, channels, side, side)
        self.shapes["input"] = in_shape
        for name in graph.order:
            preds = graph.predecessors(name) or ["input"]
            self.shapes[name] = self.export_op(graph.op(name), preds)
        (exit_op,) = graph.exit_ops()
        h = self.helper
        onnx_graph = h.make_graph(
            self.nodes,
            graph.name,
            [h.make_tensor_value_info("input", TensorProto.FLOAT, list(in_shape))],
            [h.make_tensor_value_info(exit_op, TensorProto.FLOAT, list(self.shapes[exit_op]))],
            self.inits,
        )
        model = h.make_model(onnx_graph, opset_imports=[h.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model.producer_name = "socsim zoo --onnx"
        return model


def export_onnx(graph: ModelGraph, seed: int = 0, weights: bool = True):
    """The ``onnx.ModelProto`` of a convolutional ``graph`` (weights seeded by ``seed``).

    ``weights=False`` leaves the weights' values out (shapes only: enough to count
    parameters and FLOPs, quick; not runnable).

    Raises
    ------
    ModelError
        When the graph has ops that are not exportable (transformers) or shapes that
        do not resolve to square feature maps.
    """
    return _Exporter(graph, seed, weights).run()


def write_onnx(graph: ModelGraph, path: Path, seed: int = 0) -> Path:
    """Write :func:`export_onnx` of ``graph`` to ``path`` (bytes identical per seed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(export_onnx(graph, seed).SerializeToString(deterministic=True))
    return path
