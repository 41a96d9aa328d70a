"""The technique registry and the helpers every technique shares.

A technique is a pure function ``ModelGraph -> ModelGraph`` (the graph given is never
changed) plus an accuracy model: the top-1 change, in percentage points, it causes on
a given model family. Techniques register with :data:`TECHNIQUES` together with the
:class:`~simulator.schema.Record` that validates their YAML options, so
``models.<name>.techniques: [{name: quantize, dtype: int8}]`` and
``TECHNIQUES.get("quantize").function.apply(graph, {...})`` reach the same code.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from simulator.errors import ModelError
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.graph.sparse import exact_fraction
from simulator.registry import Registry
from simulator.schema import Field, Number, Text

#: Option every technique takes: its top-1 change in percentage points, overriding
#: (or, where the technique has no table, supplying) the documented figure.
ACCURACY_DELTA = Field(
    Number("percentage points"),
    default=None,
    doc="top-1 change (pp); default: the technique's documented table, else unknown",
)

#: Option selecting the ops a technique touches by a glob over op names.
OPS_GLOB = Field(Text(), default="*", doc="glob over op names, e.g. 'conv*'")


@dataclass(frozen=True)
class Technique:
    """A graph transform and its accuracy model.

    Attributes
    ----------
    apply : callable
        ``apply(graph, options) -> ModelGraph``; ``options`` as validated by the
        technique's schema (defaults filled in).
    accuracy : callable
        ``accuracy(family, options) -> float or None``: the top-1 change in percentage
        points on model family ``family`` (a zoo name, or None), None when unknown.
    """

    apply: Callable[[ModelGraph, Mapping[str, Any]], ModelGraph]
    accuracy: Callable[[str | None, Mapping[str, Any]], float | None]


#: Technique name -> :class:`Technique` with its option schema.
TECHNIQUES: Registry[Any] = Registry("technique", "socsim.techniques")


def given_delta(family: str | None, options: Mapping[str, Any]) -> float | None:
    """The accuracy model of techniques without a table: the scenario's figure or unknown."""
    return options.get("accuracy_delta")


def lossless(family: str | None, options: Mapping[str, Any]) -> float | None:
    """The accuracy model of exact rewrites: 0 unless the scenario says otherwise."""
    delta = options.get("accuracy_delta")
    return 0.0 if delta is None else delta


def selected(op: Op, pattern: str) -> bool:
    """Whether op ``op``'s name matches the glob ``pattern``."""
    return fnmatch.fnmatchcase(op.name, pattern)


def select(graph: ModelGraph, pattern: str, technique: str) -> list[Op]:
    """The ops whose names match the glob ``pattern``, in graph order.

    Raises
    ------
    ModelError
        When no op matches (a technique that could touch nothing is an error, not a
        silent no-op), naming the nearest op names.
    """
    chosen = [op for op in graph if selected(op, pattern)]
    if not chosen:
        near = difflib.get_close_matches(pattern, list(graph.order), n=3, cutoff=0.4)
        hint = f" (nearest: {', '.join(near)})" if near else ""
        raise ModelError(
            f"{technique}: no op matches glob '{pattern}'{hint}; ops: {_names(graph.order)}",
            graph.name,
        )
    return chosen


def nothing_to_do(
    technique: str, pattern: str, graph: ModelGraph, reasons: Mapping[str, Sequence[str]]
) -> ModelError:
    """The error of a technique whose selection holds no op it can transform.

    ``reasons`` maps why an op cannot be transformed to the names of those ops (the
    candidates), so the message says what to change.
    """
    scope = "" if pattern == "*" else f" among the ops matching '{pattern}'"
    why = "; ".join(f"{reason}: {_names(names)}" for reason, names in reasons.items())
    return ModelError(
        f"{technique} matched no op it can transform{scope}: {why or 'no candidate op'}",
        graph.name,
    )


def why_not(reasons: dict[str, list[str]], reason: str, name: str) -> None:
    """Record that op ``name`` cannot be transformed because of ``reason``."""
    reasons.setdefault(reason, []).append(name)


def _names(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" ... ({len(names) - limit} more)" if len(names) > limit else "")


def scale_int(count: int, kept: int, total: int) -> int:
    """``count x kept / total`` rounded down (exact when ``total`` divides ``count x kept``)."""
    return count * kept // total


def scale_float(value: float, factor: Fraction) -> float:
    """``value x factor`` computed exactly and rounded once to a float."""
    return float(Fraction(value) * factor)


def rebuild(graph: ModelGraph, ops: Iterable[Op], edges: Iterable[Edge]) -> ModelGraph:
    """A new graph of the same name from rewritten ops and edges."""
    return ModelGraph(graph.name, ops, edges)


def check_ratio(value: float, what: str, model: str) -> Fraction:
    """``value`` as an exact fraction in [0, 1).

    Raises
    ------
    ModelError
        When it is not a finite number in [0, 1).
    """
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value < 1):
        raise ModelError(f"{what} must be in [0, 1), got {value!r}", model)
    return exact_fraction(value)
