"""Resolve sweep points into full, validated scenarios before anything runs.

Each swept path is set in the scenario document *after* includes and presets are expanded,
so ``links.uplink.bandwidth_mbps`` overrides a preset's figure like a key written in the
file would. Every point is then validated by the scenario loader: a bad value fails
here, with its YAML path and the point that carries it, not halfway through a sweep.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from simulator.errors import Problem, ScenarioError
from simulator.schema import Context, nearest
from simulator.spec.loader import parse_scenario
from simulator.spec.paths import allowed_dirs
from simulator.spec.presets import collect_presets, expand_presets
from simulator.spec.scenario import Scenario
from simulator.spec.yamlio import YamlMap, YamlSeq

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
#: top-level keys a point document drops: expanded already, or about the sweep itself
_DROPPED = ("include", "presets", "sweep")


def parse_path(path: str) -> tuple[str | int, ...]:
    """``workload[0].arrival.rate_hz`` -> ``('workload', 0, 'arrival', 'rate_hz')``.

    Raises
    ------
    ScenarioError
        When ``path`` is not dotted keys with ``[i]`` indices.
    """
    segments: list[str | int] = []
    position = 0
    for match in _SEGMENT.finditer(path):
        separator = path[position : match.start()]
        if separator not in ("", ".") or (separator == "." and match.group(2) is not None):
            break
        segments.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        position = match.end()
    if not segments or position != len(path) or isinstance(segments[0], int):
        raise ScenarioError(
            [Problem(path, "not a scenario path (expected keys and [i], e.g. links.up.latency_ms)")]
        )
    return tuple(segments)


def _shown(segments: Sequence[str | int]) -> str:
    text = ""
    for s in segments:
        text += f"[{s}]" if isinstance(s, int) else (f".{s}" if text else s)
    return text


def _copy(container: Any) -> Any:
    """A shallow copy that keeps the loader's file/line marks."""
    if isinstance(container, YamlMap):
        out = YamlMap(container, mark=container.mark)
        out.key_marks.update(container.key_marks)
        return out
    if isinstance(container, YamlSeq):
        out = YamlSeq(container, mark=container.mark)
        out.item_marks.extend(container.item_marks)
        return out
    return copy.copy(container)


def set_path(document: Mapping, path: str, value: Any, file: str | None = None) -> Mapping:
    """A copy of ``document`` with ``value`` at ``path`` (the original is left alone).

    Every key or index before the last must exist; the last key of a mapping may be new
    (an override of a preset field, checked by the scenario schema afterwards).

    Raises
    ------
    ScenarioError
        Naming the path, what exists there and the nearest valid key.
    """
    segments = parse_path(path)
    root = _copy(document)
    here = root
    for depth, key in enumerate(segments):
        last = depth == len(segments) - 1
        where = _shown(segments[:depth]) or "the document root"
        if isinstance(key, int):
            if not isinstance(here, list):
                raise ScenarioError(
                    [Problem(path, f"{where} is not a list; cannot take [{key}]", file)]
                )
            if key >= len(here):
                raise ScenarioError(
                    [Problem(path, f"{where} has {len(here)} item(s); no index [{key}]", file)]
                )
        elif not isinstance(here, Mapping):
            raise ScenarioError(
                [Problem(path, f"{where} is not a mapping; cannot take key '{key}'", file)]
            )
        elif key not in here and not last:
            keys = [str(k) for k in here]
            raise ScenarioError(
                [
                    Problem(
                        path,
                        f"no key '{key}' in {where}; keys there: {', '.join(keys)}",
                        file,
                        suggestion=nearest(key, keys),
                    )
                ]
            )
        if last:
            here[key] = value
        else:
            child = _copy(here[key])
            here[key] = child
            here = child
    return root


def expanded_document(
    document: Mapping, base_dir: Path, source: str, allow_dirs: Sequence[str | Path] = ()
) -> YamlMap:
    """``document`` with includes and presets expanded (what sweep paths address)."""
    ctx = Context(
        default_file=source, base_dir=str(base_dir), allowed_dirs=allowed_dirs(base_dir, allow_dirs)
    )
    presets = collect_presets(document, base_dir, source, ctx, (Path(source).resolve(),))
    expanded, _ = expand_presets(document, presets, ctx)
    if ctx.problems:
        raise ScenarioError(ctx.problems)
    out = YamlMap({k: v for k, v in expanded.items() if k not in _DROPPED}, mark=expanded.mark)
    out.key_marks.update(expanded.key_marks)
    return out


def resolve_points(
    document: Mapping,
    points: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    base_dir: str | Path = ".",
    source: str = "<scenario>",
    allow_dirs: Sequence[str | Path] = (),
) -> list[Scenario]:
    """One validated :class:`Scenario` per point (its values set, its seed in ``seed``).

    ``document`` must itself be a valid scenario (``socsim sweep`` loads it first).

    Raises
    ------
    ScenarioError
        Listing every bad path once and every bad value with the first point that has
        it (``sweep point 3 (links.wlan.latency_ms=-1): ...``) and how many share it.
    """
    base_dir = Path(base_dir)
    expanded = expanded_document(document, base_dir, source, allow_dirs)
    paths = list(points[0]) if points else []
    for path in paths:  # structure first: a bad path is one problem, not one per point
        set_path(expanded, path, None, source)
    scenarios: list[Scenario] = []
    found: dict[tuple[str, str], list] = {}
    for index, (values, seed) in enumerate(zip(points, seeds, strict=True)):
        doc = expanded
        for path, value in values.items():
            doc = set_path(doc, path, value, source)
        doc = set_path(doc, "seed", seed, source)
        try:
            scenarios.append(
                parse_scenario(doc, base_dir=base_dir, source=source, allow_dirs=allow_dirs)
            )
        except ScenarioError as exc:
            label = ", ".join(f"{p}={v!r}" for p, v in values.items())
            for problem in exc.problems:
                found.setdefault((problem.path, problem.message), []).append(
                    (index, label, problem)
                )
    if found:
        problems = []
        for hits in found.values():
            index, label, problem = hits[0]
            more = f" (and {len(hits) - 1} more point(s))" if len(hits) > 1 else ""
            message = f"sweep point {index} ({label}){more}: {problem.message}"
            problems.append(replace(problem, message=message))
        raise ScenarioError(problems)
    return scenarios
