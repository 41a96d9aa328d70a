"""Building a scenario's platform: validated ``nodes:`` and ``links:`` sections into
:class:`~simulator.hardware.units.Node` and :class:`~simulator.network.topology.Link`.

Domain errors (a unit's ``__post_init__`` check, a radio's options) become problems at
the YAML path of the unit, node or link, so every one of them is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from simulator.errors import SocsimError
from simulator.hardware.dvfs import DvfsTable, OperatingPoint
from simulator.hardware.memory import CacheLevel
from simulator.hardware.thermal import ThermalModel
from simulator.hardware.units import ComputeUnit, Node, SyncPair
from simulator.network.impairments import BandwidthDistribution, Jitter
from simulator.network.medium import station_link_name
from simulator.network.radio import build_radio
from simulator.network.topology import Link
from simulator.schema import Context, Loc, nearest
from simulator.spec.assumptions import warn_node_defaults, warn_unit_defaults
from simulator.spec.mobilitydefs import build_coverage
from simulator.spec.stochdefs import unit_fields


def build_nodes(checked: Mapping, raw: Mapping, ctx: Context) -> list[Node]:
    """The nodes of a checked ``nodes:`` section; problems go to ``ctx``."""
    nodes: list[Node] = []
    for name, spec in checked.items():
        units = []
        for unit_name, unit in spec["units"].items():
            loc = Loc("nodes").child(raw, name).child(raw[name], "units")
            if "default" not in unit["efficiency"]:
                ctx.problem(
                    loc.child(raw[name]["units"], unit_name),
                    "efficiency needs a 'default' entry for the op kinds not listed",
                )
                continue
            supports = frozenset(unit["supports"]) if unit["supports"] is not None else None
            predictor = unit["predictor"]["file"] if unit["predictor"] else None
            fields = {**unit, "supports": supports, "predictor": predictor}
            unit_loc = loc.child(raw[name]["units"], unit_name)
            warn_unit_defaults(name, unit_name, raw[name]["units"][unit_name], unit_loc)
            try:
                fields["caches"] = cache_levels(unit["caches"])
                fields.update(_dvfs_fields(unit))
                fields.update(unit_fields(unit))
                units.append(ComputeUnit(name=unit_name, **fields))
            except SocsimError as exc:
                ctx.problem(loc.child(raw[name]["units"], unit_name), str(exc))
        if units:
            node_loc = Loc("nodes").child(raw, name)
            warn_node_defaults(name, raw[name], len(spec["units"]), node_loc)
            pairs = tuple(
                SyncPair(frozenset(p["units"]), p["mechanism"], p["sync_s"])
                for p in spec["sync_pairs"]
            )
            others = {
                k: v
                for k, v in spec.items()
                if k not in ("units", "sync_pairs", "thermal", "fleet")
            }
            try:
                others["caches"] = cache_levels(spec["caches"])
                thermal = ThermalModel(**spec["thermal"]) if spec["thermal"] else None
                nodes.append(
                    Node(name=name, units=tuple(units), sync_pairs=pairs, thermal=thermal, **others)
                )
            except SocsimError as exc:
                ctx.problem(Loc("nodes").child(raw, name), str(exc))

    return nodes


def build_links(checked: Mapping, raw: Mapping, ctx: Context, seed: int = 0) -> list[Link]:
    """The links of a checked ``links:`` section; problems go to ``ctx``. ``seed`` is the
    scenario's (random-waypoint paths draw from it)."""
    links: list[Link] = []
    joined: dict[frozenset, str] = {}
    for name, spec in checked.items():
        loc = Loc("links").child(raw, name)
        if spec["kind"] == "shared":
            links += _station_links(name, spec, raw[name], loc, ctx, joined)
            continue
        a, b = spec["ends"]  # known nodes: see _check_names
        ends_loc = loc.child(raw[name], "ends")
        if a == b:
            ctx.problem(ends_loc, f"a link must join two different nodes, got [{a}, {b}]")
            continue
        pair = frozenset((a, b))
        if pair in joined:
            ctx.problem(
                ends_loc,
                f"links '{joined[pair]}' and '{name}' both join {a} and {b}; give one link "
                "(reverse_bandwidth_mbps sets the other direction)",
            )
            continue
        joined[pair] = name
        try:
            radio = build_radio(spec["radio"]) if spec["radio"] else None
        except SocsimError as exc:
            ctx.problem(loc.child(raw[name], "radio"), str(exc))
            continue
        reverse = spec["reverse_bandwidth_bps"] or spec["bandwidth_bps"]
        traces: dict[str, tuple[tuple[float, float], ...]] = {}
        for direction in ("bandwidth_trace", "reverse_bandwidth_trace"):
            inline, from_file = spec[f"{direction}_mbps"], spec[f"{direction}_file"]
            if inline is not None and from_file is not None:
                ctx.problem(loc, f"give {direction}_mbps or {direction}_file, not both")
            points = inline if inline is not None else from_file  # (s, bit/s) both
            traces[direction] = tuple(points or ())
        distributions: dict[str, BandwidthDistribution | None] = {}
        for key in ("bandwidth_distribution", "reverse_bandwidth_distribution"):
            try:
                distributions[key] = (
                    BandwidthDistribution.from_options(spec[key]) if spec[key] else None
                )
            except SocsimError as exc:
                ctx.problem(loc.child(raw[name], key), str(exc))
        jitter: Jitter | None = None
        if spec["jitter"]:
            try:
                options = dict(spec["jitter"])
                jitter = Jitter(options.pop("dist"), options)
            except SocsimError as exc:
                ctx.problem(loc.child(raw[name], "jitter"), str(exc))
        mobile: dict = {}
        if spec["mobility"] is not None:
            given = {k: v for k, v in distributions.items() if v is not None}
            found = mobile_fields(spec, name, seed, traces, given)
            if isinstance(found, str):
                ctx.problem(loc.child(raw[name], "mobility"), found)
                continue
            mobile = found
        try:
            links.append(
                Link(
                    name,
                    a,
                    b,
                    spec["latency_s"],
                    spec["bandwidth_bps"],
                    reverse,
                    radio,
                    spec["technology"],
                    sharing=spec["sharing"],
                    outages=tuple(tuple(o) for o in spec["outages_s"]) + mobile.pop("outages", ()),
                    loss_rate=spec["loss_rate"],
                    mtu_bytes=spec["mtu_bytes"],
                    bandwidth_trace=mobile.get("bandwidth_trace", traces["bandwidth_trace"]),
                    reverse_bandwidth_trace=mobile.get(
                        "reverse_bandwidth_trace", traces["reverse_bandwidth_trace"]
                    ),
                    bandwidth_distribution=distributions.get("bandwidth_distribution"),
                    reverse_bandwidth_distribution=distributions.get(
                        "reverse_bandwidth_distribution"
                    ),
                    jitter=jitter,
                    coverage=mobile.get("coverage"),
                )
            )
        except SocsimError as exc:
            ctx.problem(loc, str(exc))
    return links


