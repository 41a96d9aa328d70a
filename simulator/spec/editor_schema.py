"""A JSON Schema (draft 2020-12) of the scenario format, for editors (``socsim schema``).

Generated from the schema tree the loader checks with (:data:`simulator.spec.definitions
.SCENARIO`), as ``docs/scenario-format.md`` is (:mod:`simulator.spec.reference`), so the
two cannot drift. Registries (placement policies, schedulers, arrival processes,
techniques, ...) are read when the schema is generated: their names are enums, and
plug-ins imported first are included.

The JSON Schema describes a file *as written*, before includes and presets are merged:
a node or link (and what is inside it) may take ``preset: NAME`` and leave out keys its
preset gives, so no key is required there. It is an editor's aid (completion, hover
text, typos flagged as you type); ``socsim validate`` remains the full check (references
between names, files, feasibility).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from simulator.schema import (
    UNBOUNDED,
    AnyValue,
    Boolean,
    ListOf,
    MapOf,
    Number,
    Record,
    Ref,
    Schema,
    Tagged,
    Text,
)
from simulator.schema.scalars import _NUMBER_TEXT
from simulator.spec.uncertain import Uncertain

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Sections whose entries may name a preset (simulator.spec.presets.PRESET_SECTIONS).
PRESET_SECTIONS = ("nodes", "links")


def _accepts_unbounded(schema: Schema) -> bool:
    number = schema.number if isinstance(schema, Uncertain) else schema
    return isinstance(number, Number) and number.unbounded


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


class _Converter:
    """Schema node -> JSON Schema; ``required`` off inside preset sections."""

    def __init__(self) -> None:
        self.handlers: dict[type, Callable[[Any, bool], dict]] = {
            Number: self.number,
            Text: self.text,
            Boolean: lambda s, r: {"type": "boolean"},
            AnyValue: lambda s, r: {},
            Ref: lambda s, r: {"type": "string", "minLength": 1, "description": s.describe()},
            ListOf: self.list_of,
            MapOf: self.map_of,
            Record: self.record,
            Tagged: self.tagged,
            Uncertain: self.uncertain,
        }

    def __call__(self, schema: Schema, required: bool = True) -> dict:
        from simulator.spec.modeldefs import ModelChoice

        if isinstance(schema, ModelChoice):
            return self.model_choice(required)
        for kind in type(schema).__mro__:
            if kind in self.handlers:
                return self.handlers[kind](schema, required)
        # a schema of its own (a file, a sweep value, an uncertain number): the loader
        # checks it; the editor only shows what it expects
        return {"description": schema.describe()}

    def number(self, schema: Number, required: bool) -> dict:
        out: dict[str, Any] = {"type": "integer" if schema.integer else "number"}
        for key, bound in (
            ("exclusiveMinimum", schema.gt),
            ("minimum", schema.ge),
            ("maximum", schema.le),
        ):
            if bound is not None and math.isfinite(bound):
                out[key] = bound
        # PyYAML reads `1e6` (no dot) as text; the loader accepts it as a number
        text = {"type": "string", "pattern": _NUMBER_TEXT.pattern}
        forms = [out, text]
        if schema.unbounded:  # the one spelling of "no bound" (YAML's .inf is refused)
            forms.append({"const": UNBOUNDED, "description": "no bound, on purpose"})
        return {"anyOf": forms, "description": schema.describe()}

    def uncertain(self, schema: Uncertain, required: bool) -> dict:
        """The number's forms, or a distribution mapping of it (simulator.spec.uncertain;
        a key may be null: it drops a preset's distribution of the other kind)."""
        number = self.number(schema.number, required)
        figure = self.number(replace(schema.number, unbounded=False), required)
        spread = self.number(Number(schema.number.unit, ge=0), required)
        keys = {
            key: {**forms, "anyOf": [*forms["anyOf"], {"type": "null"}]}
            for key, forms in (("mean", figure), ("sd", spread), ("low", figure), ("high", figure))
        }
        dist = {"type": "object", "properties": keys, "additionalProperties": False}
        return {"anyOf": [*number["anyOf"], dist], "description": schema.describe()}

    def text(self, schema: Text, required: bool) -> dict:
        out: dict[str, Any] = {"type": "string", "minLength": 1}
        choices = schema._choices()
        if choices:
            out["enum"] = list(choices)
        if schema.pattern:
            out["pattern"] = f"^(?:{schema.pattern})$"
        return out

    def list_of(self, schema: ListOf, required: bool) -> dict:
        out: dict[str, Any] = {"type": "array", "items": self(schema.item, required)}
        if schema.min_len:
            out["minItems"] = schema.min_len
        if schema.max_len is not None:
            out["maxItems"] = schema.max_len
        return out

    def map_of(self, schema: MapOf, required: bool) -> dict:
        out: dict[str, Any] = {
            "type": "object",
            "additionalProperties": self(schema.value, required),
        }
        if schema.keys is not None:
            out["propertyNames"] = {"enum": list(schema.keys)}
        elif schema.key_pattern is not None:
            out["propertyNames"] = {"pattern": f"^(?:{schema.key_pattern})$"}
        if schema.min_len:
            out["minProperties"] = schema.min_len
        return out

    def record(self, schema: Record, required: bool, extra: dict | None = None) -> dict:
        properties: dict[str, Any] = dict(extra or {})
        for key, field in schema.fields.items():
            inner = required and key not in PRESET_SECTIONS
            item = self(field.schema, inner)
            if key in PRESET_SECTIONS and isinstance(field.schema, MapOf):
                entry = item["additionalProperties"]  # a node or link: may name a preset
                preset = {"type": "string", "minLength": 1, "description": "a preset name"}
                # a tagged entry (a link's kind) is a record per case
                for target in [entry, *(case["then"] for case in entry.get("allOf", ()))]:
                    if target.get("type") == "object" and "properties" in target:
                        target["properties"] = {"preset": preset, **target["properties"]}
            if field.doc:
                item["description"] = field.doc
            if not field.required and field.default is not None and _jsonable(field.default):
                item["default"] = field.default
            elif field.default == math.inf and _accepts_unbounded(field.schema):
                item["default"] = UNBOUNDED
            properties[key] = item
        out: dict[str, Any] = {
            "type": "object",
            "title": schema.name,
            "properties": properties,
            "additionalProperties": False,
        }
        exclusive = {k for group in schema.exclusive for k in group}
        if required:
            needed = [k for k, f in schema.fields.items() if f.required and k not in exclusive]
            if needed:
                out["required"] = needed
            if schema.exclusive:
                out["allOf"] = [
                    {"oneOf": [{"required": [k]} for k in group]} for group in schema.exclusive
                ]
        return out

    def tagged(self, schema: Tagged, required: bool) -> dict:
        variants = schema.variants()
        names = list(variants)
        tag = {"type": "string", "enum": names}
        cases = []
        for name, record in variants.items():
            then = self.record(record, required, extra={schema.tag: tag})
            cases.append(
                {
                    "if": {"required": [schema.tag], "properties": {schema.tag: {"const": name}}},
                    "then": then,
                }
            )
        if schema.default is not None and schema.default in variants:
            default = self.record(variants[schema.default], required, extra={schema.tag: tag})
            cases.append({"if": {"not": {"required": [schema.tag]}}, "then": default})
        out: dict[str, Any] = {
            "type": "object",
            "properties": {schema.tag: tag},
            "allOf": cases,
            "description": schema.describe(),
        }
        if schema.default is None and required:
            out["required"] = [schema.tag]
        return out

    def model_choice(self, required: bool) -> dict:
        """One of the model sources (``zoo``, ``onnx``, ``tflite``, ``ops``), each with the
        keys every source takes (techniques, accuracy, family)."""
        from simulator.graph.zoo import zoo_names
        from simulator.spec.modeldefs import DTYPES, MODEL_SOURCES, common_keys

        common = self.record(common_keys(), required)["properties"]
        zoo: dict[str, Any] = {
            "type": "object",
            "title": "zoo model",
            "properties": {
                "zoo": {"type": "string", "enum": list(zoo_names())},
                "dtype": {"type": "string", "enum": list(DTYPES), "default": "fp32"},
                "options": {"type": "object", "description": "the builder's keyword options"},
            },
        }
        sources: dict[str, dict[str, Any]] = {"zoo": zoo}
        for key, (_, schema) in MODEL_SOURCES.items():
            if isinstance(schema, Record):
                sources[key] = self.record(schema, required)
        variants = []
        for key, body in sources.items():
            variants.append(
                {
                    "type": "object",
                    "title": body.get("title", key),
                    "required": [key],
                    "properties": {**body["properties"], **common},
                    "additionalProperties": False,
                }
            )
        return {"oneOf": variants, "description": "a model with 'zoo', 'onnx', 'tflite' or 'ops'"}


def scenario_json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a scenario file as written.

    Returns
    -------
    dict
        A JSON-serialisable schema; registries' names are read now.
    """
    from simulator.spec.definitions import SCENARIO

    body = _Converter()(SCENARIO)
    return {
        "$schema": DIALECT,
        "title": "socsim scenario",
        "description": "A socsim scenario file (docs/scenario-format.md); generated by "
        "`socsim schema` from the loader's schema tree.",
        **{k: v for k, v in body.items() if k != "title"},
    }


def schema_text() -> str:
    """:func:`scenario_json_schema` as JSON text, sorted keys kept in schema order."""
    return json.dumps(scenario_json_schema(), indent=2, allow_nan=False) + "\n"
