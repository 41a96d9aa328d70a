"""Building a :class:`Scenario` from a checked document: the loader's last stage.

The document has passed the schema and its names were checked
(:mod:`simulator.spec.loader`); here its nodes, links, models, workload entries, energy
window and failures become the frozen domain objects, and every rule of
:mod:`simulator.rules` they would raise on is reported at once instead. The scenario's
``document`` is the one written, with files it named inlined, so it reruns from anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from simulator.errors import ModelError, SocsimError
from simulator.graph.model import ModelGraph
from simulator.limits import MAX_REQUESTS
from simulator.placement.base import PlacementSpec
from simulator.platform import Platform
from simulator.rules import (
    adaptive_dispatch,
    app_bounded,
    app_has_placement,
    app_names_unique,
    app_node_phrase,
    collapse_member_units,
    collapse_members,
    online_heft,
    placement_xor_replicas,
    report,
)
from simulator.scheduling import PREDICTIVE_DISPATCHERS, AdaptiveOptions
from simulator.schema import INVALID, Context, Loc, nearest
from simulator.spec.definitions import MEGA
from simulator.spec.failuredefs import build_failures
from simulator.spec.fleets import FleetMap
from simulator.spec.modelbuild import MODEL_BUILDERS
from simulator.spec.modeldefs import deploy_model
from simulator.spec.platformbuild import build_links, build_nodes
from simulator.spec.requestdefs import energy_window, input_bytes
from simulator.spec.scenario import Scenario
from simulator.spec.yamlio import plain
from simulator.workload import WorkloadEntry, expected_requests


def build_scenario(
    checked: dict, raw: Mapping, ctx: Context, source: str, written: Mapping, fleets: FleetMap
) -> Scenario | None:
    """Build the :class:`Scenario` of a document that passed the schema.

    Parameters
    ----------
    checked : dict
        The document as the schema checked it (SI units, SI key names).
    raw : Mapping
        The preset- and fleet-expanded document as read (its marks locate problems).
    ctx : Context
        Where every problem found is reported.
    source : str
        The scenario's file, recorded as ``Scenario.source_file``.
    written : Mapping
        The document as written (fleets unexpanded): the scenario's ``document``.
    fleets : FleetMap
        The fleets ``raw`` was expanded from.

    Returns
    -------
    Scenario or None
        None when a problem was reported into ``ctx``.
    """
    nodes = build_nodes(checked["nodes"], raw["nodes"], ctx)
    links = build_links(checked["links"], raw.get("links", {}), ctx, checked["seed"])
    if ctx.problems:
        return None
    try:
        platform = Platform(nodes, links)
    except SocsimError as exc:
        ctx.problem(Loc("links", raw, "links"), str(exc))
        return None

    models: dict[str, ModelGraph] = {}
    accuracy: dict[str, float | None] = {}
    for name, spec in checked["models"].items():
        loc = Loc("models").child(raw["models"], name)
        try:
            builder = MODEL_BUILDERS[spec["source"]]
            built = builder(name, spec, raw["models"][name], loc, ctx, platform)
            if built is not None:
                models[name] = built
        except ModelError as exc:
            ctx.problem(loc, exc.message)
        except OverflowError:  # options so large that a layer's size is no finite float
            ctx.problem(loc, "the model's options make layer sizes too large to compute")
        if name in models:
            deployed = deploy_model(models[name], spec, raw["models"][name], loc, ctx)
            if deployed is not None:
                models[name], accuracy[name] = deployed

    default_placement = _placement(checked["placement"])
    workload = []
    for error in app_names_unique([entry["app"] for entry in checked["workload"]]):
        report(ctx, error, Loc(""), raw)
    for i, entry in enumerate(checked["workload"]):
        loc = Loc("workload").child(raw["workload"], i)
        item = raw["workload"][i]
        # model and source are known (see _check_names); the rules of simulator.rules
        # that WorkloadEntry and Scenario raise on, here all reported at once:
        app, duration_s = entry["app"], entry["duration_s"] or checked["duration_s"]
        placement = _placement(entry["placement"])
        replicas = tuple(_placement(r) for r in entry["replicas"])
        errors = [
            *app_bounded(app, entry["count"], duration_s, entry["arrival"]["process"]),
            *placement_xor_replicas(app, placement, replicas),
            *app_has_placement(app, placement, replicas, default_placement),
            *online_heft(app, placement, replicas, default_placement, entry["transfer_timeout_s"]),
        ]
        for error in errors:
            report(ctx, error, loc, item)
        adaptive = _adaptive(ctx, loc, item, entry, len(replicas))
        if not errors and adaptive is not INVALID:
            if replicas:
                prefix = f"workload[{i}].replicas"
            elif placement is not None:
                prefix = f"workload[{i}].placement"
            else:
                prefix = "placement"
            _check_placement_refs(ctx, platform, entry["source"], prefix)
            arrival = dict(entry["arrival"])
            workload.append(
                WorkloadEntry(
                    app=entry["app"],
                    model=entry["model"],
                    source=entry["source"],
                    arrival=arrival.pop("process"),
                    arrival_options=arrival,
                    count=entry["count"],
                    duration_s=duration_s,
                    deadline_s=entry["deadline_s"],
                    priority=entry["priority"],
                    placement=placement,
                    replicas=replicas,
                    dispatch=entry["dispatch"],
                    adaptive=adaptive,
                    transfer_timeout_s=entry["transfer_timeout_s"],
                    on_failure=entry["on_failure"],
                    input_bytes=input_bytes(entry["input"]),
                    response_bytes=entry["response_bytes"],
                )
            )
    _check_requests(ctx, workload)
    window = energy_window(ctx, checked["energy_window"], raw)
    failures = build_failures(checked["failures"], raw.get("failures"), platform, ctx)
    if ctx.problems:
        return None
    document = plain(written)  # fleets as written: loading it expands them the same way
    for name, spec in checked["models"].items():
        for key in ("onnx", "tflite"):  # a file path made absolute: reloads from anywhere
            if key in spec:
                document["models"][name][key] = spec[key]
    _inline_traces(document, checked["links"], fleets.links)
    return Scenario(
        name=checked["name"],
        seed=checked["seed"],
        platform=platform,
        models=models,
        accuracy_top1=accuracy,
        workload=tuple(workload),
        placement=default_placement,
        duration_s=checked["duration_s"],
        scheduler=checked["scheduler"],
        failures=failures,
        memory_series=checked["memory_series"],
        plugins=tuple(checked["plugins"]),
        source_file=source,
        document=document,
        energy_window_s=window,
        fleets=fleets,
    )


def _inline_traces(document: dict, links: Mapping[str, Any], written: Mapping[str, str]) -> None:
    """Replace each ``*_trace_file`` of ``document`` by the rows read from it at load, as
    ``*_trace_mbps`` (a mobile link's ``path_file`` as ``path_m``): the resolved scenario
    then reruns from any folder and never reads another file of the same name.
    ``written`` maps a fleet member's link to the link written in the document (its
    members share the rows)."""
    for name, spec in links.items():
        for direction in ("bandwidth_trace", "reverse_bandwidth_trace"):
            steps = spec.get(f"{direction}_file")
            entry = document["links"][written.get(name, name)]
            if steps is None or f"{direction}_file" not in entry:
                continue
            entry.pop(f"{direction}_file", None)
            entry[f"{direction}_mbps"] = [[time_s, _mbps(bps)] for time_s, bps in steps]
        mobility = spec.get("mobility") or {}
        if mobility.get("path_file") is not None:  # a position trace, likewise
            entry = document["links"][name]["mobility"]
            entry.pop("path_file", None)
            entry["path_m"] = [list(row) for row in mobility["path_file"]]


def _mbps(bps: float) -> float:
    """The Mbit/s value that converts back to exactly ``bps`` (``mbps * 1e6`` at load)."""
    mbps = bps / MEGA
    for _ in range(4):  # at most an ulp or two away
        if mbps * MEGA == bps:
            break
        mbps = math.nextafter(mbps, math.inf if mbps * MEGA < bps else -math.inf)
    return mbps


def _check_requests(ctx: Context, workload: list[WorkloadEntry]) -> None:
    """All apps together issue at most MAX_REQUESTS requests (where it can be known)."""
    total = 0.0
    for entry in workload:
        n = expected_requests(entry.arrival, entry.arrival_options, entry.count, entry.duration_s)
        total += n or 0.0
    if total > MAX_REQUESTS:
        ctx.problem(
            Loc("workload"),
            f"the apps issue {total:.3g} requests, more than the {MAX_REQUESTS:,} "
            "(MAX_REQUESTS) one run may simulate; lower count, duration_s or the rate, or "
            "split the run into sweep points",
        )


def _adaptive(ctx: Context, loc: Loc, item: dict, entry: dict, n_replicas: int) -> Any:
    """The AdaptiveOptions of a workload entry (None unless dispatch is 'adaptive'; INVALID
    after reporting a problem)."""
    spec, dispatch = entry["adaptive"], entry["dispatch"]
    errors = list(adaptive_dispatch(entry["app"], dispatch, spec is not None, n_replicas))
    for error in errors:
        report(ctx, error, loc, item)
    if errors:
        return INVALID
    if dispatch not in PREDICTIVE_DISPATCHERS:
        return None
    options = AdaptiveOptions(**spec) if spec is not None else AdaptiveOptions()
    if options.fallback is not None and options.fallback >= n_replicas:
        ctx.problem(
            loc.child(item, "adaptive").child(item["adaptive"], "fallback"),
            f"fallback {options.fallback} is not a replica index (0..{n_replicas - 1})",
        )
        return INVALID
    if options.objective == "weighted" and not options.weights:
        ctx.problem(
            loc.child(item, "adaptive"),
            "objective 'weighted' needs weights, e.g. {latency: 1, device_energy: 0.1}",
        )
        return INVALID
    return options


def _placement(spec: dict | None) -> PlacementSpec | None:
    if spec is None:
        return None
    options = dict(spec)
    return PlacementSpec(options.pop("policy"), options)


def _check_placement_refs(ctx: Context, platform: Platform, source: str, prefix: str) -> None:
    """Resolve the unit/node names under ``prefix`` (the placements of one app)."""
    reported = {(p.path, p.message) for p in ctx.problems}
    for kind, value, loc in ctx.refs:
        if not (loc.path == prefix or loc.path.startswith((prefix + ".", prefix + "["))):
            continue
        if kind == "node" and value not in platform.nodes:
            nodes = ", ".join(collapse_members(list(platform.nodes)))
            message = f"unknown node '{value}'; nodes: {nodes}"
            if (loc.path, message) not in reported:
                ctx.problem(loc, message, nearest(value, platform.nodes))
        if kind == "unit":
            try:
                platform.resolve_unit(value, source)
            except SocsimError:
                local = [uid.split(".", 1)[1] for uid in platform.units_of(source)]
                choices = [*platform.unit_ids, *local]
                units = ", ".join(collapse_member_units(list(platform.unit_ids)))
                message = f"unknown unit '{value}' for {app_node_phrase(source)}; units: {units}"
                if (loc.path, message) not in reported:
                    ctx.problem(loc, message, nearest(value, choices))
