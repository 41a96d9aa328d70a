"""Generate the ONNX models of scenarios/models/ deterministically (onnx.helper only).

Run ``python scenarios/models/make_models.py`` to rewrite them; the same onnx version
gives byte-identical files (fixed seeds, fixed IR version and opset). The builders also
produce MobileNetV1 and ResNet-18 (published architectures) for the import tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: IR version and opset written into every file (pinned so files do not change with
#: the installed onnx version).
IR_VERSION = 8
OPSET = 17
HERE = Path(__file__).resolve().parent


def finish(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    """``graph`` as a checked model of ``opset``, stamped as this script's output."""
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        ir_version=IR_VERSION,
        producer_name="socsim make_models.py",
    )
    onnx.checker.check_model(model)
    return model


class Net:
    """A tiny ONNX graph builder tracking channel counts (NCHW, batch dimension 'N')."""

    def __init__(self, name: str, channels: int, size: int, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.channels = {"input": channels}
        self.inputs = [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", channels, size, size])
        ]

    def _weight(self, name: str, shape: tuple[int, ...], scale: float = 0.1) -> str:
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def _node(self, op: str, inputs: list[str], name: str, channels: int, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        self.channels[name] = channels
        return name

    def conv(
        self,
        x: str,
        out: int,
        k: int,
        name: str,
        stride: int = 1,
        pad: int = 0,
        group: int = 1,
        bias: bool = False,
    ) -> str:
        c_in = self.channels[x]
        inputs = [x, self._weight(f"{name}.weight", (out, c_in // group, k, k))]
        if bias:
            inputs.append(self._weight(f"{name}.bias", (out,)))
        return self._node(
            "Conv",
            inputs,
            name,
            out,
            kernel_shape=[k, k],
            strides=[stride] * 2,
            pads=[pad] * 4,
            group=group,
        )

    def bn(self, x: str, name: str) -> str:
        c = self.channels[x]
        names = [self._weight(f"{name}.{p}", (c,)) for p in ("weight", "bias", "running_mean")]
        var = numpy_helper.from_array(
            (1.0 + np.abs(self.rng.standard_normal(c))).astype(np.float32), f"{name}.running_var"
        )
        self.inits.append(var)
        return self._node("BatchNormalization", [x, *names, var.name], name, c, epsilon=1e-5)

    def relu(self, x: str, name: str) -> str:
        return self._node("Relu", [x], name, self.channels[x])

    def add(self, a: str, b: str, name: str) -> str:
        return self._node("Add", [a, b], name, self.channels[a])

    def maxpool(self, x: str, k: int, stride: int, pad: int, name: str) -> str:
        return self._node(
            "MaxPool",
            [x],
            name,
            self.channels[x],
            kernel_shape=[k, k],
            strides=[stride] * 2,
            pads=[pad] * 4,
        )

    def gap(self, x: str, name: str) -> str:
        return self._node("GlobalAveragePool", [x], name, self.channels[x])

    def flatten(self, x: str, name: str) -> str:
        return self._node("Flatten", [x], name, self.channels[x], axis=1)

    def gemm(self, x: str, out: int, name: str) -> str:
        w = self._weight(f"{name}.weight", (out, self.channels[x]))
        b = self._weight(f"{name}.bias", (out,))
        return self._node("Gemm", [x, w, b], name, out, transB=1)

    def softmax(self, x: str, name: str) -> str:
        return self._node("Softmax", [x], name, self.channels[x], axis=-1)

    def model(self, output: str) -> onnx.ModelProto:
        out = helper.make_tensor_value_info(output, TensorProto.FLOAT, ["N", self.channels[output]])
        graph = helper.make_graph(self.nodes, self.name, self.inputs, [out], self.inits)
        return finish(graph)


def conv_bn_relu(
    net: Net,
    x: str,
    out: int,
    k: int,
    name: str,
    stride: int = 1,
    group: int = 1,
    relu: bool = True,
) -> str:
    y = net.bn(net.conv(x, out, k, name, stride, k // 2, group), f"{name}_bn")
    return net.relu(y, f"{name}_relu") if relu else y


def small_cnn(resolution: int = 32, num_classes: int = 10) -> onnx.ModelProto:
    """A small CNN: conv+bn+relu, a depthwise separable block, a residual add, pooling
    and a classifier (Gemm)."""
    net = Net("small_cnn", 3, resolution, seed=1)
    x = conv_bn_relu(net, "input", 16, 3, "conv1", stride=2)
    y = conv_bn_relu(net, x, 16, 3, "dw1", group=16)
    y = conv_bn_relu(net, y, 16, 1, "pw1", relu=False)
    x = net.relu(net.add(x, y, "res1"), "res1_relu")
    x = net.maxpool(x, 2, 2, 0, "pool1")
    x = conv_bn_relu(net, x, 32, 3, "conv2")
    x = net.flatten(net.gap(x, "gap"), "flatten")
    return net.model(net.gemm(x, num_classes, "fc"))


def mobilenet_v1(resolution: int = 224, num_classes: int = 1000) -> onnx.ModelProto:
    """MobileNetV1 (Howard et al. 2017, Table 1), width 1.0: 13 depthwise separable
    blocks, BatchNorm after every conv, no conv biases, a 1024 -> classes Gemm, softmax."""
    net = Net("mobilenet_v1", 3, resolution, seed=2)
    x = conv_bn_relu(net, "input", 32, 3, "conv1", stride=2)
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    blocks += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (out, stride) in enumerate(blocks, start=1):
        c = net.channels[x]
        x = conv_bn_relu(net, x, c, 3, f"conv_dw_{i}", stride=stride, group=c)
        x = conv_bn_relu(net, x, out, 1, f"conv_pw_{i}")
    x = net.flatten(net.gap(x, "avgpool"), "flatten")
    return net.model(net.softmax(net.gemm(x, num_classes, "fc"), "softmax"))


def resnet18(resolution: int = 224, num_classes: int = 1000) -> onnx.ModelProto:
    """ResNet-18 (He et al. 2016; torchvision layout and node names): basic blocks
    [2, 2, 2, 2], 1x1 stride-2 downsample convs, BatchNorm, no conv biases."""
    net = Net("resnet18", 3, resolution, seed=3)

    def conv_bn(x: str, out: int, k: int, stride: int, conv: str, bn: str) -> str:
        return net.bn(net.conv(x, out, k, conv, stride, k // 2), bn)

    x = net.relu(conv_bn("input", 64, 7, 2, "conv1", "bn1"), "relu")
    x = net.maxpool(x, 3, 2, 1, "maxpool")
    for stage, planes in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            p = f"layer{stage}.{block}."
            stride = 2 if stage > 1 and block == 0 else 1
            y = net.relu(conv_bn(x, planes, 3, stride, f"{p}conv1", f"{p}bn1"), f"{p}relu1")
            y = conv_bn(y, planes, 3, 1, f"{p}conv2", f"{p}bn2")
            if stride != 1 or net.channels[x] != planes:
                x = conv_bn(x, planes, 1, stride, f"{p}downsample.0", f"{p}downsample.1")
            x = net.relu(net.add(y, x, f"{p}add"), f"{p}relu2")
    x = net.flatten(net.gap(x, "avgpool"), "flatten")
    return net.model(net.gemm(x, num_classes, "fc"))


def tiny_mlp(features: int = 64, hidden: int = 128, classes: int = 10) -> onnx.ModelProto:
    """An MLP written as MatMul + Add + Relu (what exporters emit for nn.Linear)."""
    rng = np.random.default_rng(4)
    nodes, inits = [], []
    x = "input"
    for i, (d_in, d_out) in enumerate(((features, hidden), (hidden, hidden), (hidden, classes))):
        w = numpy_helper.from_array(
            (rng.standard_normal((d_in, d_out)) * 0.1).astype(np.float32), f"fc{i}.weight"
        )
        b = numpy_helper.from_array(
            (rng.standard_normal(d_out) * 0.1).astype(np.float32), f"fc{i}.bias"
        )
        inits += [w, b]
        nodes.append(helper.make_node("MatMul", [x, w.name], [f"fc{i}_mm"], name=f"fc{i}"))
        nodes.append(
            helper.make_node("Add", [f"fc{i}_mm", b.name], [f"fc{i}_out"], name=f"fc{i}_bias")
        )
        x = f"fc{i}_out"
        if i < 2:
            nodes.append(helper.make_node("Relu", [x], [f"fc{i}_relu"], name=f"fc{i}_relu"))
            x = f"fc{i}_relu"
    nodes.append(helper.make_node("Softmax", [x], ["probs"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes,
        "tiny_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", classes])],
        inits,
    )
    return finish(graph)


def transformer_encoder(
    layers: int = 2, d_model: int = 64, heads: int = 4, d_ff: int = 256, seq_len: int = 16
) -> onnx.ModelProto:
    """Post-LN transformer encoder layers as exporters write them (opset 20): MatMul + Add
    projections, Reshape / Transpose head splits, a scaled scores MatMul, Softmax,
    LayerNormalization and Gelu; node names follow the zoo's ``transformer_encoder``."""
    rng = np.random.default_rng(5)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    d_head = d_model // heads

    def tensor(name: str, data) -> str:
        inits.append(numpy_helper.from_array(np.asarray(data), name))
        return name

    def op(kind: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [name], name=name, **attrs))
        return name

    def linear(x: str, d_in: int, d_out: int, name: str) -> str:
        w = tensor(f"{name}.weight", (rng.standard_normal((d_in, d_out)) * 0.1).astype(np.float32))
        b = tensor(f"{name}.bias", (rng.standard_normal(d_out) * 0.1).astype(np.float32))
        return op("Add", [op("MatMul", [x, w], name), b], f"{name}_bias")

    def norm(x: str, name: str) -> str:
        gamma = tensor(f"{name}.weight", np.ones(d_model, np.float32))
        beta = tensor(f"{name}.bias", np.zeros(d_model, np.float32))
        return op("LayerNormalization", [x, gamma, beta], name, axis=-1)

    split = tensor("split_heads", np.array([0, seq_len, heads, d_head], np.int64))
    merge = tensor("merge_heads", np.array([0, seq_len, d_model], np.int64))
    scale = tensor("scale", np.array(1.0 / np.sqrt(d_head), np.float32))
    x = "input"
    for i in range(layers):
        p = f"layer{i}."
        heads_of = {
            part: op(
                "Reshape",
                [linear(x, d_model, d_model, f"{p}{part}_proj"), split],
                f"{p}{part}_heads",
            )
            for part in ("q", "k", "v")
        }
        q = op("Transpose", [heads_of["q"]], f"{p}q_t", perm=[0, 2, 1, 3])
        k = op("Transpose", [heads_of["k"]], f"{p}k_t", perm=[0, 2, 3, 1])
        v = op("Transpose", [heads_of["v"]], f"{p}v_t", perm=[0, 2, 1, 3])
        scores = op("Mul", [op("MatMul", [q, k], f"{p}scores"), scale], f"{p}scale")
        context = op("MatMul", [op("Softmax", [scores], f"{p}softmax", axis=-1), v], f"{p}context")
        context = op("Transpose", [context], f"{p}context_t", perm=[0, 2, 1, 3])
        context = op("Reshape", [context, merge], f"{p}merge")
        attn = linear(context, d_model, d_model, f"{p}out_proj")
        x = norm(op("Add", [x, attn], f"{p}add1"), f"{p}ln1")
        h = op("Gelu", [linear(x, d_model, d_ff, f"{p}ffn1")], f"{p}gelu")
        h = linear(h, d_ff, d_model, f"{p}ffn2")
        x = norm(op("Add", [x, h], f"{p}add2"), f"{p}ln2")
    graph = helper.make_graph(
        nodes,
        "transformer_encoder",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", seq_len, d_model])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", seq_len, d_model])],
        inits,
    )
    return finish(graph, opset=20)


def small_cnn_fp16() -> onnx.ModelProto:
    """:func:`small_cnn` with float16 weights and activations."""
    model = small_cnn()
    graph = model.graph
    for index, tensor in enumerate(graph.initializer):
        half = numpy_helper.to_array(tensor).astype(np.float16)
        graph.initializer[index].CopyFrom(numpy_helper.from_array(half, tensor.name))
    for value in (*graph.input, *graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    graph.name = "small_cnn_fp16"
    onnx.checker.check_model(model)
    return model


#: The files this script writes, by name.
SHIPPED = {
    "small_cnn.onnx": small_cnn,
    "small_cnn_fp16.onnx": small_cnn_fp16,
    "tiny_mlp.onnx": tiny_mlp,
}


def main(directory: Path = HERE) -> list[Path]:
    """Write every :data:`SHIPPED` model into ``directory``; returns the paths."""
    paths = []
    for filename, builder in SHIPPED.items():
        path = directory / filename
        path.write_bytes(builder().SerializeToString())
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(f"wrote {written} ({written.stat().st_size} bytes)")
