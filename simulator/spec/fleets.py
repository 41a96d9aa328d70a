"""Fleets: a node written once and instantiated ``count`` times, each member varied.

``nodes.<name>.fleet: {count: N, vary: {<path>: <distribution>}}`` turns node ``name``
into members ``name[0]`` ... ``name[N-1]`` (docs/fleets.md). The expansion is a pure
function of the preset-expanded document and the scenario's seed, done before the
schema check, so every later stage sees plain nodes, links and apps:

* a member is the node's body with each ``vary`` path replaced by a draw (in the field's
  YAML units, truncated to its valid range) from its own stream
  ``SeedSequence([seed, FLEET_TAG, crc32(name)], spawn_key=(i, crc32(path)))``: member
  ``i``'s values do not depend on ``count``, on the other paths or on their order;
* a point-to-point link with the fleet as an end becomes one link per member,
  ``<link>/<member>``; a shared link's ``stations`` and ``station_rates`` may name the
  fleet for all its members;
* a workload entry whose ``source`` is the fleet becomes one app per member,
  ``<app>[i]`` on ``<name>[i]``; its placement's references to the fleet's node
  (``node: phone``, ``unit: phone.cpu``) name the member.

:class:`FleetMap` says which member and app came from which fleet (the ``fleets``
result table aggregates by it).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simulator.errors import Problem
from simulator.limits import MAX_FLEET_COUNT
from simulator.schema import (
    INVALID,
    Context,
    Field,
    Loc,
    MapOf,
    Number,
    Record,
    Schema,
    Tagged,
    nearest,
)
from simulator.spec.uncertain import DISTRIBUTION_FORMS, Uncertain
from simulator.spec.yamlnodes import YamlMap, YamlSeq, mark_of

#: Second entropy word of the fleet streams (never the run's or the Monte Carlo ones).
FLEET_TAG = 0x666C  # "fl"


class VaryValue(Schema):
    """A ``vary`` entry's distribution; its numbers are checked against the field's own
    schema when the fleet is expanded (the path says which field)."""

    def describe(self) -> str:
        return DISTRIBUTION_FORMS

    def check(self, value: Any, loc: Loc, ctx: Context) -> Any:
        if not isinstance(value, Mapping):
            return ctx.problem(loc, f"expected a distribution, {DISTRIBUTION_FORMS}")
        return dict(value)


FLEET = Record(
    {
        "count": Field(
            Number(integer=True, ge=1, le=MAX_FLEET_COUNT),
            doc="members, named <node>[0] ... <node>[count-1]; sweepable",
        ),
        "vary": Field(
            MapOf(VaryValue()),
            default={},
            doc="node path (units.cpu.peak_gflops.fp32) -> {mean, sd} or {low, high}, "
            "drawn per member from the seed",
        ),
    },
    name="fleet",
)


def member_name(name: str, index: int) -> str:
    """``phone``, 17 -> ``phone[17]``."""
    return f"{name}[{index}]"


@dataclass(frozen=True)
class FleetMap:
    """Which nodes and apps a document's fleets made.

    Attributes
    ----------
    members : Mapping[str, tuple of str]
        Fleet name -> its member nodes, in index order.
    apps : Mapping[str, tuple of str, str]
        Member app (``camera[17]``) -> (the workload entry's app, the fleet).
    links : Mapping[str, str]
        Member link (``lte/phone[17]``) -> the link written in the document.
    entries : tuple of int
        Per workload entry of the expanded document, the index of the entry written in
        the document (empty when the document has no fleet).
    """

    members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    apps: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)
    entries: tuple[int, ...] = ()

    def written_index(self, index: int) -> int:
        """The index in the document of the workload entry that made expanded entry
        ``index`` (a fleet's entry makes one per member)."""
        return self.entries[index] if index < len(self.entries) else index


_WORKLOAD_PATH = re.compile(r"^workload\[([0-9]+)\]")


def fold_problems(problems: list[Problem], fleets: FleetMap) -> list[Problem]:
    """``problems`` with each member's workload path (``workload[7]``) as the document
    writes it (``workload[1]``), a problem that every member of a fleet has once.

    The expanded document has an entry per member, so the schema finds a mistake in a
    fleet's entry once per member, at the expanded index.
    """
    if not fleets.entries:
        return problems
    out: dict[tuple, Problem] = {}
    for problem in problems:
        match = _WORKLOAD_PATH.match(problem.path)
        if match is not None:
            written = f"workload[{fleets.written_index(int(match.group(1)))}]"
            problem = replace(problem, path=written + problem.path[match.end() :])
        key = (problem.path, problem.message, problem.file, problem.line, problem.suggestion)
        out.setdefault(key, problem)
    return list(out.values())


def expand_fleets(document: Mapping, seed: Any, ctx: Context) -> tuple[Mapping, FleetMap]:
    """The document with every fleet expanded, and what came from which fleet.

    Problems (a bad ``fleet`` block, an unknown ``vary`` path, a link between two fleets)
    go to ``ctx``; a fleet with problems stays one node (without ``fleet``), so the rest
    of the document is still checked against it.
    """
    nodes = document.get("nodes")
    if not isinstance(nodes, Mapping) or not any(
        isinstance(body, Mapping) and "fleet" in body for body in nodes.values()
    ):
        return document, FleetMap()
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0 else 0
    node_loc = Loc("nodes", document, "nodes")
    new_nodes = YamlMap(mark=getattr(nodes, "mark", None))
    members: dict[str, tuple[str, ...]] = {}
    for name, body in nodes.items():
        if not (isinstance(body, Mapping) and "fleet" in body):
            _put(new_nodes, nodes, name, name, body)
            continue
        loc = node_loc.child(nodes, name)
        template = _without(body, "fleet")
        if "private" not in template:
            # a member is someone's own device: other nodes' apps do not choose its units
            # (and a policy need not weigh every member for every other: devices²)
            template["private"] = True
        spec = FLEET.check(body["fleet"], loc.child(body, "fleet"), ctx)
        draws = None if spec is INVALID else _draws(name, body, spec, seed, loc, ctx)
        if draws is None:
            _put(new_nodes, nodes, name, name, template)
            continue
        names = tuple(member_name(name, i) for i in range(spec["count"]))
        for member, values in zip(names, draws, strict=True):
            if member in nodes:
                ctx.problem(loc, f"fleet member '{member}' is also a node of its own")
            _put(new_nodes, nodes, name, member, _varied(template, values))
        members[name] = names
    out = _copy_map(document)
    out["nodes"] = new_nodes
    if not members:
        return out, FleetMap()
    apps: dict[str, tuple[str, str]] = {}
    links: dict[str, str] = {}
    entries: list[int] = []
    if isinstance(document.get("links"), Mapping):
        out["links"] = _expand_links(document["links"], members, links, ctx)
    if isinstance(document.get("workload"), list):
        out["workload"] = _expand_workload(document["workload"], members, apps, entries)
    return out, FleetMap(members, apps, links, tuple(entries))


# -- variation ---------------------------------------------------------------------------
def _draws(
    name: str, body: Mapping, spec: Mapping, seed: int, loc: Loc, ctx: Context
) -> list[dict[tuple, float]] | None:
    """Per member, the value of every ``vary`` path (YAML units); None after a problem."""
    from simulator.spec.definitions import NODE  # definitions imports this module

    vary_loc = loc.child(body, "fleet").child(body["fleet"], "vary")
    raw_vary = body["fleet"].get("vary", {})
    fields = []
    for path, value in spec["vary"].items():
        where = vary_loc.child(raw_vary, path)
        number = _field_at(NODE, body, path, name, where, ctx)
        if number is None:
            continue
        dist = Uncertain(number).distribution(value, where, ctx)
        if dist is not INVALID:
            fields.append((tuple(path.split(".")), path, dist, Uncertain(number).interval()))
    if len(fields) != len(spec["vary"]):
        return None
    base = [seed, FLEET_TAG, zlib.crc32(name.encode())]
    out = []
    for i in range(spec["count"]):
        values = {}
        for keys, path, dist, interval in fields:
            stream = np.random.SeedSequence(base, spawn_key=(i, zlib.crc32(path.encode())))
            values[keys] = dist.draw(np.random.default_rng(stream), interval)
        out.append(values)
    return out


def _field_at(
    schema: Schema, body: Any, path: str, node: str, where: Loc, ctx: Context
) -> Number | None:
    """The Number schema of the numeric field at ``path`` in a node, or None (reported)."""
    here: Any = body
    done: list[str] = []
    for key in path.split("."):
        if isinstance(schema, Uncertain):
            schema = schema.number
        if isinstance(schema, Tagged) and isinstance(here, Mapping):
            schema = schema.variants().get(here.get(schema.tag, schema.default), schema)
        if isinstance(schema, Record):
            choices = [k for k in schema.fields if k != "fleet"]
            field_ = schema.fields.get(key) if key != "fleet" else None
            if field_ is None:
                _unknown(path, done, key, choices, node, where, ctx)
                return None
            schema = field_.schema
        elif isinstance(schema, MapOf):
            names = list(schema.keys or (here if isinstance(here, Mapping) else []))
            if key not in names:
                _unknown(path, done, key, names, node, where, ctx)
                return None
            schema = schema.value
        else:
            _unknown(path, done, key, [], node, where, ctx)
            return None
        here = here.get(key) if isinstance(here, Mapping) else None
        done.append(key)
    if isinstance(schema, Uncertain):
        return schema.number
    if isinstance(schema, Number) and not schema.integer:
        return schema
    ctx.problem(where, f"vary path '{path}' of fleet '{node}' is not a number field of a node")
    return None


def _unknown(
    path: str,
    done: list[str],
    key: str,
    choices: list,
    node: str,
    where: Loc,
    ctx: Context,
) -> None:
    at = ".".join(done) or "the node"
    valid = ", ".join(map(str, choices)) or "nothing (not a mapping)"
    ctx.problem(
        where,
        f"vary path '{path}' of fleet '{node}' is unknown: no '{key}' in {at}; valid there: "
        f"{valid}",
        nearest(key, [str(c) for c in choices]),
    )


def _varied(template: Mapping, values: Mapping[tuple, float]) -> Mapping:
    """A copy of ``template`` with each path of ``values`` set (mappings made on the way)."""
    out = _copy_map(template)
    for keys, value in values.items():
        here = out
        for key in keys[:-1]:
            child = here.get(key)
            child = _copy_map(child) if isinstance(child, Mapping) else YamlMap()
            here[key] = child
            here = child
        here[keys[-1]] = value
    return out


# -- what names the fleet ----------------------------------------------------------------
def _expand_links(links: Mapping, members: Mapping, made: dict, ctx: Context) -> Mapping:
    out = YamlMap(mark=getattr(links, "mark", None))
    for name, body in links.items():
        if not isinstance(body, Mapping):
            _put(out, links, name, name, body)
        elif body.get("kind") == "shared":
            _put(out, links, name, name, _expand_medium(body, members))
        else:
            ends = body.get("ends")
            ends = ends if isinstance(ends, list) else []
            fleets = [e for e in ends if isinstance(e, str) and e in members]
            if len(fleets) > 1:
                loc = Loc("links").child(links, name).child(body, "ends")
                ctx.problem(loc, f"link '{name}' joins two fleets; join one fleet to a node")
            if len(fleets) != 1:
                _put(out, links, name, name, body)
                continue
            for member in members[fleets[0]]:
                copy = _copy_map(body)
                copy["ends"] = YamlSeq([member if e == fleets[0] else e for e in ends])
                copy["ends"].item_marks.extend(getattr(ends, "item_marks", []))
                _put(out, links, name, f"{name}/{member}", copy)
                made[f"{name}/{member}"] = name
    return out


def _expand_medium(body: Mapping, members: Mapping) -> Mapping:
    copy = _copy_map(body)
    stations = body.get("stations")
    if isinstance(stations, list):
        listed = YamlSeq(mark=getattr(stations, "mark", None))
        for i, station in enumerate(stations):
            for name in members.get(station, (station,)) if isinstance(station, str) else [station]:
                listed.append(name)
                listed.item_marks.append(mark_of(stations, i))
        copy["stations"] = listed
    rates = body.get("station_rates")
    if isinstance(rates, Mapping):
        by_station = YamlMap(mark=getattr(rates, "mark", None))
        for key, rate in rates.items():  # a fleet's entry first: a member's own overrides it
            for name in members.get(key, ()):
                if name not in rates:
                    _put(by_station, rates, key, name, rate)
            if key not in members:
                _put(by_station, rates, key, key, rate)
        copy["station_rates"] = by_station
    return copy


def _expand_workload(workload: list, members: Mapping, apps: dict, entries: list) -> list:
    """The workload with a fleet's entry once per member; ``apps`` and ``entries`` (each
    expanded entry's index in ``workload``) filled in."""
    out = YamlSeq(mark=getattr(workload, "mark", None))
    for i, item in enumerate(workload):
        source = item.get("source") if isinstance(item, Mapping) else None
        app = item.get("app") if isinstance(item, Mapping) else None
        if not (isinstance(source, str) and source in members and isinstance(app, str)):
            out.append(item)
            out.item_marks.append(mark_of(workload, i))
            entries.append(i)
            continue
        for index, member in enumerate(members[source]):
            copy = _renamed(item, source, member)
            copy["app"] = member_name(app, index)
            copy["source"] = member
            out.append(copy)
            out.item_marks.append(mark_of(workload, i))
            entries.append(i)
            apps[copy["app"]] = (app, source)
    return out


def _renamed(value: Any, fleet: str, member: str) -> Any:
    """``value`` with ``fleet`` and ``fleet.<unit>`` strings naming ``member`` instead."""
    if isinstance(value, str):
        if value == fleet:
            return member
        return member + value[len(fleet) :] if value.startswith(fleet + ".") else value
    if isinstance(value, Mapping):
        out = _copy_map(value)
        for key in out:
            if key not in ("app", "model"):
                out[key] = _renamed(out[key], fleet, member)
        return out
    if isinstance(value, list):
        seq = YamlSeq(mark=getattr(value, "mark", None))
        seq.extend(_renamed(v, fleet, member) for v in value)
        seq.item_marks.extend(getattr(value, "item_marks", []))
        return seq
    return value


# -- marked containers -------------------------------------------------------------------
def _copy_map(value: Mapping) -> YamlMap:
    """A shallow copy that keeps the YAML marks (problems still name file and line)."""
    out = YamlMap(value, mark=getattr(value, "mark", None))
    out.key_marks.update(getattr(value, "key_marks", {}))
    return out


def _without(value: Mapping, key: str) -> YamlMap:
    out = _copy_map(value)
    out.pop(key, None)
    return out


def _put(out: YamlMap, source: Mapping, key: str, name: str, value: Any) -> None:
    """``out[name] = value``, marked where ``source[key]`` is written."""
    out[name] = value
    mark = mark_of(source, key)
    if mark is not None:
        out.key_marks[name] = mark
