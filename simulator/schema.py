"""A small declarative schema language for YAML documents.

Each schema node checks a raw value, converts it (units to SI, keys to their SI names)
and reports every problem it finds into a :class:`Context` instead of stopping at the
first. Problems carry the YAML path, file and line of the offending value, what was
expected, and the nearest valid key or choice for a typo.

Schemas are data, so the same definitions validate documents, describe fields in error
messages and generate the reference tables of the docs.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from simulator.errors import Problem
from simulator.limits import INT64_MAX, INT64_MIN

#: Marker for a value that failed validation (its problems are in the Context).
INVALID = type("Invalid", (), {"__repr__": lambda self: "INVALID"})()
_REQUIRED = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
_NUMBER_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


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


def _bound(x: float) -> str:
    """A bound as people write it: 1,000,000 rather than 1e+06."""
    if float(x).is_integer() and abs(x) < 1e16:
        return f"{int(x):,}"
    return f"{x:g}"


class Schema:
    """Base of all schema nodes."""

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


#: The one spelling of an explicitly unbounded figure (a :class:`Number` with
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


@dataclass(frozen=True)
class ListOf(Schema):
    item: Schema
    min_len: int = 0
    max_len: int | None = None
    ascending: bool = False

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, list):
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            if self.max_len == self.min_len:
                span = f"exactly {self.min_len}"
            elif len(value) < self.min_len:
                span = f"at least {self.min_len}"
            else:  # a stated bound (simulator.limits), refused before any item is checked
                span = f"at most {self.max_len:,}"
            return ctx.problem(loc, f"expected {span} item(s), got {len(value)}")
        out = [self.item.check(v, loc.child(value, i), ctx) for i, v in enumerate(value)]
        if any(v is INVALID for v in out):
            return INVALID
        if self.ascending:
            for i in range(1, len(out)):
                if out[i] < out[i - 1]:
                    return ctx.problem(loc.child(value, i), "values must not decrease")
        return out


@dataclass(frozen=True)
class MapOf(Schema):
    """A mapping of user-chosen names (or names from ``keys``) to values of one schema."""

    value: Schema
    keys: tuple[str, ...] | None = None
    min_len: int = 0
    key_pattern: str | None = None
    key_hint: str = ""

    def describe(self) -> str:
        which = f" (keys from {', '.join(self.keys)})" if self.keys else ""
        return f"a mapping of names to {self.value.describe()}{which}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, Mapping):
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        if len(value) < self.min_len:
            return ctx.problem(
                loc, f"expected at least {self.min_len} entr(y/ies), got {len(value) or 'none'}"
            )
        out, ok = {}, True
        for key, item in value.items():
            child = loc.child(value, key)
            if not isinstance(key, str):
                ctx.problem(child, f"names must be text, got {_type_name(key)}")
                ok = False
                continue
            if self.keys is not None and key not in self.keys:
                ctx.problem(
                    child,
                    f"unknown key '{key}'; valid keys: {', '.join(self.keys)}",
                    nearest(key, self.keys),
                )
                ok = False
                continue
            if self.key_pattern is not None and not re.fullmatch(self.key_pattern, key):
                hint = f" ({self.key_hint})" if self.key_hint else ""
                ctx.problem(
                    child, f"name '{key}' does not match the pattern {self.key_pattern}{hint}"
                )
                ok = False
                continue
            out[key] = self.value.check(item, child, ctx)
            ok = ok and out[key] is not INVALID
        return out if ok else INVALID


@dataclass(frozen=True)
class Field:
    """One key of a :class:`Record`: its schema, default and SI name."""

    schema: Schema
    default: Any = _REQUIRED
    to: str | None = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def default_si(self) -> Any:
        """The default as the checked value would be: a number is written in the key's
        YAML unit (as the reference tables show it, e.g. ``stale_ms: 10000``) and scaled
        to SI like a value the user wrote."""
        default = self.default
        if (
            isinstance(self.schema, Number)
            and isinstance(default, (int, float))
            and not isinstance(default, bool)
            and self.schema.scale != 1
            and default != 0  # 0 and its type (an int 0 keeps exact arithmetic) stay
            and math.isfinite(default)
        ):
            return default * self.schema.scale
        return default


@dataclass(frozen=True)
class Record(Schema):
    """A mapping with a fixed set of keys; unknown keys are errors.

    ``exclusive`` lists groups of keys of which exactly one must be given
    (e.g. ``("period_ms", "rate_hz")``).
    """

    fields: Mapping[str, Field]
    exclusive: tuple[tuple[str, ...], ...] = ()
    name: str = "mapping"

    def describe(self) -> str:
        return f"a {self.name} with keys {', '.join(self.fields)}"

    def check(self, value: Any, loc: Loc, ctx: Context, skip: tuple[str, ...] = ()) -> Any:
        if not isinstance(value, Mapping):
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        out, ok = {}, True
        valid = [k for k in self.fields if k not in skip]
        for key in value:
            if key in skip:
                continue
            if key not in self.fields:
                ctx.problem(
                    loc.child(value, key),
                    f"unknown key '{key}' in {self.name}; valid keys: {', '.join(valid)}",
                    nearest(key, valid),
                )
                ok = False
        exclusive_keys = {k for group in self.exclusive for k in group}
        for group in self.exclusive:
            given = [k for k in group if k in value]
            if len(given) != 1:
                how = "both" if len(given) > 1 else "none"
                ctx.problem(loc, f"give exactly one of {', '.join(group)} ({how} given)")
                ok = False
        for key, spec in self.fields.items():
            if key in skip:
                continue
            target = spec.to or key
            if key in value:
                out[target] = spec.schema.check(value[key], loc.child(value, key), ctx)
                ok = ok and out[target] is not INVALID
            elif spec.required and key not in exclusive_keys:
                ctx.problem(loc, f"missing required key '{key}' ({spec.schema.describe()})")
                ok = False
            elif not spec.required:
                out[target] = spec.default_si()
        return out if ok else INVALID


@dataclass(frozen=True)
class Tagged(Schema):
    """A mapping whose ``tag`` key picks the record that checks the rest.

    ``variants`` is a callable returning the current name -> Record mapping, so that
    registries extended at run time are seen.
    """

    tag: str
    variants: Callable[[], Mapping[str, Record]]
    what: str = "kind"
    default: str | None = None

    def describe(self) -> str:
        return f"a mapping with '{self.tag}': one of {', '.join(self.variants())}"

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, Mapping):
            return ctx.problem(loc, f"expected {self.describe()}, got {_type_name(value)}")
        variants = self.variants()
        name = value.get(self.tag, self.default)
        if name is None:
            return ctx.problem(
                loc, f"missing required key '{self.tag}' (one of {', '.join(variants)})"
            )
        if not isinstance(name, str) or name not in variants:
            return ctx.problem(
                loc.child(value, self.tag),
                f"unknown {self.what} '{name}'; valid: {', '.join(variants)}",
                nearest(str(name), variants),
            )
        out = variants[name].check(value, loc, ctx, skip=(self.tag,))
        if out is INVALID:
            return INVALID
        return {self.tag: name, **out}
