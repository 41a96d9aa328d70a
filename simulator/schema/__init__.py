"""A small declarative schema language for YAML documents.

Each schema node checks a raw value, converts it (units to SI, keys to their SI names)
and reports every problem it finds into a :class:`Context` instead of stopping at the
first. Problems carry the YAML path, file and line of the offending value, what was
expected, and the nearest valid key or choice for a typo.

Schemas are data, so the same definitions validate documents, describe fields in error
messages and generate the reference tables of the docs.

The language is three modules: :mod:`simulator.schema.base` (locations, the problem
context, :class:`Schema`), :mod:`simulator.schema.scalars` (numbers with units, text,
booleans, references) and :mod:`simulator.schema.containers` (lists, mappings, records,
tagged records). Import the names from here.
"""

from simulator.schema.base import INVALID, Context, Loc, Schema, mark_of, nearest, to_si
from simulator.schema.containers import Field, ListOf, MapOf, Record, Tagged
from simulator.schema.scalars import (
    UNBOUNDED,
    AnyValue,
    Boolean,
    Number,
    Ref,
    Text,
)

__all__ = [
    "INVALID",
    "UNBOUNDED",
    "AnyValue",
    "Boolean",
    "Context",
    "Field",
    "ListOf",
    "Loc",
    "MapOf",
    "Number",
    "Record",
    "Ref",
    "Schema",
    "Tagged",
    "Text",
    "mark_of",
    "nearest",
    "to_si",
]
