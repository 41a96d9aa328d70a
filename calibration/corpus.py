"""The calibration corpora: small-to-medium ONNX models built with ``onnx.helper``.

Two disjoint sets: :data:`FIT` models tune the cost parameters, :data:`HOLDOUT` models
only ever check them. Every model is a pure function of its recipe (family, sizes and a
weight seed), so the files are rebuilt identically on any machine into a cache folder
instead of being committed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from calibration.fitnets import build_fit_net
from calibration.nets import build_net
from calibration.onnxbuild import Builder as _Builder
from calibration.sweeps import SWEEP_VERSION, build_sweep, sweep_names
from simulator.errors import SocsimError

#: Bump when a builder changes: cached model files of another version are rebuilt.
CORPUS_VERSION = 2


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


def _zoo(seed: int, arch: str):
    """A zoo architecture as exported by ``socsim zoo NAME --onnx``."""
    from simulator.graph.onnx_export import export_onnx
    from simulator.graph.zoo import build_zoo_model

    return export_onnx(build_zoo_model(arch), seed)


def _net(seed: int, arch: str, res: int | None = None):
    return build_net(arch, seed, res)


def _fitnet(seed: int, arch: str, res: int = 224):
    return build_fit_net(arch, seed, res)


def _sweep(seed: int, sweep: str, version: int):
    if version != SWEEP_VERSION:
        raise SocsimError(f"sweep '{sweep}': recipe version {version}, builder {SWEEP_VERSION}")
    return build_sweep(sweep, seed)


#: Families whose builder returns a finished ``ModelProto`` (the rest return a builder).
_FINISHED: Mapping[str, Callable[..., Any]] = {
    "zoo": _zoo,
    "net": _net,
    "fitnet": _fitnet,
    "sweep": _sweep,
}
FAMILIES: Mapping[str, Callable[..., Any]] = {
    "plain_cnn": plain_cnn,
    "mobilenet_like": mobilenet_like,
    "resnet_like": resnet_like,
    "mlp": mlp,
    "transformer": transformer,
    **_FINISHED,
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
        if self.family in _FINISHED:
            return FAMILIES[self.family](**self.args)
        builder, in_shape = FAMILIES[self.family](**self.args)
        return builder.model(self.name, in_shape)

    @property
    def key(self) -> str:
        """What the cached file was built from (corpus version, family, arguments)."""
        return json.dumps([CORPUS_VERSION, self.family, dict(self.args)], sort_keys=True)


def _r(name: str, family: str, **args: Any) -> Recipe:
    return Recipe(name, family, args)


#: The zoo's CNNs go to the fit (exported as ``socsim zoo NAME --onnx`` does).
ZOO_FIT = ("alexnet", "vgg16", "resnet18", "resnet50", "mobilenet_v1", "mobilenet_v2")

#: Published architectures of the fit (calibration/fitnets.py), as ``real_<name>``.
REAL_FIT = ("resnext50_32x4d", "regnet_x_400mf", "peleenet", "mobilenet_v3_large", "dpn68")

#: Models the fit may use: kernel sweeps, the zoo's CNNs, published CNNs that are not
#: hold-out families, small synthetic networks.
FIT: tuple[Recipe, ...] = (
    *(_r(n, "sweep", seed=7, sweep=n, version=SWEEP_VERSION) for n in sweep_names()),
    *(_r(f"zoo_{n}", "zoo", seed=3, arch=n) for n in ZOO_FIT),
    *(_r(f"real_{n}", "fitnet", seed=60 + i, arch=n) for i, n in enumerate(REAL_FIT)),
    _r("fit_cnn_w16_d3_r64", "plain_cnn", seed=11, width=16, depth=3, res=64),
    _r("fit_cnn_w32_d2_r48", "plain_cnn", seed=12, width=32, depth=2, res=48),
    _r("fit_cnn_w24_d3_r56", "plain_cnn", seed=111, width=24, depth=3, res=56),
    _r("fit_mbn_w16_b4_r96", "mobilenet_like", seed=21, width=16, blocks=4, res=96),
    _r("fit_mbn_w8_b6_r128", "mobilenet_like", seed=22, width=8, blocks=6, res=128),
    _r("fit_mbn_w24_b3_r80", "mobilenet_like", seed=122, width=24, blocks=3, res=80),
    _r("fit_res_w16_b4_r64", "resnet_like", seed=31, width=16, blocks=4, res=64),
    _r("fit_res_w24_b2_r96", "resnet_like", seed=32, width=24, blocks=2, res=96),
    _r("fit_mlp_t64_256", "mlp", seed=41, tokens=64, dims=(256, 512, 512, 128)),
    _r("fit_mlp_t16_1024", "mlp", seed=42, tokens=16, dims=(1024, 1024, 256)),
    _r("fit_tf_t64_d128_l2", "transformer", seed=51, tokens=64, d_model=128, layers=2),
    _r("fit_tf_t32_d256_l1", "transformer", seed=52, tokens=32, d_model=256, layers=1),
)

#: Real ImageNet architectures (calibration/nets.py) only validation may use; never
#: fitted on. Smallest first, later additions appended (``--quick`` validates on the
#: first).
HOLDOUT: tuple[Recipe, ...] = tuple(
    _r(n, "net", seed=100 + i, arch=n)
    for i, n in enumerate(
        (
            "squeezenet1_1",
            "shufflenet_v2_x1_0",
            "mnasnet1_0",
            "googlenet",
            "densenet121",
            "resnet34",
            "vgg19",
            "inception_v3",  # appended: the others keep their seeds
        )
    )
)
#: ``--quick`` (tests): two small fit models and a sweep model, one hold-out model.
QUICK = {
    "fit": ("fit_cnn_w16_d3_r64", "fit_mlp_t64_256", "sweep_pool_0"),
    "holdout": ("squeezenet1_1",),
}

CORPORA: Mapping[str, tuple[Recipe, ...]] = {"fit": FIT, "holdout": HOLDOUT}


def model_digest(model) -> str:
    """SHA-256 of the serialised model (identical recipes give identical digests)."""
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


def graph_digest(model) -> str:
    """SHA-256 of the architecture: nodes (type, attributes) and weight shapes, not values.

    Two models with this digest equal are the same network whatever their weight seeds.
    """
    h = hashlib.sha256()
    for node in model.graph.node:
        h.update(node.op_type.encode())
        for attr in sorted(node.attribute, key=lambda a: a.name):
            h.update(attr.SerializeToString(deterministic=True))
    for init in sorted(model.graph.initializer, key=lambda t: tuple(t.dims)):
        h.update(repr(tuple(init.dims)).encode())
    for value in model.graph.input:
        h.update(value.SerializeToString(deterministic=True))
    return h.hexdigest()


def assert_disjoint(fit: tuple[Recipe, ...], holdout: tuple[Recipe, ...]) -> None:
    """Raise when a fit model and a hold-out model share a name or a recipe.

    (:func:`build_corpus` also compares architectures by :func:`graph_digest`.)

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


