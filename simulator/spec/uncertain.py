"""Uncertain figures in the scenario format: a number, or a distribution of it.

A field whose schema is :class:`Uncertain` takes a plain number or one of

* ``{mean: m, sd: s}``: normal, truncated to the field's valid range (inverse-CDF
  truncation, :class:`~simulator.uncertainty.distributions.Normal`);
* ``{low: a, high: b}``: uniform on ``[a, b]``, both inside the field's valid range.

Checking the document gives the nominal value (``mean``, or the midpoint): a
deterministic run uses it, and the engine never sees a distribution. A Monte Carlo sample
is made *before* the check by :func:`draw_document`, a pure function of the
preset-expanded document and a :class:`SampleKey`, which replaces every distribution by a
draw (in the field's YAML units) and returns the values drawn.

Streams: sample ``i`` of a scenario with seed ``s`` is ``SeedSequence([s, MC_TAG])``'s
``i``-th spawned child (``spawn_key=(i,)``, what ``.spawn(n)[i]`` gives for any
``n > i``); each field draws from that child keyed further by the CRC-32 of its YAML
path, so a field's draws do not depend on which other fields are uncertain, on the
order the document lists them, on ``n`` or on which process runs the sample.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from simulator.schema import (
    INVALID,
    Context,
    ListOf,
    Loc,
    MapOf,
    Number,
    Record,
    Schema,
    Tagged,
    nearest,
)
from simulator.spec.yamlnodes import shallow_copy
from simulator.uncertainty.distributions import Distribution, Interval, Normal, Uniform

#: Second entropy word of the parameter streams: they never coincide with the run's
#: streams, which derive from ``SeedSequence(seed)`` alone.
MC_TAG = 0x6D63  # "mc"
_KINDS = {"normal": ("mean", "sd"), "uniform": ("low", "high")}
_KEYS = ("mean", "sd", "low", "high")
#: spellings people reach for, and the key they mean
_ALIASES = {
    "mu": "mean",
    "average": "mean",
    "avg": "mean",
    "sigma": "sd",
    "std": "sd",
    "stdev": "sd",
    "stddev": "sd",
    "min": "low",
    "lo": "low",
    "max": "high",
    "hi": "high",
}
DISTRIBUTION_FORMS = "{mean, sd} (normal, truncated to the field's range) or {low, high} (uniform)"


@dataclass(frozen=True)
class Uncertain(Schema):
    """A :class:`~simulator.schema.Number` field that may also be a distribution."""

    number: Number

    def describe(self) -> str:
        return f"{self.number.describe()}, or {{mean, sd}} / {{low, high}}"

    def interval(self) -> Interval:
        """The field's valid range, in the units it is written in."""
        n = self.number
        low = n.gt if n.gt is not None else n.ge if n.ge is not None else -math.inf
        high = n.le if n.le is not None else math.inf
        return Interval(low, high, low_open=n.gt is not None)

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, Mapping):
            return self.number.check(value, loc, ctx)
        dist = self.distribution(value, loc, ctx)
        if dist is INVALID:
            return INVALID
        return self.number.check(dist.nominal, loc, ctx)

    def distribution(self, value: Mapping, loc: Loc, ctx: Context) -> Distribution | Any:
        """The distribution ``value`` gives, or INVALID (its problems in ``ctx``)."""
        where = f"a distribution; expected {DISTRIBUTION_FORMS} of {self.number.describe()}"
        ok = True
        for key in value:
            if key not in _KEYS:
                suggestion = _ALIASES.get(str(key).lower()) or nearest(str(key), _KEYS)
                ctx.problem(loc.child(value, key), f"unknown key '{key}' in {where}", suggestion)
                ok = False
        given = [kind for kind, keys in _KINDS.items() if any(k in value for k in keys)]
        if len(given) != 1:
            if given:
                message = (
                    "give {mean, sd} (normal) or {low, high} (uniform), not both; to replace "
                    "a preset's distribution by the other kind, set its keys to null "
                    "(e.g. {mean: null, sd: null, low: 0.5, high: 0.7})"
                )
            else:
                message = f"expected {self.describe()}, got a mapping without mean/sd or low/high"
            return ctx.problem(loc, message)
        kind = given[0]
        for key in _KINDS[kind]:
            if key not in value:
                ok = False
                keys = ", ".join(_KINDS[kind])
                ctx.problem(loc, f"missing '{key}': a {kind} distribution is {{{keys}}}")
        if not ok:
            return INVALID
        spread = Number(self.number.unit, ge=0)
        # a distribution's figures are finite: 'unbounded' is a value, not a mean or a bound
        finite = replace(self.number, unbounded=False)
        schemas = {"mean": finite, "sd": spread, "low": finite, "high": finite}
        numbers = {}
        for key in _KINDS[kind]:
            if schemas[key].check(value[key], loc.child(value, key), ctx) is INVALID:
                ok = False
            else:
                numbers[key] = float(value[key])
        if not ok:
            return INVALID
        if kind == "normal":
            return Normal(numbers["mean"], numbers["sd"])
        if numbers["high"] < numbers["low"]:
            return ctx.problem(
                loc.child(value, "high"),
                f"high {numbers['high']:g} is below low {numbers['low']:g}",
            )
        return Uniform(numbers["low"], numbers["high"])


