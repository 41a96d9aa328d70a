"""The calibration corpora: small-to-medium ONNX models built with ``onnx.helper``.

Two disjoint sets: :data:`FIT` models tune the cost parameters, :data:`HOLDOUT` models
only ever check them. Every model is a pure function of its recipe (family, sizes and a
weight seed), so the files are rebuilt identically on any machine into a cache folder
instead of being committed.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import SocsimError

OPSET = 17
IR_VERSION = 8  # readable by every onnxruntime >= 1.16


class _Builder:
    """Accumulates the nodes and initialisers of one graph (fp32, batch 1)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def weight(self, shape: tuple[int, ...], scale: float | None = None) -> str:
        from onnx import numpy_helper

        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        std = scale if scale is not None else (2.0 / max(fan_in, 1)) ** 0.5
        name = self.name("w")
        values = (self.rng.standard_normal(shape) * std).astype(np.float32)
        self.inits.append(numpy_helper.from_array(values, name))
        return name

    def const(self, values: np.ndarray) -> str:
        """An initialiser holding exactly ``values`` (fp32)."""
        from onnx import numpy_helper

        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(values, np.float32), name))
        return name

    def node(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, c_in: int, c_out: int, k: int, stride: int = 1, group: int = 1) -> str:
        w = self.weight((c_out, c_in // group, k, k))
        b = self.weight((c_out,), scale=0.01)
        pad = k // 2
        return self.node(
            "Conv",
            [x, w, b],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=group,
        )

    def conv_bn_relu(
        self, x: str, c_in: int, c_out: int, k: int, stride: int = 1, group: int = 1
    ) -> str:
        y = self.conv(x, c_in, c_out, k, stride, group)
        scale, bias = self.const(np.ones(c_out)), self.weight((c_out,), 0.1)
        mean, var = self.weight((c_out,), 0.1), self.const(np.ones(c_out))
        y = self.node("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
        return self.node("Relu", [y])

    def dense(self, x: str, d_in: int, d_out: int, relu: bool) -> str:
        y = self.node("MatMul", [x, self.weight((d_in, d_out))])
        y = self.node("Add", [y, self.weight((d_out,), scale=0.01)])
        return self.node("Relu", [y]) if relu else y

    def model(self, name: str, in_shape: list[int]):
        import onnx
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, in_shape)],
            [helper.make_tensor_value_info(self.nodes[-1].output[0], TensorProto.FLOAT, None)],
            self.inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model.producer_name = "socsim.calibration.corpus"
        # give the output its inferred shape (the checker wants one)
        inferred = onnx.shape_inference.infer_shapes(model)
        out_name = self.nodes[-1].output[0]
        typed = [v for v in inferred.graph.value_info if v.name == out_name]
        model.graph.output[0].CopyFrom(typed[0] if typed else inferred.graph.output[0])
        return model


def _head(b: _Builder, x: str, channels: int, classes: int) -> str:
    y = b.node("GlobalAveragePool", [x])
    y = b.node("Flatten", [y], axis=1)
    w, bias = b.weight((classes, channels)), b.weight((classes,), scale=0.01)
    return b.node("Gemm", [y, w, bias], transB=1)


def plain_cnn(seed: int, width: int, depth: int, res: int, classes: int = 100):
    """VGG-like: 3x3 conv + BN + ReLU stages, a max-pool between stages, a classifier."""
    b = _Builder(seed)
    x, c = "input", 3
    for stage in range(depth):
        c_out = width * 2**stage
        x = b.conv_bn_relu(x, c, c_out, 3)
        x = b.conv_bn_relu(x, c_out, c_out, 3)
        c = c_out
        if stage < depth - 1:
            x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    _head(b, x, c, classes)
    return b, [1, 3, res, res]


def mobilenet_like(seed: int, width: int, blocks: int, res: int, expand: int = 4):
    """MobileNetV2-like inverted residuals: 1x1 expand, 3x3 depthwise, 1x1 project."""
    b = _Builder(seed)
    x = b.conv_bn_relu("input", 3, width, 3, stride=2)
    c = width
    for i in range(blocks):
        stride = 2 if i % 2 == 1 else 1
        c_out = c * 2 if stride == 2 else c
        hidden = c * expand
        y = b.conv_bn_relu(x, c, hidden, 1)
        y = b.conv_bn_relu(y, hidden, hidden, 3, stride=stride, group=hidden)
        y = b.conv(y, hidden, c_out, 1)
        x = b.node("Add", [x, y]) if stride == 1 and c_out == c else y
        c = c_out
    _head(b, x, c, 100)
    return b, [1, 3, res, res]


def resnet_like(seed: int, width: int, blocks: int, res: int):
    """ResNet basic blocks: conv-BN-ReLU, conv-BN, identity add, ReLU; stride-2 every other."""
    b = _Builder(seed)
    x = b.conv_bn_relu("input", 3, width, 3, stride=2)
    c = width
    for i in range(blocks):
        if i % 2 == 1:
            x = b.conv_bn_relu(x, c, c * 2, 3, stride=2)
            c *= 2
        y = b.conv_bn_relu(x, c, c, 3)
        y = b.conv(y, c, c, 3)
        x = b.node("Relu", [b.node("Add", [x, y])])
    _head(b, x, c, 100)
    return b, [1, 3, res, res]


def mlp(seed: int, tokens: int, dims: tuple[int, ...]):
    """A token-wise MLP: ``tokens`` rows through dense + ReLU layers."""
    b = _Builder(seed)
    x = "input"
    for i, (d_in, d_out) in enumerate(itertools.pairwise(dims)):
        x = b.dense(x, d_in, d_out, relu=i < len(dims) - 2)
    return b, [1, tokens, dims[0]]


def transformer(seed: int, tokens: int, d_model: int, layers: int, ff_mult: int = 4):
    """Single-head pre-norm encoder layers: attention (QK^T, softmax, V) and an FFN."""
    b = _Builder(seed)
    x = "input"
    for _ in range(layers):
        h = _layer_norm(b, x, d_model)
        q = b.node("MatMul", [h, b.weight((d_model, d_model))])
        k = b.node("MatMul", [h, b.weight((d_model, d_model))])
        v = b.node("MatMul", [h, b.weight((d_model, d_model))])
        scores = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 2, 1])])
        scale = b.const(np.array([1.0 / d_model**0.5]))
        probs = b.node("Softmax", [b.node("Mul", [scores, scale])], axis=-1)
        att = b.node("MatMul", [b.node("MatMul", [probs, v]), b.weight((d_model, d_model))])
        x = b.node("Add", [x, att])
        h = _layer_norm(b, x, d_model)
        h = b.dense(h, d_model, d_model * ff_mult, relu=True)
        h = b.dense(h, d_model * ff_mult, d_model, relu=False)
        x = b.node("Add", [x, h])
    return b, [1, tokens, d_model]