def _cached(recipe: Recipe, cache_dir: Path) -> tuple[Path, str]:
    """The model file of ``recipe`` (built unless cached from the same key), its graph digest."""
    path = cache_dir / f"{recipe.name}.onnx"
    side = cache_dir / f"{recipe.name}.key.json"
    if path.exists() and side.exists():
        meta = json.loads(side.read_text())
        if meta.get("key") == recipe.key:
            return path, meta["graph"]
    model = recipe.build()
    path.write_bytes(model.SerializeToString(deterministic=True))
    digest = graph_digest(model)
    side.write_text(json.dumps({"key": recipe.key, "graph": digest}) + "\n")
    return path, digest


def build_corpus(
    corpus: str,
    cache_dir: Path,
    names: tuple[str, ...] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """Write the corpus's models (or only ``names``) into ``cache_dir``; name -> file.

    Builds are deterministic; a file cached from the same recipe and
    :data:`CORPUS_VERSION` is kept.

    Raises
    ------
    SocsimError
        For an unknown corpus or model, or a built model whose architecture
        (:func:`graph_digest`) equals a model of the other corpus already cached.
    """
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
    paths, digests = {}, {}
    for i, recipe in enumerate(recipes):
        if progress:
            progress(f"{recipe.name} ({i + 1} of {len(recipes)})")
        paths[recipe.name], digests[recipe.name] = _cached(recipe, cache_dir)
    other = "holdout" if corpus == "fit" else "fit"
    for recipe in CORPORA[other]:
        side = cache_dir / f"{recipe.name}.key.json"
        if side.exists():
            theirs = json.loads(side.read_text()).get("graph")
            clash = [n for n, d in digests.items() if d == theirs]
            if clash:
                raise SocsimError(
                    f"{corpus} model {clash[0]} has the architecture of {other} model {recipe.name}"
                )
    return paths
