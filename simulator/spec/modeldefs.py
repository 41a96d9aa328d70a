"""Model sections of the scenario format: a model from the zoo, an ONNX or TFLite file, or
inline.

``models.<name>`` is one of the :data:`MODEL_SOURCES`, told apart by the key that names
the source (``zoo:``, ``onnx:``, ``tflite:``, ``ops:``); :class:`ModelChoice` checks it against that
source's schema and tags the result with ``source``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulator.errors import SocsimError
from simulator.graph.model import DTYPE_BYTES, OP_KINDS, ModelGraph
from simulator.graph.onnx_fuse import PLANS
from simulator.graph.zoo import zoo_names, zoo_options
from simulator.limits import MAX_INLINE_EDGES, MAX_INLINE_OPS, MAX_TENSOR_ELEMENTS
from simulator.schema import (
    INVALID,
    AnyValue,
    Boolean,
    Context,
    Field,
    ListOf,
    Loc,
    MapOf,
    Number,
    Record,
    Schema,
    Text,
)
from simulator.spec.inline_shapes import SHAPE_FIELDS
from simulator.spec.paths import naming_dir, resolve_user_path, user_dirs

DTYPES = tuple(DTYPE_BYTES)
MILLI = 1e-3

#: An element count whose byte count stays within int64 (simulator.limits).
_ELEMENTS = Number(integer=True, ge=0, le=MAX_TENSOR_ELEMENTS)

INLINE_OP = Record(
    {
        "name": Field(Text()),
        "kind": Field(Text(choices=OP_KINDS, what="op kind"), default="custom"),
        "flops": Field(Number("FLOPs", ge=0), default=None),
        "macs": Field(Number("multiply-adds", ge=0), default=0.0),
        "params": Field(_ELEMENTS, default=0),
        "input_elems": Field(_ELEMENTS, default=0),
        "output_elems": Field(_ELEMENTS, default=0),
        "dtype": Field(Text(choices=DTYPES, what="dtype"), default="fp32"),
        "parallel_fraction": Field(Number(ge=0, le=1), default=1.0),
        "time_ms": Field(MapOf(Number("ms", MILLI, ge=0), min_len=1), default={}, to="time_s"),
        **SHAPE_FIELDS,  # conv / fc shapes for the techniques (simulator.spec.inline_shapes)
    },
    name="op",
)

INLINE_EDGE = Record(
    {
        "src": Field(Text()),
        "dst": Field(Text()),
        "bytes": Field(Number("bytes", integer=True, ge=0), default=None),
        "comm_ms": Field(Number("ms", MILLI, ge=0), default=None, to="comm_s"),
    },
    name="edge",
)

INLINE_MODEL = Record(
    {
        "ops": Field(ListOf(INLINE_OP, min_len=1, max_len=MAX_INLINE_OPS)),
        "edges": Field(ListOf(INLINE_EDGE, max_len=MAX_INLINE_EDGES), default=[]),
    },
    name="inline model",
)


EXIT = Record(
    {
        "name": Field(Text(), doc="the exit's name in results (not 'final': the model's own)"),
        "after": Field(Text(), doc="the op after which a request may finish here"),
        "head": Field(
            ListOf(INLINE_OP, max_len=MAX_INLINE_OPS),
            default=[],
            doc="the exit branch's own ops (a small classifier), chained after 'after'",
        ),
        "accuracy_top1": Field(
            Number("%", ge=0, le=100), default=None, doc="top-1 of the requests leaving here"
        ),
        "probability": Field(
            Number(ge=0, le=1),
            default=0.0,
            doc="share of all requests that leave here (the exits' sum at most 1; the rest "
            "run the whole model)",
        ),
        "threshold": Field(
            Number(ge=0, le=1),
            default=None,
            doc="instead of probability: a request's confidence here is uniform in [0, 1), "
            "drawn afresh at each exit; it leaves when the confidence reaches the threshold",
        ),
    },
    name="exit",
)


class ZooModel(Schema):
    """``{zoo: name, dtype: ..., options: {...}}``; options come from the builder's signature."""

    def describe(self) -> str:
        return "a zoo model: zoo, dtype, options"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        outer = Record(
            {
                "zoo": Field(Text(choices=tuple(zoo_names()), what="zoo model")),
                "dtype": Field(Text(choices=DTYPES, what="dtype"), default="fp32"),
                "options": Field(MapOf(AnyValue()), default={}),
            },
            name="zoo model",
        )
        out = outer.check(value, loc, ctx)
        if out is INVALID or not out["options"]:
            return out
        options_schema = Record(
            {
                name: Field(_option_schema(ann), default=d)
                for name, (ann, d) in zoo_options(out["zoo"]).items()
            },
            name=f"{out['zoo']} options",
        )
        checked = options_schema.check(value["options"], loc.child(value, "options"), ctx)
        if checked is INVALID:
            return INVALID
        out["options"] = {k: v for k, v in checked.items() if k in value["options"]}
        return out


def _option_schema(annotation: Any) -> Schema:
    if annotation is bool:
        return Boolean()
    if annotation is int:
        return Number(integer=True)
    if annotation is float:
        return Number()
    if annotation is str:
        return Text()
    return AnyValue()


def model_file_path(value: str, loc: Loc, ctx: Context) -> Path:
    """Where the model file ``value`` named at ``loc`` lives: relative to the scenario (or
    included) file that names it, and inside the allowed directories (docs/security.md).

    Raises
    ------
    SocsimError
        When the path leaves the allowed directories or cannot be resolved.
    """
    return resolve_user_path(value, naming_dir(loc, ctx), user_dirs(ctx))


