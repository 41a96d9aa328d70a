"""Leaf schema nodes: a number with its unit and bounds, text, a boolean, a reference.

:class:`Number` converts what was written to SI (:func:`~simulator.schema.base.to_si`)
and knows the one spelling of "no bound" (:data:`UNBOUNDED`); :class:`Text` checks a
choice against a tuple or a registry read at check time; :class:`Ref` records a name to
resolve once the whole document is read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from simulator.limits import INT64_MAX, INT64_MIN
from simulator.schema.base import Context, Loc, Schema, _type_name, nearest, to_si

_NUMBER_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _bound(x: float) -> str:
    """A bound as people write it: 1,000,000 rather than 1e+06."""
    if float(x).is_integer() and abs(x) < 1e16:
        return f"{int(x):,}"
    return f"{x:g}"


#: ``unbounded=True``): the YAML text ``unbounded`` checks to ``math.inf``.
UNBOUNDED = "unbounded"
#: What people write for "no bound" instead (lower-cased, without spaces and '_'): each
#: is refused with ``unbounded`` as the nearest valid choice.
_INFINITY_WORDS = frozenset(
    {
        "inf",
        ".inf",
        "+inf",
        "+.inf",
        "infinite",
        "infinity",
        "unlimited",
        "unbound",
        "nolimit",
        "none",
        "max",
        "maximum",
        "\u221e",
    }
)


def _means_unbounded(text: str) -> bool:
    """Whether ``text`` is a misspelling of :data:`UNBOUNDED` (or a synonym of it)."""
    word = text.strip().lower().replace(" ", "").replace("_", "")
    return word in _INFINITY_WORDS or nearest(word, (UNBOUNDED,)) is not None


@dataclass(frozen=True)
class Number(Schema):
    """A finite number, optionally bounded, multiplied by ``scale`` to reach SI.

    ``unbounded=True`` also accepts the text :data:`UNBOUNDED`, checked to ``math.inf``
    (SI as it is): for figures where no bound is a modelling choice (a unit's memory
    bandwidth, a node's copy bandwidth), which a user must be able to say on purpose.
    """

    unit: str = ""
    scale: float = 1.0
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    integer: bool = False
    unbounded: bool = False

    def describe(self) -> str:
        bounds = []
        if self.gt is not None:
            bounds.append(f"> {_bound(self.gt)}")
        if self.ge is not None:
            bounds.append(f">= {_bound(self.ge)}")
        if self.le is not None:
            bounds.append(f"<= {_bound(self.le)}")
        kind = "a whole number" if self.integer else "a number"
        text = kind + (" " + " and ".join(bounds) if bounds else "")
        text += f" ({self.unit})" if self.unit else ""
        return text + (f" or '{UNBOUNDED}'" if self.unbounded else "")

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if self.unbounded and value == UNBOUNDED:
            return math.inf
        if isinstance(value, str) and _NUMBER_TEXT.match(value.strip()):
            value = float(value)  # PyYAML reads `1e6` (no dot) as text
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            near = self.unbounded and isinstance(value, str) and _means_unbounded(value)
            hint = UNBOUNDED if near else None
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}", hint)
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer too large for a float
            finite = False
        if not finite:
            shown = value if isinstance(value, float) else "a number too large"
            if self.unbounded and not value < 0:
                # YAML's `.inf` is a float: the format has one spelling of "no bound"
                return ctx.problem(
                    loc,
                    f"expected {self.describe()}, got {shown}; write '{UNBOUNDED}' for no bound",
                    UNBOUNDED,
                )
            return ctx.problem(loc, f"expected {self.describe()}, got {shown} (must be finite)")
        if self.integer and float(value) != int(value):
            return ctx.problem(loc, f"expected {self.describe()}, got {value}")
        bad = (
            (self.gt is not None and not value > self.gt)
            or (self.ge is not None and not value >= self.ge)
            or (self.le is not None and not value <= self.le)
        )
        if bad:
            return ctx.problem(loc, f"expected {self.describe()}, got {value:g}")
        if self.integer:
            if not INT64_MIN <= int(value) <= INT64_MAX:  # result tables store int64
                return ctx.problem(
                    loc, f"expected {self.describe()} within int64 (-2^63 to 2^63 - 1), got {value}"
                )
            return int(value)
        si = to_si(value, self.scale)
        # the one conversion place: what is finite as written may not be in SI units
        if not math.isfinite(si) or (si == 0 and self.gt is not None and value > self.gt):
            what = "inf" if not math.isfinite(si) else "0"
            return ctx.problem(
                loc, f"expected {self.describe()}, got {value:g}, which is {what} in SI units"
            )
        return si


@dataclass(frozen=True)
class Text(Schema):
    """A string, optionally one of ``choices``.

    ``choices`` is a tuple, or a callable returning the current names (a registry's
    :meth:`~simulator.registry.Registry.names`), read each time a value is checked so
    that names registered later (plug-ins) are accepted.
    """

    choices: tuple[str, ...] | Callable[[], Iterable[str]] | None = None
    pattern: str | None = None
    what: str = "value"

    def _choices(self) -> tuple[str, ...] | None:
        if callable(self.choices):
            return tuple(self.choices())
        return self.choices

    def describe(self) -> str:
        choices = self._choices()
        if choices:
            return "one of " + ", ".join(f"'{c}'" for c in choices)
        return "text"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        choices = self._choices()
        if choices and value not in choices:
            return ctx.problem(
                loc,
                f"unknown {self.what} '{value}'; expected {self.describe()}",
                nearest(value, choices),
            )
        if self.pattern and not re.fullmatch(self.pattern, value):
            return ctx.problem(loc, f"'{value}' does not match the pattern {self.pattern}")
        return value


@dataclass(frozen=True)
class Boolean(Schema):
    def describe(self) -> str:
        return "true or false"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, bool):
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        return value


class AnyValue(Schema):
    """Accepts any value unchanged (checked later, where its meaning is known)."""

    def describe(self) -> str:
        return "any value"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        return value


@dataclass(frozen=True)
class Ref(Schema):
    """The name of something defined elsewhere (a node, a unit, a model).

    Checked as text here; resolved once the whole document is read, so that the
    error can list what does exist.
    """

    kind: str

    def describe(self) -> str:
        return f"the name of a {self.kind}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, str) or not value:
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        ctx.refs.append((self.kind, value, loc))
        return value
