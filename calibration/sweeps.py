"""Kernel sweeps: few-kernel ONNX models over the shapes real CNNs and transformers use.

Each sweep model holds ``KERNELS_PER_MODEL`` independent kernels of one family, each
reading its own graph input and writing its own graph output (so the runtime keeps
them all); the profiler times each kernel. Shapes are drawn deterministically (one
seeded ``numpy`` generator per family) from the ranges of published ImageNet CNNs and
encoders: a network *stage* ``s`` (feature map ``224 / 2^s``, jittered) fixes the
resolution, channels are log-uniform around the stage's typical width (``32 x 2^s``,
x0.25 to x4), kernels and strides from the values those networks use. Every kernel
is costed from the runtime's optimised graph like any other model, so a sweep row
has the same columns and features as a layer of a real network.

Every kernel runs *inside* a small network, as a layer does: each graph input passes
through a ReLU before the kernel reads it, and the kernel's output is reduced by a
``ReduceMax`` before it leaves the graph. A kernel between graph input and output
finds its tensors where the previous run left them (and writes a fresh output): a
standalone 672 x 14 x 14 ReLU took 59 µs that way and 32 µs between two kernels on
this host. The ReLU and ``ReduceMax`` kernels are profiled too but marked as boundary
rows (:func:`calibration.table.network_rows`), which the fits leave out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np

from calibration.onnxbuild import Builder

KERNELS_PER_MODEL = 12
#: Bump when a sweep's graph changes (its recipe key, so cached files are rebuilt);
#: 2: every kernel between a ReLU of its inputs and a ReduceMax of its output.
SWEEP_VERSION = 2
#: Work bounds of one kernel (FLOPs): below, profiler resolution; above, measuring time.
MAX_FLOPS = 1.2e9


def _stage(rng: np.random.Generator, first: int = 0) -> tuple[int, int]:
    """(feature-map side, typical channels) of a random network stage ``first`` to 5."""
    s = int(rng.integers(first, 6))
    side = max(2, round(224 / 2**s * rng.uniform(0.45, 1.1)))
    return side, 32 * 2**s


def _channels(rng: np.random.Generator, typical: int, low: int = 3, high: int = 2048) -> int:
    c = typical * 2 ** rng.uniform(-2, 2)
    return int(np.clip(round(c / 8) * 8 if c > 16 else round(c), low, high))


def _conv(b: Builder, rng: np.random.Generator) -> str:
    for _ in range(100):
        side, typical = _stage(rng)
        k = int(
            rng.choice([1, 1, 3, 3, 3, 5, 7, 11], p=[0.2, 0.15, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05])
        )
        stride = int(rng.choice([1, 2] if k < 7 else [2, 4]))
        c_in = 3 if k >= 7 and rng.random() < 0.5 else _channels(rng, typical)
        c_out = _channels(rng, typical, low=8)
        groups = int(rng.choice([1, 1, 1, 1, 2, 4, 8])) if k > 1 or rng.random() < 0.3 else 1
        while c_in % groups or c_out % groups:
            groups //= 2
        out = (side + 2 * (k // 2) - k) // stride + 1
        flops = 2 * c_out * out * out * c_in // groups * k * k
        if 1e5 <= flops <= MAX_FLOPS and side >= k:
            x = b.input([1, c_in, side, side], b.name("x"))
            y = b.conv(x, c_in, c_out, k, stride, groups)
            return b.relu(y) if rng.random() < 0.7 else y
    raise AssertionError("no conv shape in range")


def _dwconv(b: Builder, rng: np.random.Generator) -> str:
    side, typical = _stage(rng)
    c = _channels(rng, typical * 2, low=16)
    k, stride = int(rng.choice([3, 3, 5])), int(rng.choice([1, 1, 2]))
    x = b.input([1, c, side, side], b.name("x"))
    y = b.conv_bn_relu(x, c, c, k, stride, group=c, relu=rng.random() < 0.7)
    return y


def _fc(b: Builder, rng: np.random.Generator) -> str:
    # classifier heads and VGG/AlexNet-style FC stacks: weights from 0.1 MB to ~400 MB
    d_in = int(2 ** rng.uniform(8, 14.6))
    d_out = int(2 ** rng.uniform(7, 12.1))
    x = b.input([1, d_in], b.name("x"))
    y = b.gemm(x, d_in, d_out)
    return b.relu(y) if rng.random() < 0.5 else y


def _pool(b: Builder, rng: np.random.Generator) -> str:
    side, typical = _stage(rng)
    c = _channels(rng, typical, low=16)
    x = b.input([1, c, side, side], b.name("x"))
    choice = int(rng.integers(0, 4))
    if choice == 0:
        return b.pool(
            x, "MaxPool", 3, 2, pad=int(rng.integers(0, 2)), ceil=bool(rng.integers(0, 2))
        )
    if choice == 1:
        return b.pool(x, "MaxPool", 2, 2)
    if choice == 2:
        return b.pool(x, "AveragePool", 2, 2)
    return b.node("GlobalAveragePool", [x])


def _memory(b: Builder, rng: np.random.Generator) -> str:
    """Concat, residual add, standalone BN + ReLU, channel shuffle, channel split (as
    ShuffleNetV2's ``chunk``, its halves added back), standalone ReLU."""
    side, typical = _stage(rng)
    c = _channels(rng, typical, low=16) // 2 * 2
    x = b.input([1, c, side, side], b.name("x"))
    choice = int(rng.integers(0, 6))
    if choice == 5:
        halves = b.multi("Split", [x, b.const([c // 2, c // 2], "int64")], 2, axis=1)
        return b.node("Add", halves)
    if choice == 0:
        parts = [x] + [b.input([1, c, side, side], b.name("x")) for _ in range(rng.integers(1, 4))]
        return b.concat(parts)
    if choice == 1:
        return b.node("Add", [x, b.input([1, c, side, side], b.name("x"))])
    if choice == 2:
        return b.relu(b.bn(x, c))
    if choice == 3:
        y = b.node("Reshape", [x, b.const([1, 2, c // 2, side, side], "int64")])
        y = b.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
        return b.node("Reshape", [y, b.const([1, c, side, side], "int64")])
    return b.relu(x)


def _concat(b: Builder, rng: np.random.Generator) -> str:
    """Channel concats as real CNNs use them: 2 to 4 branches of their own widths
    (Inception, SqueezeNet's fire modules, ShuffleNet's halves), or a dense block's
    input with 1 to 24 layer outputs of 32 channels (DenseNet); from stage 2 (56 x 56)
    on, where those networks concatenate."""
    side, typical = _stage(rng, first=2)
    if rng.random() < 0.5:
        widths = [_channels(rng, typical, low=16) for _ in range(int(rng.integers(2, 5)))]
    else:
        widths = [_channels(rng, typical * 2, low=32)] + [32] * int(rng.integers(1, 25))
    return b.concat([b.input([1, c, side, side], b.name("x")) for c in widths])


def _token(b: Builder, rng: np.random.Generator) -> str:
    """Transformer kernels: token-wise dense, layer norm, softmax, attention matmuls."""
    tokens = int(2 ** rng.uniform(4, 9))
    d = int(np.clip(round(2 ** rng.uniform(6, 10.6) / 32) * 32, 64, 1536))
    x = b.input([1, tokens, d], b.name("x"))
    choice = int(rng.integers(0, 5))
    if choice == 0:
        return b.dense(x, d, d * int(rng.choice([1, 4])), relu=rng.random() < 0.5)
    if choice == 1:
        gamma, beta = b.const(np.ones(d)), b.weight((d,), 0.1)
        return b.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
    if choice == 2:
        scores = b.input([1, tokens, tokens * int(rng.choice([1, 4]))], b.name("x"))
        return b.node("Softmax", [scores], axis=-1)
    if choice == 3:
        other = b.input([1, d, tokens], b.name("x"))
        return b.node("MatMul", [x, other])
    return b.node("Add", [x, b.input([1, tokens, d], b.name("x"))])


def _narrow(b: Builder, rng: np.random.Generator) -> str:
    """Convolutions whose output is far narrower than their input, as real CNNs reduce:
    DenseNet's growth-rate 3 x 3 (128 -> 32) and its transition and bottleneck 1 x 1s,
    Inception's branch reductions (192 -> 16 to 96), SqueezeNet's squeeze 1 x 1
    (c / 8), ResNet's bottleneck entries (c / 4). ``_conv`` draws input and output widths
    independently around the stage's width, so a 32-channel output at stage 3 or later
    is rare there."""
    for _ in range(100):
        side, typical = _stage(rng, first=2)
        c_in = _channels(rng, typical, low=32)
        c_out = max(8, round(c_in / 2 ** rng.uniform(1, 5) / 8) * 8)
        if rng.random() < 0.3:
            c_out = 32  # DenseNet's growth rate
        k = int(rng.choice([1, 1, 3]))
        flops = 2 * c_out * side * side * c_in * k * k
        if 1e5 <= flops <= MAX_FLOPS and c_out < c_in:
            x = b.input([1, c_in, side, side], b.name("x"))
            y = b.conv(x, c_in, c_out, k, 1)
            return b.relu(y) if rng.random() < 0.7 else y
    raise AssertionError("no narrow conv shape in range")


def _poolsame(b: Builder, rng: np.random.Generator) -> str:
    """3 x 3 stride-1 pools that keep the feature map (Inception's pool branch: max,
    padding 1; Inception v3's average branch)."""
    side, typical = _stage(rng, first=2)
    c = _channels(rng, typical * 2, low=32)
    x = b.input([1, c, side, side], b.name("x"))
    op = "MaxPool" if rng.random() < 0.75 else "AveragePool"
    return b.pool(x, op, 3, 1, pad=1)


def _asym(b: Builder, rng: np.random.Generator) -> str:
    """Factorised 1 x k and k x 1 convolutions, stride 1, the map kept (Inception v3's
    1 x 7 / 7 x 1 pairs at 17 x 17 and its 1 x 3 / 3 x 1 at 8 x 8; ERFNet's and
    Inception v4's the same way), from stage 2 (56 x 56) on."""
    for _ in range(100):
        side, typical = _stage(rng, first=2)
        k = int(rng.choice([3, 5, 7], p=[0.4, 0.2, 0.4]))
        kernel = (1, k) if rng.random() < 0.5 else (k, 1)
        c_in, c_out = _channels(rng, typical, low=16), _channels(rng, typical, low=16)
        flops = 2 * c_out * side * side * c_in * k
        if 1e5 <= flops <= MAX_FLOPS and side >= k:
            x = b.input([1, c_in, side, side], b.name("x"))
            y = b.conv(x, c_in, c_out, kernel, 1)
            return b.relu(y) if rng.random() < 0.7 else y
    raise AssertionError("no factorised conv shape in range")


FAMILIES: Mapping[str, Callable[[Builder, np.random.Generator], str]] = MappingProxyType(
    {
        "conv": _conv,
        "dwconv": _dwconv,
        "fc": _fc,
        "pool": _pool,
        "memory": _memory,
        "token": _token,
        "concat": _concat,
        # appended, so the earlier families' generators (seeded by position) are unchanged
        "narrow": _narrow,
        "poolsame": _poolsame,
        "asym": _asym,
    }
)
#: Sweep models per family (x KERNELS_PER_MODEL kernels each); convolutions dominate
#: CNN latency, so they get the most.
MODELS_PER_FAMILY: Mapping[str, int] = MappingProxyType(
    {
        "conv": 12,
        "dwconv": 6,
        "fc": 3,
        "pool": 3,
        "memory": 6,
        "token": 3,
        "concat": 2,
        "narrow": 3,
        "poolsame": 1,
        "asym": 2,
    }
)


def sweep_names(quick: bool = False) -> tuple[str, ...]:
    """Names of the sweep models (``sweep_<family>_<i>``); ``quick``: one small one."""
    if quick:
        return ("sweep_pool_0",)
    return tuple(f"sweep_{f}_{i}" for f, n in MODELS_PER_FAMILY.items() for i in range(n))


class _InNetwork(Builder):
    """A builder whose graph inputs reach the kernels through a ReLU (see the module
    docstring): ORT fuses no ReLU into the kernel that follows it."""

    def input(self, shape, name: str = "input") -> str:
        return self.relu(super().input(shape, name))


def build_sweep(name: str, seed: int = 0, kernels: int = KERNELS_PER_MODEL):
    """The ``onnx.ModelProto`` of sweep model ``sweep_<family>_<index>``: ``kernels``
    kernels, each between a ReLU of its graph inputs and a ``ReduceMax`` of its output."""
    _, family, index = name.split("_")
    rng = np.random.default_rng([seed, list(FAMILIES).index(family), int(index)])
    b = _InNetwork(int(rng.integers(1 << 31)))
    outs = [b.node("ReduceMax", [FAMILIES[family](b, rng)]) for _ in range(kernels)]
    return b.model(name, outputs=outs)
