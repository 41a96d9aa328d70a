"""Scenario loading: YAML -> includes -> presets -> validation -> :class:`Scenario`.

Every problem of the document is collected and raised at once as a ScenarioError,
each naming its file, YAML path and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.errors import Problem, ScenarioError
from simulator.plugins import MODULE_PATTERN, allowed_plugin_names, import_plugins
from simulator.registry import PluginError
from simulator.rules import (
    app_names_known,
    collapse_members,
    link_ends_known,
    report,
)
from simulator.schema import INVALID, Context, Loc, nearest
from simulator.spec.definitions import LIBRARY, SCENARIO
from simulator.spec.fleets import expand_fleets, fold_problems
from simulator.spec.paths import allowed_dirs
from simulator.spec.presets import collect_presets, expand_presets, with_key
from simulator.spec.scenario import Scenario
from simulator.spec.scenariobuild import build_scenario
from simulator.spec.uncertain import SampleKey, draw_document
from simulator.spec.yamlio import YamlMap, load_yaml_file


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
        raise ScenarioError(fold_problems(ctx.problems, fleets))
    raw, written = (
        YamlMap(
            {k: v for k, v in doc.items() if k not in ("include", "presets")},
            mark=getattr(doc, "mark", None),
        )
        for doc in (expanded, compact)
    )
    raw.key_marks.update(getattr(expanded, "key_marks", {}))
    scenario = build_scenario(checked, raw, ctx, source, written, fleets)
    if scenario is None or ctx.problems:  # _build returns None after reporting problems
        raise ScenarioError(fold_problems(ctx.problems, fleets))
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
