"""Deployment techniques as composable graph transforms, with their accuracy models.

Each technique is a pure function ``ModelGraph -> ModelGraph`` registered by name in
:data:`TECHNIQUES` with its option schema; :func:`apply_techniques` applies a list of
them in order, as ``models.<name>.techniques`` declares, and composes their accuracy
changes. See docs/techniques.md.

=====================  ================================================================
name                   what it does
=====================  ================================================================
quantize               narrow dtypes (fp16 / int8), :mod:`.quantize`
fuse                   conv/fc + norm + activation, elementwise chains, :mod:`.fusion`
prune_channels         structured pruning of output channels, :mod:`.prune`
prune_weights          unstructured pruning, compressed storage, :mod:`.prune`
depthwise_separable    standard conv -> depthwise + pointwise, :mod:`.substitute`
=====================  ================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import ModelError
from simulator.graph.model import ModelGraph
from simulator.graph.techniques import fusion, prune, quantize, substitute  # noqa: F401
from simulator.graph.techniques.accuracy import BASELINE_TOP1, baseline_top1, combined_top1
from simulator.graph.techniques.base import TECHNIQUES, Technique
from simulator.schema import Tagged, nearest

#: Schema of one entry of a ``techniques:`` list (``name`` picks the technique).
TECHNIQUE = Tagged("name", TECHNIQUES.schemas, what="technique")


def apply_techniques(
    graph: ModelGraph,
    techniques: Sequence[Mapping[str, Any]],
    family: str | None = None,
    baseline: float | None = None,
) -> tuple[ModelGraph, float | None]:
    """Apply ``techniques`` to ``graph`` in order and compose their accuracy changes.

    Parameters
    ----------
    graph : ModelGraph
    techniques : sequence of mapping
        Each ``{"name": ..., **options}``, options as the technique's schema gives them.
    family : str or None
        Model family for the accuracy tables (a zoo name), None if none applies.
    baseline : float or None
        Top-1 (%) before the techniques; None when unknown.

    Returns
    -------
    (ModelGraph, float or None)
        The transformed graph and its top-1 (%), None when unknown.

    Raises
    ------
    ModelError
        From a technique (bad option value), or for an unknown technique name (naming
        the nearest one); the message starts with ``techniques[i]``.
    """
    deltas = []
    for i, spec in enumerate(techniques):
        name = spec.get("name")
        if not isinstance(name, str) or name not in TECHNIQUES:
            hint = nearest(str(name), TECHNIQUES)
            tip = f" (did you mean '{hint}'?)" if hint else ""
            raise ModelError(
                f"techniques[{i}]: unknown technique '{name}'{tip}; valid: {', '.join(TECHNIQUES)}",
                graph.name,
            )
        options = {k: v for k, v in spec.items() if k != "name"}
        technique: Technique = TECHNIQUES.get(name).function
        try:
            graph = technique.apply(graph, options)
        except ModelError as exc:
            raise ModelError(f"techniques[{i}] ({name}): {exc.message}", graph.name) from None
        deltas.append(technique.accuracy(family, options))
    return graph, combined_top1(baseline, deltas)


__all__ = [
    "BASELINE_TOP1",
    "TECHNIQUE",
    "TECHNIQUES",
    "Technique",
    "apply_techniques",
    "baseline_top1",
    "combined_top1",
]