def mobile_fields(
    spec: Mapping, name: str, seed: int, traces: Mapping, randoms: Mapping
) -> dict | str:
    """A mobile link's Link fields (both traces, the interruptions as outages, the
    coverage), or the problem with its ``mobility:`` block."""
    clash = [f"{k}_mbps/_file" for k, v in traces.items() if v]
    clash += [k for k in randoms if k.endswith("bandwidth_distribution")]
    if clash:
        return f"a mobile link's bandwidth comes from its mobility; remove {', '.join(clash)}"
    try:
        cover = build_coverage(spec["mobility"], name, seed)
    except SocsimError as exc:
        return str(exc)
    return {
        "bandwidth_trace": cover.steps,
        "reverse_bandwidth_trace": cover.steps,
        "outages": cover.interruptions,
        "coverage": cover,
    }


def _station_links(
    name: str, spec: Mapping, raw: Mapping, loc: Loc, ctx: Context, joined: dict
) -> list[Link]:
    """The links of a shared medium: one per station, ``<medium>/<station>``, from the
    station (``a``) to the access point (``b``) at the station's rates."""
    hub = spec["access_point"]
    try:
        radio = build_radio(spec["radio"]) if spec["radio"] else None
    except SocsimError as exc:
        ctx.problem(loc.child(raw, "radio"), str(exc))
        return []
    up = spec["bandwidth_bps"]
    down = spec["reverse_bandwidth_bps"] or up
    stations = spec["stations"]
    for station in spec["station_rates"]:
        if station not in stations:
            ctx.problem(
                loc.child(raw, "station_rates").child(raw["station_rates"], station),
                f"'{station}' is not a station of shared link '{name}'; stations: "
                f"{', '.join(stations)}",
                nearest(station, stations),
            )
    links = []
    for i, station in enumerate(stations):
        where = loc.child(raw, "stations").child(raw["stations"], i)
        pair = frozenset((station, hub))
        if station == hub:
            ctx.problem(where, f"station '{station}' is the access point of '{name}'")
            continue
        if pair in joined:
            ctx.problem(where, f"'{joined[pair]}' already joins {station} and {hub}")
            continue
        link_name = station_link_name(name, station)
        joined[pair] = link_name
        own = spec["station_rates"].get(station)
        rates = (up, down) if own is None else (own["up_bps"], own["down_bps"] or own["up_bps"])
        links.append(
            Link(
                link_name,
                station,
                hub,
                spec["latency_s"],
                *rates,
                radio,
                spec["technology"],
                medium=name,
                fairness=spec["fairness"],
            )
        )
    return links


def cache_levels(specs: list[Mapping]) -> tuple[CacheLevel, ...]:
    """Cache levels from validated ``caches:`` items (SI keys)."""
    return tuple(CacheLevel(s["name"], s["size_bytes"], s["bandwidth_bytes_per_s"]) for s in specs)


def _dvfs_fields(unit: dict) -> dict:
    """ComputeUnit fields from a validated ``dvfs:`` block (C fitted to ``active_w``)."""
    spec = unit["dvfs"]
    if spec is None:
        return {"dvfs": None}
    points = [OperatingPoint(p["frequency_hz"], p["voltage_v"]) for p in spec["points"]]
    table = DvfsTable.fitted(points, unit["active_w"], spec["static_w"], unit["idle_w"])
    options = dict(spec["governor"])
    return {
        "dvfs": table,
        "governor": options.pop("name"),
        "governor_options": options,
        "throttled_max_hz": spec["throttled_max_hz"],
    }
