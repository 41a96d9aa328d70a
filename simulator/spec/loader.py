"""Scenario loading: YAML -> includes -> presets -> validation -> :class:`Scenario`.

Every problem of the document is collected and raised at once as a ScenarioError,
each naming its file, YAML path and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.errors import ModelError, Problem, ScenarioError, SocsimError
from simulator.graph.model import ModelGraph
from simulator.limits import MAX_REQUESTS
from simulator.placement.base import PlacementSpec
from simulator.platform import Platform
from simulator.plugins import MODULE_PATTERN, allowed_plugin_names, import_plugins
from simulator.registry import PluginError
from simulator.rules import (
    adaptive_dispatch,
    app_bounded,
    app_has_placement,
    app_names_known,
    app_names_unique,
    collapse_members,
    link_ends_known,
    online_heft,
    placement_xor_replicas,
    report,
)
from simulator.scheduling import PREDICTIVE_DISPATCHERS, AdaptiveOptions
from simulator.schema import INVALID, Context, Loc, nearest
from simulator.spec.definitions import LIBRARY, MEGA, SCENARIO
from simulator.spec.failuredefs import build_failures
from simulator.spec.fleets import FleetMap, expand_fleets
from simulator.spec.modelbuild import MODEL_BUILDERS
from simulator.spec.modeldefs import deploy_model
from simulator.spec.paths import allowed_dirs
from simulator.spec.platformbuild import build_links, build_nodes
from simulator.spec.presets import collect_presets, expand_presets, with_key
from simulator.spec.requestdefs import energy_window, input_bytes
from simulator.spec.scenario import Scenario
from simulator.spec.uncertain import SampleKey, draw_document
from simulator.spec.yamlio import YamlMap, load_yaml_file, plain
from simulator.workload import WorkloadEntry, expected_requests


def load_scenario(
    path: str | Path,
    allow_dirs: Sequence[str | Path] = (),
    allow_plugins: Sequence[str] = (),
    sample: SampleKey | None = None,
) -> Scenario:
    """Load, validate and build the scenario in ``path``.

    Parameters
    ----------
    path : str or Path
        A scenario YAML file; ``include:`` paths are relative to it.
    allow_dirs : sequence of str or Path
        Directories that files named in the scenario (includes, traces) may lie in,
        besides the scenario's own directory and the shipped library (see
        :mod:`simulator.spec.paths`).
    allow_plugins : sequence of str
        Modules (and their submodules) that the scenario's ``plugins:`` may import besides
        installed socsim plug-ins and this process's registrations
        (:func:`simulator.plugins.plugin_allowed`).
    sample : SampleKey, optional
        Draw this Monte Carlo sample of the document's distributions
        (:func:`~simulator.spec.uncertain.draw_document`); without it every distribution
        gives its nominal value (mean or midpoint).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        Listing every problem found (file, YAML path, line, expected value, and the
        nearest valid key or name for typos).
    """
    path = Path(path)
    document = load_yaml_file(path)
    return parse_scenario(
        document,
        base_dir=path.parent,
        source=str(path),
        allow_dirs=allow_dirs,
        allow_plugins=allow_plugins,
        sample=sample,
    )


def parse_scenario(
    document: Mapping[str, Any],
    base_dir: str | Path = ".",
    source: str = "<scenario>",
    allow_dirs: Sequence[str | Path] = (),
    allow_plugins: Sequence[str] = (),
    sample: SampleKey | None = None,
) -> Scenario:
    """Validate and build a scenario from an already parsed document.

    ``document`` may be a plain dict (e.g. a sweep point); lines are then unknown.
    Files it names are resolved from ``base_dir`` and may lie there, in the shipped
    library or in ``allow_dirs``. Modules under its ``plugins:`` are imported only when
    allowed: installed socsim plug-ins, this process's registrations, ``allow_plugins``
    (see :func:`load_scenario`). With ``sample``, the distributions of the
    preset-expanded document are replaced by that sample's draws before it is checked
    (the scenario's ``document`` then holds the drawn numbers).
    """
    allow_plugins = allowed_plugin_names(allow_plugins)
    ctx = Context(
        default_file=source, base_dir=str(base_dir), allowed_dirs=allowed_dirs(base_dir, allow_dirs)
    )
    if not isinstance(document, Mapping):
        raise ScenarioError([Problem("", "a scenario must be a mapping of keys", file=source)])
    presets = collect_presets(document, Path(base_dir), source, ctx, (Path(source).resolve(),))
    expanded: Mapping  # a YamlMap (marks kept) until fleets expand it
    expanded, failed = expand_presets(document, presets, ctx)
    _import_plugins(expanded, ctx, allow_plugins)  # first: the names they register are valid below
    if sample is not None:
        expanded = draw_document(expanded, sample)[0]
    compact = expanded  # what the resolved document keeps: fleets as written
    expanded, fleets = expand_fleets(expanded, expanded.get("seed", 0), ctx)
    checked = SCENARIO.check(expanded, Loc(""), ctx)
    # An entry whose preset is unknown lacks the preset's keys: say so once, not per key.
    ctx.problems[:] = [
        p
        for p in ctx.problems
        if not (p.path in failed and p.message.startswith("missing required key"))
    ]
    _check_names(expanded, ctx)  # also when the schema failed: report it all at once
    if checked is INVALID or ctx.problems:
        raise ScenarioError(ctx.problems)
    raw, written = (
        YamlMap(
            {k: v for k, v in doc.items() if k not in ("include", "presets")},
            mark=getattr(doc, "mark", None),
        )
        for doc in (expanded, compact)
    )
    raw.key_marks.update(getattr(expanded, "key_marks", {}))
    scenario = _build(checked, raw, ctx, source, written, fleets)
    if scenario is None or ctx.problems:  # _build returns None after reporting problems
        raise ScenarioError(ctx.problems)
    return scenario


def validate_library(path: str | Path, allow_dirs: Sequence[str | Path] = ()) -> int:
    """Check every preset of a library file (as ``socsim validate`` does); return their count.

    Raises
    ------
    ScenarioError
        Listing every problem of every preset.
    """
    from simulator.spec.definitions import LINK_ENTRY, NODE

    path = Path(path)
    document = load_yaml_file(path)
    ctx = Context(
        default_file=str(path),
        base_dir=str(path.parent),
        allowed_dirs=allowed_dirs(path.parent, allow_dirs),
    )
    if not isinstance(document, Mapping) or "presets" not in document:
        raise ScenarioError([Problem("", "a library file needs a 'presets:' section", str(path))])
    if LIBRARY.check(document, Loc(""), ctx) is INVALID:
        raise ScenarioError(ctx.problems)
    presets = collect_presets(document, path.parent, str(path), ctx, (path.resolve(),))
    schemas = {"nodes": NODE, "links": LINK_ENTRY}
    count = 0
    for section, entries in presets.by_section.items():
        for body, _, where in entries.values():
            if section == "links" and isinstance(body, Mapping):
                body = with_key(body, "ends", ["a", "b"])
            schemas[section].check(body, where, ctx)
            count += 1
    if ctx.problems:
        raise ScenarioError(ctx.problems)
    return count


def _import_plugins(document: Mapping, ctx: Context, allow_plugins: Sequence[str]) -> None:
    """Import the modules listed under ``plugins:`` that are allowed; each one that is not
    is a problem at ``plugins[i]``, never an import (their shape is the schema's to check)."""
    modules = document.get("plugins")
    if not isinstance(modules, list):
        return
    loc = Loc("plugins", document, "plugins")
    for i, name in enumerate(modules):
        if isinstance(name, str) and re.fullmatch(MODULE_PATTERN, name):
            try:
                import_plugins([name], allow_plugins)
            except PluginError as exc:
                ctx.problem(loc.child(modules, i), str(exc), getattr(exc, "suggestion", None))


# -- names that refer to other parts of the document -------------------------------------
def _check_names(raw: Mapping, ctx: Context) -> None:
    """Report link ends, workload models and sources that name nothing.

    Works on the raw (preset-expanded) document so that these problems are listed
    together with the schema's, even when other parts of the document are invalid.
    """
    nodes, models = raw.get("nodes"), raw.get("models")
    links, workload = raw.get("links"), raw.get("workload")
    if isinstance(nodes, Mapping) and isinstance(links, Mapping):
        for name, body in links.items():
            if isinstance(body, Mapping) and body.get("kind") == "shared":
                _check_medium_names(name, body, Loc("links").child(links, name), nodes, ctx)
                continue
            ends = body.get("ends") if isinstance(body, Mapping) else None
            if not isinstance(ends, list):
                continue
            for error in link_ends_known(name, ends, nodes):
                report(ctx, error, Loc("links").child(links, name), body)
    if isinstance(workload, list):
        for i, item in enumerate(workload):
            if not isinstance(item, Mapping):
                continue
            loc = Loc("workload").child(workload, i)
            model = item.get("model") if isinstance(models, Mapping) else None
            source = item.get("source") if isinstance(nodes, Mapping) else None
            app = item.get("app")
            for error in app_names_known(app, model, source, models or {}, nodes or {}):
                report(ctx, error, loc, item)


def _check_medium_names(name: str, body: Mapping, loc: Loc, nodes: Mapping, ctx: Context) -> None:
    """A shared medium's access point and stations are nodes (fleets are expanded by now)."""
    where: list[tuple[str, int | None, Any]] = [("access_point", None, body.get("access_point"))]
    stations = body.get("stations")
    if isinstance(stations, list):
        where += [("stations", i, station) for i, station in enumerate(stations)]
    for key, index, node in where:
        if isinstance(node, str) and node and node not in nodes:
            at = loc.child(body, key)
            if index is not None:
                at = at.child(stations, index)
            ctx.problem(
                at,
                f"unknown node or fleet '{node}' in shared link '{name}'; nodes: "
                f"{_names_hint(nodes)}",
                nearest(node, list(nodes)),
            )


def _names_hint(nodes: Mapping) -> str:
    """The node names for a message: fleet members collapsed to ``phone[0..199]``."""
    return ", ".join(collapse_members(list(nodes)))


# -- building the domain objects ----------------------------------------------------------
def _build(
    checked: dict, raw: Mapping, ctx: Context, source: str, written: Mapping, fleets: FleetMap
) -> Scenario | None:
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
            message = f"unknown node '{value}'; nodes: {', '.join(platform.nodes)}"
            if (loc.path, message) not in reported:
                ctx.problem(loc, message, nearest(value, platform.nodes))
        if kind == "unit":
            try:
                platform.resolve_unit(value, source)
            except SocsimError:
                local = [uid.split(".", 1)[1] for uid in platform.units_of(source)]
                choices = [*platform.unit_ids, *local]
                message = (
                    f"unknown unit '{value}' for an app on node '{source}'; "
                    f"units: {', '.join(platform.unit_ids)}"
                )
                if (loc.path, message) not in reported:
                    ctx.problem(loc, message, nearest(value, choices))
