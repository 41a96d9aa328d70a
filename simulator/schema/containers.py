"""Container schema nodes: lists, name -> value mappings, records and tagged records.

:class:`Record` (a mapping with a fixed set of keys, each a :class:`Field` with its
default and SI name) is what the scenario format is made of; :class:`Tagged` picks the
record by a key's value (a registry's schemas, read at check time so plug-ins count);
:class:`ListOf` and :class:`MapOf` check every item against one schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.schema.base import INVALID, Context, Loc, Schema, _type_name, nearest
from simulator.schema.scalars import Number

_REQUIRED = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()


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
