"""The model zoo: a registry of named model builders and their published figures.

Every model is built from its layer shapes (:mod:`simulator.graph.zoo_cnn`,
:mod:`simulator.graph.zoo_transformer`); the published totals recorded here are what
the tests check the builders against, never what the builders return.

Builders are keyword-only typed functions; :func:`zoo_options` reads their signatures,
so the scenario loader and :func:`build_zoo_model` validate options the same way.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from simulator.errors import ModelError
from simulator.graph.model import DTYPE_BYTES, ModelGraph
from simulator.graph.zoo_cnn import alexnet, mobilenet_v1, mobilenet_v2, resnet18, resnet50, vgg16
from simulator.graph.zoo_squeezenet import squeezenet
from simulator.graph.zoo_transformer import bert_base_encoder, transformer_encoder

_TORCHVISION = "https://pytorch.org/vision/stable/models/generated/torchvision.models.{}.html"
_TV_NOTE = " (num_params; the GFLOPS column counts multiply-adds, i.e. GMACs)"
_MOBILENET_V1 = "Howard et al. 2017, MobileNets, arXiv:1704.04861"


@dataclass(frozen=True)
class PublishedFigure:
    """One published row of totals for a model built with some options.

    Attributes
    ----------
    options : tuple of (str, value) pairs
        Builder options the row refers to (empty: the defaults).
    params : int or None
        Published learned parameters.
    macs : float or None
        Published multiply-accumulates per inference.
    params_tolerance : float
        Allowed absolute difference of params: 0 for exact counts, half the last
        published digit for rounded ones (e.g. 0.05e6 for "4.2M").
    macs_rtol : float
        Allowed relative difference of MACs (published MACs are rounded).
    citation : str
        Where the figures come from.
    """

    options: tuple[tuple[str, Any], ...]
    params: int | None
    macs: float | None
    params_tolerance: float
    macs_rtol: float
    citation: str


@dataclass(frozen=True)
class ZooEntry:
    """A registered zoo model.

    Attributes
    ----------
    name : str
        Registry key (the YAML ``zoo:`` value).
    builder : callable
        Keyword-only function ``(**options, dtype=...) -> ModelGraph``.
    description : str
        One line for ``socsim zoo``.
    source : str
        Citation of the architecture the builder follows.
    published : tuple of PublishedFigure
        Published totals with their citations (may be empty).
    """

    name: str
    builder: Callable[..., ModelGraph]
    description: str
    source: str
    published: tuple[PublishedFigure, ...] = ()


def _torchvision(model: str, params: int, gmacs: float) -> tuple[PublishedFigure, ...]:
    cite = _TORCHVISION.format(model) + _TV_NOTE
    return (PublishedFigure((), params, gmacs * 1e9, 0, 0.01, cite),)


def _mobilenet_v1_rows() -> tuple[PublishedFigure, ...]:
    # Table 6 (width multiplier at 224) and Table 7 (resolution at width 1.0):
    # mult-adds in millions, params in millions rounded to 0.1 M.
    width_rows = ((1.0, 569, 4.2), (0.75, 325, 2.6), (0.5, 149, 1.3), (0.25, 41, 0.5))
    res_rows = ((192, 418, 4.2), (160, 290, 4.2), (128, 186, 4.2))
    rows = [
        PublishedFigure(
            (("width_multiplier", alpha),),
            round(p * 1e6),
            m * 1e6,
            0.05e6,
            0.02,
            f"{_MOBILENET_V1}, Table 6",
        )
        for alpha, m, p in width_rows
    ]
    rows += [
        PublishedFigure(
            (("resolution", res),),
            round(p * 1e6),
            m * 1e6,
            0.05e6,
            0.02,
            f"{_MOBILENET_V1}, Table 7",
        )
        for res, m, p in res_rows
    ]
    return tuple(rows)


_BERT_CITATION = (
    "Devlin et al. 2019, BERT, arXiv:1810.04805 (BERT-base L=12, H=768, A=12); "
    "Hugging Face bert-base-uncased BertModel has 109,482,240 params, of which "
    "embeddings (30522+512+2)*768 + 2*768 = 23,837,184 and pooler 768*768+768 = 590,592"
)

ZOO: Mapping[str, ZooEntry] = MappingProxyType(
    {
        e.name: e
        for e in (
            ZooEntry(
                "alexnet",
                alexnet,
                "AlexNet (torchvision single-tower), chain conv1..pool5, fc6..fc8",
                "torchvision.models.alexnet; Krizhevsky 2014, arXiv:1404.5997",
                _torchvision("alexnet", 61_100_840, 0.71),
            ),
            ZooEntry(
                "vgg16",
                vgg16,
                "VGG-16 configuration D (torchvision), chain of 13 convs and 3 fcs",
                "torchvision.models.vgg16; Simonyan & Zisserman 2015, arXiv:1409.1556",
                _torchvision("vgg16", 138_357_544, 15.47),
            ),
            ZooEntry(
                "resnet18",
                resnet18,
                "ResNet-18 (torchvision), DAG of BasicBlocks with residual adds",
                "torchvision.models.resnet18; He et al. 2016, arXiv:1512.03385",
                _torchvision("resnet18", 11_689_512, 1.81),
            ),
            ZooEntry(
                "resnet50",
                resnet50,
                "ResNet-50 V1.5 (torchvision), DAG of Bottlenecks with residual adds",
                "torchvision.models.resnet50; He et al. 2016, arXiv:1512.03385",
                _torchvision("resnet50", 25_557_032, 4.09),
            ),
            ZooEntry(
                "mobilenet_v1",
                mobilenet_v1,
                "MobileNetV1, depthwise-separable chain; width and resolution multipliers",
                f"{_MOBILENET_V1}, Table 1",
                _mobilenet_v1_rows(),
            ),
            ZooEntry(
                "mobilenet_v2",
                mobilenet_v2,
                "MobileNetV2 (torchvision), inverted residuals with adds, ReLU6",
                "torchvision.models.mobilenet_v2; Sandler et al. 2018, arXiv:1801.04381",
                _torchvision("mobilenet_v2", 3_504_872, 0.30),
            ),
            ZooEntry(
                "squeezenet",
                squeezenet,
                "SqueezeNet 1.0 (torchvision squeezenet1_0), stem + 8 Fire modules + conv head",
                "torchvision.models.squeezenet1_0; Iandola et al. 2016, arXiv:1602.07360",
                _torchvision("squeezenet1_0", 1_248_424, 0.82),
            ),
            ZooEntry(
                "transformer_encoder",
                transformer_encoder,
                "Post-LN transformer encoder stack (default 4 x d256, 4 heads, seq 128)",
                "Vaswani et al. 2017, arXiv:1706.03762; params per layer "
                "4d^2+4d + 2*d*d_ff+d_ff+d + 4d",
            ),
            ZooEntry(
                "bert_base_encoder",
                bert_base_encoder,
                "BERT-base encoder stack (12 x d768, 12 heads, d_ff 3072), no embeddings",
                "Devlin et al. 2019, arXiv:1810.04805",
                (PublishedFigure((), 85_054_464, None, 0, 0.0, _BERT_CITATION),),
            ),
        )
    }
)


def zoo_names() -> list[str]:
    """Registered model names, in registry order."""
    return list(ZOO)


def _entry(name: str) -> ZooEntry:
    try:
        return ZOO[name]
    except (KeyError, TypeError):
        names = zoo_names()
        nearest = difflib.get_close_matches(str(name), names, n=1, cutoff=0.0)
        hint = f"did you mean '{nearest[0]}'? " if nearest else ""
        raise ModelError(f"unknown zoo model '{name}'; {hint}valid: {', '.join(names)}") from None


def zoo_options(name: str) -> dict[str, tuple[Any, Any]]:
    """Options a zoo model accepts, read from its builder's signature.

    Parameters
    ----------
    name : str
        A registered model name.

    Returns
    -------
    dict of str to (annotation, default)
        One item per keyword-only option, e.g. ``{"resolution": (int, 224)}``. ``dtype``
        is not listed: it is :func:`build_zoo_model`'s own argument.

    Raises
    ------
    ModelError
        For an unknown model name (naming the nearest valid one).
    """
    signature = inspect.signature(_entry(name).builder, eval_str=True)
    return {
        p.name: (p.annotation, p.default)
        for p in signature.parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "dtype"
    }


def _coerce(model: str, option: str, annotation: Any, value: Any) -> Any:
    """Check ``value`` against the option's annotation; ints are accepted as floats."""
    if annotation is bool:
        ok = isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif annotation is str:
        ok = isinstance(value, str)
    else:  # an annotation this checker does not know: let the builder judge
        ok = True
    if not ok:
        expected = getattr(annotation, "__name__", str(annotation))
        raise ModelError(
            f"option '{option}' must be {expected}, got {value!r} ({type(value).__name__})", model
        )
    return value


