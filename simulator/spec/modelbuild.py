"""Building the models of a scenario: one builder per model source.

The keys are the sources of :data:`simulator.spec.modeldefs.MODEL_SOURCES`; the loader
calls ``MODEL_BUILDERS[spec["source"]]`` for every ``models.<name>``. Every model built is
kept in :data:`~simulator.spec.modelcache.MODEL_CACHE` by its exact inputs (a sweep's
points build the same models again and again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from types import MappingProxyType

from simulator.errors import ModelError
from simulator.graph.model import ModelGraph
from simulator.graph.zoo import build_zoo_model
from simulator.platform import Platform
from simulator.schema import Context, Loc
from simulator.spec.inline import build_inline_model
from simulator.spec.modelcache import MODEL_CACHE, exact_key
from simulator.spec.paths import user_dirs


def zoo_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph:
    """A zoo model (its ModelError becomes a problem at the model, in the loader).

    Cached by its recipe: name, dtype and every option with its type."""
    zoo, dtype, options = spec["zoo"], spec["dtype"], spec["options"]
    key = ("zoo", zoo, dtype, exact_key(options))
    return MODEL_CACHE.get(key, lambda: build_zoo_model(zoo, dtype, **options))


def inline_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph | None:
    """A model written in the scenario (``ops:``), cached by its checked spec and the unit
    names its time tables may use; a build that reports a problem is not kept."""
    before = len(ctx.problems)
    units = tuple(platform.unit_ids) if platform is not None else None
    key = ("inline", name, exact_key(spec), units)
    return MODEL_CACHE.get(
        key,
        lambda: build_inline_model(name, spec, raw, loc, ctx, platform),
        keep=lambda graph: graph is not None and len(ctx.problems) == before,
    )


def onnx_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph | None:
    """An ONNX file; its ModelError becomes a problem at ``models.<name>.onnx``.

    The file is read (through the one bounded, checked reader) at every call; the import
    is cached by the digest of what was read (the file with its small external tensors
    read into it) and the import options, so an edited file is imported again."""
    # onnx is a heavy import
    from simulator.graph.onnx_files import read_onnx_file
    from simulator.graph.onnx_import import import_model

    options = {"batch": spec["batch"], "fuse": spec["fuse"], "dtype": spec["dtype"], "name": name}
    label = str(spec["onnx"])
    try:
        digest = hashlib.sha256()
        model = read_onnx_file(spec["onnx"], user_dirs(ctx), digest)
        key = ("onnx", digest.hexdigest(), exact_key(options))
        return MODEL_CACHE.get(key, lambda: import_model(model, label, **options))
    except ModelError as exc:
        ctx.problem(loc.child(raw, "onnx"), f"{spec['onnx']}: {exc.message}")
        return None


def tflite_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph | None:
    """A TFLite file; its ModelError becomes a problem at ``models.<name>.tflite``.

    Read at every call (bounded and checked), imported once per digest of its bytes and
    options, as :func:`onnx_model`."""
    from simulator.graph.tflite_import import import_tflite, read_tflite_file

    options = {"batch": spec["batch"], "dtype": spec["dtype"], "name": name}
    label = str(spec["tflite"])
    try:
        data = read_tflite_file(spec["tflite"], user_dirs(ctx))
        key = ("tflite", hashlib.sha256(data).hexdigest(), exact_key(options))
        return MODEL_CACHE.get(key, lambda: import_tflite(data, label, **options))
    except ModelError as exc:
        ctx.problem(loc.child(raw, "tflite"), f"{spec['tflite']}: {exc.message}")
        return None


#: Model builders by source (see ``MODEL_SOURCES`` in :mod:`simulator.spec.modeldefs`):
#: ``(name, checked spec, raw spec, loc, ctx, platform) -> ModelGraph or None`` (None
#: after reporting a problem).
MODEL_BUILDERS: Mapping[str, Callable[..., ModelGraph | None]] = MappingProxyType(
    {"zoo": zoo_model, "inline": inline_model, "onnx": onnx_model, "tflite": tflite_model}
)