class OnnxFile(Schema):
    """The path of an existing ONNX (or, with ``kind``, other) model file, relative to the
    file that names it."""

    def __init__(self, kind: str = "ONNX", suffix: str = ".onnx") -> None:
        self.kind, self.suffix = kind, suffix

    def describe(self) -> str:
        article = "an" if self.suffix[1:2] in tuple("aeio") else "a"
        return f"the path of {article} {self.suffix} file (relative to this YAML file)"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}")
        try:
            path = model_file_path(value, loc, ctx)
        except SocsimError as exc:
            return ctx.problem(loc, str(exc))
        if not path.is_file():
            return ctx.problem(loc, f"no {self.kind} file at {path}")
        return str(path)


ONNX_MODEL = Record(
    {
        "onnx": Field(OnnxFile()),
        "batch": Field(Number(integer=True, ge=1), default=1, doc="fixes a dynamic batch"),
        "fuse": Field(
            Text(choices=tuple(PLANS), what="fusion"),
            default="ort",
            doc="ort: as onnxruntime fuses (CPU, extended); none: one op per node",
        ),
        "dtype": Field(
            Text(choices=DTYPES, what="dtype"), default=None, doc="default: the model's"
        ),
    },
    name="onnx model",
)


TFLITE_MODEL = Record(
    {
        "tflite": Field(OnnxFile("TFLite", ".tflite")),
        "batch": Field(
            Number(integer=True, ge=1), default=1, doc="fixes a dynamic batch (shape_signature -1)"
        ),
        "dtype": Field(
            Text(choices=DTYPES, what="dtype"), default=None, doc="default: the model's"
        ),
    },
    name="tflite model",
)


#: Model sources by the key that selects them: ``key -> (source name, schema)``.
MODEL_SOURCES: dict[str, tuple[str, Schema]] = {
    "zoo": ("zoo", ZooModel()),
    "onnx": ("onnx", ONNX_MODEL),
    "tflite": ("tflite", TFLITE_MODEL),
    "ops": ("inline", INLINE_MODEL),
}


def common_keys() -> Record:
    """Keys every model source takes: deployment techniques and accuracy (docs/techniques.md)."""
    from simulator.graph.techniques import TECHNIQUE  # lazy: the registry loads the techniques

    return Record(
        {
            "techniques": Field(
                ListOf(TECHNIQUE), default=[], doc="graph transforms applied in order"
            ),
            "accuracy_top1": Field(
                Number("%", ge=0, le=100),
                default=None,
                doc="baseline top-1 (default: the zoo model's published figure)",
            ),
            "family": Field(
                Text(choices=tuple(zoo_names()), what="model family"),
                default=None,
                doc="family for the accuracy tables (default: the zoo name)",
            ),
            "exits": Field(
                ListOf(EXIT),
                default=[],
                doc="early exits, in the order a request meets them (docs/early-exit.md)",
            ),
        },
        name="model",
    )


#: Keys :func:`common_keys` checks, stripped before the source's own schema.
COMMON_KEYS: tuple[str, ...] = ("techniques", "accuracy_top1", "family", "exits")


def _subset(value: dict, common: bool) -> dict:
    """The items of ``value`` whose key is (or is not) common, YAML marks kept."""
    out = type(value)({k: v for k, v in value.items() if (k in COMMON_KEYS) == common})
    for attr in ("key_marks", "mark"):  # error messages keep their file lines
        if hasattr(value, attr):
            setattr(out, attr, getattr(value, attr))
    return out


class ModelChoice(Schema):
    """A model from one of :data:`MODEL_SOURCES`, selected by the key it has.

    The :data:`COMMON_KEYS` (``techniques``, ``accuracy_top1``, ``family``) apply to
    every source: they are checked here and the rest goes to the source's schema.
    """

    def describe(self) -> str:
        keys = " or ".join(f"'{key}'" for key in MODEL_SOURCES)
        return f"a model with {keys}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if isinstance(value, dict):
            common = common_keys().check(_subset(value, True), loc, ctx)
            own = _subset(value, False)
            for key, (source, schema) in MODEL_SOURCES.items():
                if key in value:
                    out = schema.check(own, loc, ctx)
                    if out is INVALID or common is INVALID:
                        return INVALID
                    return {"source": source, **out, **common}
        keys = ", ".join(f"'{key}: ...'" for key in MODEL_SOURCES)
        return ctx.problem(loc, f"a model needs one of {keys} (inline 'ops:' may add 'edges:')")


def deploy_model(
    graph: ModelGraph, spec: dict, raw: Any, loc: Loc, ctx: Context
) -> tuple[ModelGraph, float | None] | None:
    """Apply a checked model spec's ``techniques`` to its built graph, then add its
    ``exits`` (:mod:`simulator.spec.exitdefs`).

    Returns the transformed graph and its top-1 (%), or None after reporting a problem
    at ``models.<name>.techniques[i]`` or ``models.<name>.exits[i]``.
    """
    from simulator.errors import ModelError
    from simulator.graph.techniques import apply_techniques, baseline_top1

    family = spec.get("family") or spec.get("zoo")
    baseline = spec.get("accuracy_top1")
    if baseline is None and spec.get("zoo"):
        baseline = baseline_top1(spec["zoo"], spec.get("options"))
    try:
        graph, top1 = apply_techniques(graph, spec.get("techniques", []), family, baseline)
    except ModelError as exc:
        where = loc.child(raw, "techniques")
        index = exc.message.split("]", 1)[0].removeprefix("techniques[")
        if index.isdigit() and isinstance(raw, dict):
            where = where.child(raw["techniques"], int(index))
        ctx.problem(where, exc.message)
        return None
    if not spec.get("exits"):
        return graph, top1
    from simulator.spec.exitdefs import build_exits

    with_exits = build_exits(graph, spec["exits"], top1, raw, loc, ctx)
    return None if with_exits is None else (with_exits, top1)
