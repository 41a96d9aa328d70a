"""Building the models of a scenario: one builder per model source.

The keys are the sources of :data:`simulator.spec.modeldefs.MODEL_SOURCES`; the loader
calls ``MODEL_BUILDERS[spec["source"]]`` for every ``models.<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from simulator.errors import ModelError
from simulator.graph.model import ModelGraph
from simulator.graph.zoo import build_zoo_model
from simulator.platform import Platform
from simulator.schema import Context, Loc
from simulator.spec.inline import build_inline_model
from simulator.spec.paths import user_dirs


def zoo_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph:
    """A zoo model (its ModelError becomes a problem at the model, in the loader)."""
    return build_zoo_model(spec["zoo"], spec["dtype"], **spec["options"])


def onnx_model(
    name: str, spec: dict, raw: Mapping, loc: Loc, ctx: Context, platform: Platform
) -> ModelGraph | None:
    """An ONNX file; its ModelError becomes a problem at ``models.<name>.onnx``."""
    from simulator.graph.onnx_import import load_onnx  # onnx is a heavy import

    try:
        return load_onnx(
            spec["onnx"],
            batch=spec["batch"],
            fuse=spec["fuse"],
            dtype=spec["dtype"],
            name=name,
            allowed_dirs=user_dirs(ctx),
        )
    except ModelError as exc:
        ctx.problem(loc.child(raw, "onnx"), f"{spec['onnx']}: {exc.message}")
        return None


#: Model builders by source (see ``MODEL_SOURCES`` in :mod:`simulator.spec.modeldefs`):
#: ``(name, checked spec, raw spec, loc, ctx, platform) -> ModelGraph or None`` (None
#: after reporting a problem).
MODEL_BUILDERS: Mapping[str, Callable[..., ModelGraph | None]] = MappingProxyType(
    {"zoo": zoo_model, "inline": build_inline_model, "onnx": onnx_model}
)
