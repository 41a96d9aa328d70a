"""The core of the schema language: where a value sits, what was found wrong with it.

:class:`Loc` (a value's YAML path and the container that holds it), :class:`Context`
(collects every problem and cross-reference while a document is checked), the
:data:`INVALID` marker, :func:`nearest` (the suggestion for a typo), :func:`to_si` (the
one decimal conversion to SI) and :class:`Schema`, the base every schema node derives
from (:mod:`simulator.schema.scalars`, :mod:`simulator.schema.containers`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from simulator.errors import Problem

#: Marker for a value that failed validation (its problems are in the Context).
INVALID = type("Invalid", (), {"__repr__": lambda self: "INVALID"})()


def nearest(word: str, choices: Iterable[str]) -> str | None:
    """The closest of ``choices`` to ``word`` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return found[0] if found else None


def mark_of(container: Any, key: Any):
    """File/line mark recorded by the YAML loader for ``container[key]``, if any."""
    marks = getattr(container, "key_marks", None)
    if marks is not None:
        return marks.get(key, getattr(container, "mark", None))
    items = getattr(container, "item_marks", None)
    if items is not None and isinstance(key, int) and 0 <= key < len(items):
        return items[key]
    return getattr(container, "mark", None)


@dataclass(frozen=True)
class Loc:
    """Where a value sits: its YAML path and the container/key that hold it."""

    path: str
    container: Any = None
    key: Any = None

    def child(self, container: Any, key: Any) -> Loc:
        if isinstance(key, int) and not isinstance(container, Mapping):
            return Loc(f"{self.path}[{key}]", container, key)
        return Loc(f"{self.path}.{key}" if self.path else str(key), container, key)


@dataclass
class Context:
    """Collects problems and cross-references while a document is checked."""

    default_file: str | None = None
    base_dir: str | None = None
    #: resolved directories files named in the document may be read from (see
    #: simulator.spec.paths); empty: only ``base_dir``
    allowed_dirs: tuple = ()
    problems: list[Problem] = field(default_factory=list)
    refs: list[tuple[str, str, Loc]] = field(default_factory=list)

    def problem(self, loc: Loc, message: str, suggestion: str | None = None) -> Any:
        mark = mark_of(loc.container, loc.key)
        self.problems.append(
            Problem(
                path=loc.path,
                message=message,
                file=mark.file if mark is not None else self.default_file,
                line=mark.line if mark is not None else None,
                suggestion=suggestion,
            )
        )
        return INVALID


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"text '{value}'"
    return f"{type(value).__name__} {value!r}"


def to_si(value: float, scale: float) -> float:
    """``value * scale`` as the decimal product of what was written, rounded once.

    ``20`` ms at scale ``1e-3`` gives exactly ``0.02`` and ``5.85`` Mbit/s at ``1e6``
    exactly ``5.85e6`` (a float product would be off by an ulp for many inputs).
    """
    if scale == 1:
        return float(value)
    return float(Decimal(repr(value)) * Decimal(repr(scale)))


class Schema:
    """Base of all schema nodes."""

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


#: The one spelling of an explicitly unbounded figure (a :class:`Number` with
