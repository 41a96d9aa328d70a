"""Render the scenario format's key tables (Markdown) from the schema definitions.

``docs/scenario-format.md`` embeds this output between markers; a test checks it is
current, so the documentation cannot drift from what the loader accepts.
"""

from __future__ import annotations

import math

from simulator.graph.techniques import TECHNIQUES
from simulator.network.impairments import CAPACITY_DISTRIBUTIONS, JITTERS
from simulator.network.radio import RADIO_MODELS
from simulator.placement.base import POLICIES
from simulator.schema import UNBOUNDED, Field, ListOf, Record
from simulator.spec import definitions as d
from simulator.spec import mobilitydefs as mob
from simulator.spec import modeldefs as m
from simulator.spec.failuredefs import FAILURE
from simulator.spec.fleets import FLEET
from simulator.spec.linkdefs import LINK, MEDIUM, STATION_RATE
from simulator.spec.requestdefs import ENCODINGS, ENERGY_WINDOW
from simulator.spec.scoredefs import COMBINATION, SCORE
from simulator.spec.stochdefs import BACKGROUND, DISTRIBUTION_RECORDS
from simulator.spec.sweepdefs import RANGE, SWEEP
from simulator.sweep.executors import EXECUTORS
from simulator.workload import ARRIVALS

BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m simulator.spec.reference) -->"
END = "<!-- END GENERATED REFERENCE -->"


def _default(field: Field) -> str:
    if field.required:
        return "**required**"
    value = field.default
    if value is None:
        return "—"
    if isinstance(value, float) and math.isinf(value):
        return f"`{UNBOUNDED}`"
    if value in ({}, []):
        return "empty"
    return f"`{value}`"


def record_table(record: Record) -> str:
    """A Markdown table of a record's keys: expected value, default, SI name, notes."""
    lines = ["| key | expected | default | inside (SI) | notes |", "|---|---|---|---|---|"]
    exclusive = {k for group in record.exclusive for k in group}
    for key, field in record.fields.items():
        default = "one of a group" if key in exclusive else _default(field)
        target = f"`{field.to}`" if field.to else ""
        expected = field.schema.describe().replace("|", "\\|")
        lines.append(f"| `{key}` | {expected} | {default} | {target} | {field.doc} |")
    if record.exclusive:
        groups = "; ".join(", ".join(f"`{k}`" for k in g) for g in record.exclusive)
        lines.append(f"\nGive exactly one of: {groups}.")
    return "\n".join(lines)


def render() -> str:
    """The whole generated reference section."""
    sections = [
        ("Top level", d.SCENARIO),
        ("`nodes.<name>`", d.NODE),
        ("`nodes.<name>.units.<name>`", d.UNIT),
        (
            "`nodes.<name>.units.<name>.variation.<op kind or default>` (`distribution: "
            "lognormal` or `gamma`; `exponential` and `deterministic` take no `cv`; "
            "see stochastic.md)",
            DISTRIBUTION_RECORDS["lognormal"],
        ),
        ("`nodes.<name>.units.<name>.background` (see stochastic.md)", BACKGROUND),
        ("`caches[i]` (of a unit or a node; see cost-model.md)", d.CACHE_LEVEL),
        ("`nodes.<name>.fleet` (see fleets.md)", FLEET),
        ("`links.<name>` (`kind: point_to_point`, the default)", LINK),
        ("`links.<name>.mobility` (see mobility.md)", mob.MOBILITY),
        ("`links.<name>.mobility.random_waypoint`", mob.RANDOM_WAYPOINT),
        ("`links.<name>.mobility.path_loss`", mob.PATH_LOSS),
        ("`links.<name>.mobility.handover`", mob.HANDOVER),
        ("`links.<name>` with `kind: shared` (an access point; see fleets.md)", MEDIUM),
        ("`links.<name>.station_rates.<station>` (`kind: shared`)", STATION_RATE),
        ("`models.<name>` (every source; see techniques.md)", m.common_keys()),
        ("`models.<name>.exits[i]` (early exits, see early-exit.md)", m.EXIT),
        ("`models.<name>` (ONNX file, see onnx.md)", m.ONNX_MODEL),
        ("`models.<name>` (TFLite file, see onnx.md)", m.TFLITE_MODEL),
        ("`models.<name>` (inline)", m.INLINE_MODEL),
        ("`models.<name>.ops[i]`", m.INLINE_OP),
        ("`models.<name>.edges[i]`", m.INLINE_EDGE),
        ("`workload[i]`", d.WORKLOAD),
        ("`workload[i].adaptive` (with `dispatch: adaptive`)", d.ADAPTIVE),
        ("`workload[i].input` (`encode: none`, the default; see requests.md)", ENCODINGS["none"]),
        ("`workload[i].input` with `encode: jpeg`", ENCODINGS["jpeg"]),
        ("`energy_window` (see requests.md)", ENERGY_WINDOW),
        ("`failures[i]` (see failures.md)", FAILURE),
        ("`sweep` (read by `socsim sweep`, see sweeps.md)", SWEEP),
        ("`sweep.parameters.<path>` as a range", RANGE),
        ("`score` (read by `socsim score`, see techniques.md)", SCORE),
        ("`score.combinations.<name>`", COMBINATION),
    ]
    parts = [BEGIN, ""]
    for title, record in sections:
        parts += [f"### {title}", "", record_table(record), ""]
    families = [
        ("`arrival` processes (`workload[i].arrival.process`)", ARRIVALS),
        ("Radio models (`links.<name>.radio.model`, default `constant`)", RADIO_MODELS),
        (
            "Bandwidth distributions (`links.<name>.bandwidth_distribution.dist`)",
            CAPACITY_DISTRIBUTIONS,
        ),
        ("Jitter distributions (`links.<name>.jitter.dist`)", JITTERS),
        ("Sweep executors (`sweep.executor.name`, default `processes`)", EXECUTORS),
        ("Placement policies (`placement.policy`)", POLICIES),
        ("Techniques (`models.<name>.techniques[i].name`)", TECHNIQUES),
    ]
    for title, registry in families:
        parts += [f"### {title}", ""]
        for name in registry:
            entry = registry.get(name)
            doc = entry.doc.strip().splitlines()[0]
            parts += [f"#### `{name}`", "", doc, "", record_table(entry.options), ""]
            for key, field in entry.options.fields.items():  # lists of records: their keys
                if isinstance(field.schema, ListOf) and isinstance(field.schema.item, Record):
                    parts += [f"Each item of `{key}`:", "", record_table(field.schema.item), ""]
    parts.append(END)
    return "\n".join(parts)


def splice(document: str) -> str:
    """``document`` with its generated section replaced by the current rendering."""
    head, _, rest = document.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + render() + tail


if __name__ == "__main__":
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "scenario-format.md"
    path.write_text(splice(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated {path}")