def build_zoo_model(name: str, dtype: str = "fp32", **options: Any) -> ModelGraph:
    """Build a registered zoo model.

    Parameters
    ----------
    name : str
        A registered model name (see :func:`zoo_names`).
    dtype : str
        Element type of activations and weights: one of ``fp32``, ``fp16``, ``int8``.
    **options
        Builder options (see :func:`zoo_options`), e.g. ``width_multiplier=0.5``.

    Returns
    -------
    ModelGraph
        The model, named ``name``.

    Raises
    ------
    ModelError
        For an unknown name (naming the nearest one), an unknown dtype, an unknown
        option (listing the valid ones) or an invalid option value.
    """
    entry = _entry(name)
    if dtype not in DTYPE_BYTES:
        raise ModelError(f"unknown dtype '{dtype}'; valid: {', '.join(DTYPE_BYTES)}", name)
    valid = zoo_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        # a low cutoff so that truncations (width -> width_multiplier) still get a hint
        nearest = difflib.get_close_matches(unknown[0], list(valid), n=1, cutoff=0.4)
        hint = f" (did you mean '{nearest[0]}'?)" if nearest else ""
        raise ModelError(
            f"unknown option(s) {', '.join(unknown)}{hint}; "
            f"valid options: {', '.join(valid) or '(none)'}",
            name,
        )
    kwargs = {k: _coerce(name, k, valid[k][0], v) for k, v in options.items()}
    return entry.builder(dtype=dtype, **kwargs)


def zoo_table():
    """One row per zoo model built with default options (for ``socsim zoo``).

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``ops`` (count), ``params`` (learned parameters), ``macs``
        (multiply-accumulates per inference) and ``description``.
    """
    import pandas as pd  # lazy: the registry itself must not need pandas

    rows = []
    for entry in ZOO.values():
        graph = build_zoo_model(entry.name)
        rows.append(
            {
                "name": entry.name,
                "ops": len(graph),
                "params": graph.total_params,
                "macs": graph.total_macs,
                "description": entry.description,
            }
        )
    return pd.DataFrame(rows, columns=["name", "ops", "params", "macs", "description"])