@dataclass(frozen=True)
class SampleKey:
    """Which Monte Carlo sample to draw: sample ``index`` of the streams of ``seed``."""

    seed: int
    index: int

    def sequence(self) -> np.random.SeedSequence:
        """The sample's stream: ``SeedSequence([seed, MC_TAG]).spawn(n)[index]``."""
        return np.random.SeedSequence([self.seed, MC_TAG], spawn_key=(self.index,))

    def field_rng(self, path: str) -> np.random.Generator:
        """The generator of the field at YAML ``path`` in this sample."""
        parent = self.sequence()
        key = (*parent.spawn_key, zlib.crc32(path.encode()))
        return np.random.default_rng(np.random.SeedSequence(parent.entropy, spawn_key=key))


def find_uncertain(
    schema: Schema, value: Any, path: tuple = ()
) -> Iterator[tuple[tuple, Uncertain, Mapping]]:
    """Every distribution in ``value`` (a document checked by ``schema``): its key path,
    its field's schema and the mapping written there. Parts that do not fit the schema
    are skipped (the check reports them)."""
    if isinstance(schema, Uncertain):
        if isinstance(value, Mapping):
            yield path, schema, value
    elif isinstance(schema, Record) and isinstance(value, Mapping):
        for key, item in value.items():
            field = schema.fields.get(key)
            if field is not None:
                yield from find_uncertain(field.schema, item, (*path, key))
    elif isinstance(schema, MapOf) and isinstance(value, Mapping):
        for key, item in value.items():
            yield from find_uncertain(schema.value, item, (*path, key))
    elif isinstance(schema, ListOf) and isinstance(value, list):
        for i, item in enumerate(value):
            yield from find_uncertain(schema.item, item, (*path, i))
    elif isinstance(schema, Tagged) and isinstance(value, Mapping):
        record = schema.variants().get(value.get(schema.tag, schema.default))
        if record is not None:
            yield from find_uncertain(record, value, path)


def path_text(path: tuple) -> str:
    """``('nodes', 'phone', 'units', 'cpu', 'dispatch_us')`` ->
    ``nodes.phone.units.cpu.dispatch_us`` (``[i]`` for list indices)."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def _scenario_schema() -> Schema:
    from simulator.spec.definitions import SCENARIO  # definitions imports this module

    return SCENARIO


def uncertain_paths(document: Mapping, schema: Schema | None = None) -> list[str]:
    """The YAML paths of the distributions in a (preset-expanded) document."""
    found = find_uncertain(schema or _scenario_schema(), document)
    return [path_text(path) for path, _, _ in found]


#: A document's mapping type: a drawn document has the type of the one given.
_Doc = TypeVar("_Doc", bound=Mapping)


def draw_document(
    document: _Doc, key: SampleKey, schema: Schema | None = None
) -> tuple[_Doc, dict[str, float]]:
    """``document`` with every valid distribution replaced by a draw of sample ``key``.

    Pure: the input is not changed (containers on the way to a draw are copied, marks
    kept). A malformed distribution is left as written for the check to report.

    Returns
    -------
    document : mapping
        The concrete document, of the type given (containers are copied as they are).
    drawn : dict of str to float
        YAML path -> the value drawn (in the field's YAML units), in document order.
    """
    out: Any = document
    drawn: dict[str, float] = {}
    for path, field, written in list(find_uncertain(schema or _scenario_schema(), document)):
        dist = field.distribution(written, Loc(path_text(path)), Context())
        if dist is INVALID:
            continue
        text = path_text(path)
        drawn[text] = dist.draw(key.field_rng(text), field.interval())
        out = _replaced(out, path, drawn[text])
    return out, drawn


def _replaced(root: Any, path: tuple, value: Any) -> Any:
    """A copy of ``root`` with ``value`` at ``path``; only the containers on the path
    are copied."""
    top = shallow_copy(root)
    here = top
    for key in path[:-1]:
        child = shallow_copy(here[key])
        here[key] = child
        here = child
    here[path[-1]] = value
    return top