def _layer_norm(b: _Builder, x: str, d: int) -> str:
    gamma, beta = b.const(np.ones(d)), b.weight((d,), 0.1)
    return b.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)


FAMILIES: Mapping[str, Callable[..., tuple[_Builder, list[int]]]] = {
    "plain_cnn": plain_cnn,
    "mobilenet_like": mobilenet_like,
    "resnet_like": resnet_like,
    "mlp": mlp,
    "transformer": transformer,
}


@dataclass(frozen=True)
class Recipe:
    """One corpus model: a family builder and its arguments (``seed`` included)."""

    name: str
    family: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise SocsimError(
                f"corpus model '{self.name}': unknown family '{self.family}'; "
                f"valid: {', '.join(FAMILIES)}"
            )

    def build(self):
        """The ``onnx.ModelProto``."""
        builder, in_shape = FAMILIES[self.family](**self.args)
        return builder.model(self.name, in_shape)


def _r(name: str, family: str, **args: Any) -> Recipe:
    return Recipe(name, family, args)


#: Models the fit may use.
FIT: tuple[Recipe, ...] = (
    _r("fit_cnn_w16_d3_r64", "plain_cnn", seed=11, width=16, depth=3, res=64),
    _r("fit_cnn_w32_d2_r48", "plain_cnn", seed=12, width=32, depth=2, res=48),
    _r("fit_cnn_w8_d4_r96", "plain_cnn", seed=13, width=8, depth=4, res=96),
    _r("fit_mbn_w16_b4_r96", "mobilenet_like", seed=21, width=16, blocks=4, res=96),
    _r("fit_mbn_w8_b6_r128", "mobilenet_like", seed=22, width=8, blocks=6, res=128),
    _r("fit_res_w16_b4_r64", "resnet_like", seed=31, width=16, blocks=4, res=64),
    _r("fit_res_w24_b2_r96", "resnet_like", seed=32, width=24, blocks=2, res=96),
    _r("fit_mlp_t64_256", "mlp", seed=41, tokens=64, dims=(256, 512, 512, 128)),
    _r("fit_mlp_t16_1024", "mlp", seed=42, tokens=16, dims=(1024, 1024, 256)),
    _r("fit_tf_t64_d128_l2", "transformer", seed=51, tokens=64, d_model=128, layers=2),
    _r("fit_tf_t32_d256_l1", "transformer", seed=52, tokens=32, d_model=256, layers=1),
)

#: Models only validation may use; never fitted on.
HOLDOUT: tuple[Recipe, ...] = (
    _r("hold_cnn_w24_d3_r56", "plain_cnn", seed=111, width=24, depth=3, res=56),
    _r("hold_cnn_w12_d4_r80", "plain_cnn", seed=112, width=12, depth=4, res=80),
    _r("hold_mbn_w12_b5_r112", "mobilenet_like", seed=121, width=12, blocks=5, res=112),
    _r("hold_mbn_w24_b3_r80", "mobilenet_like", seed=122, width=24, blocks=3, res=80),
    _r("hold_res_w20_b3_r80", "resnet_like", seed=131, width=20, blocks=3, res=80),
    _r("hold_mlp_t32_768", "mlp", seed=141, tokens=32, dims=(768, 768, 384, 192)),
    _r("hold_tf_t48_d192_l2", "transformer", seed=151, tokens=48, d_model=192, layers=2),
)

CORPORA: Mapping[str, tuple[Recipe, ...]] = {"fit": FIT, "holdout": HOLDOUT}


def model_digest(model) -> str:
    """SHA-256 of the serialised model (identical recipes give identical digests)."""
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


def assert_disjoint(fit: tuple[Recipe, ...], holdout: tuple[Recipe, ...]) -> None:
    """Raise when a fit model and a hold-out model share a name, a recipe or a file digest.

    Raises
    ------
    SocsimError
        Naming the shared model.
    """
    shared = {r.name for r in fit} & {r.name for r in holdout}
    if shared:
        raise SocsimError(f"fit and hold-out corpora share model name(s) {sorted(shared)}")
    fit_recipes = {(r.family, tuple(sorted(r.args.items()))): r.name for r in fit}
    for r in holdout:
        key = (r.family, tuple(sorted(r.args.items())))
        if key in fit_recipes:
            raise SocsimError(f"hold-out '{r.name}' is the same recipe as fit '{fit_recipes[key]}'")


def build_corpus(corpus: str, cache_dir: Path, names: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write the corpus's models (or only ``names``) into ``cache_dir``; name -> file.

    A file already cached with the same digest is kept (the build is deterministic).
    """
    import onnx

    if corpus not in CORPORA:
        raise SocsimError(f"unknown corpus '{corpus}'; valid: {', '.join(CORPORA)}")
    assert_disjoint(FIT, HOLDOUT)
    recipes = CORPORA[corpus]
    if names:
        known = {r.name for r in recipes}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SocsimError(
                f"corpus '{corpus}' has no model(s) {unknown}; valid: {', '.join(sorted(known))}"
            )
        recipes = tuple(r for r in recipes if r.name in names)
    cache_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for recipe in recipes:
        model = recipe.build()
        path = cache_dir / f"{recipe.name}.onnx"
        data = model.SerializeToString(deterministic=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        paths[recipe.name] = path
        onnx.checker.check_model(model)
    return paths
