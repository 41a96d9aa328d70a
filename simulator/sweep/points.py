"""Resolve sweep points into validated scenarios, one at a time, where they run.

Each swept path is set in the scenario document *after* includes and presets are expanded,
so ``links.uplink.bandwidth_mbps`` overrides a preset's figure like a key written in the
file would. Before anything runs, every swept value is validated by the scenario loader
(:func:`check_values`): a bad value fails there, with its YAML path, not halfway through
a sweep; the points themselves are made lazily (:class:`PointResolver`), in the workers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from simulator.errors import Problem, ScenarioError
from simulator.network.radio_range import warn_sweep
from simulator.schema import Context, nearest
from simulator.spec.loader import parse_scenario
from simulator.spec.paths import allowed_dirs
from simulator.spec.presets import collect_presets, expand_presets
from simulator.spec.scenario import Scenario
from simulator.spec.uncertain import SampleKey, path_text
from simulator.spec.yamlio import YamlMap, plain
from simulator.spec.yamlnodes import shallow_copy
from simulator.sweep.design import Parameter, SweepSpec
from simulator.sweep.pointsets import MC_COLUMN

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
    root = shallow_copy(document)
    here = root
    for depth, key in enumerate(segments):
        last = depth == len(segments) - 1
        where = path_text(segments[:depth]) or "the document root"
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
            child = shallow_copy(here[key])
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


#: Distinct values of one swept path checked one by one before a sweep runs; a path with
#: more (a long range) is checked at its first, second, second-to-last and last values.
MAX_CHECKED_VALUES = 1000


class PointResolver:
    """Makes the validated :class:`Scenario` of one point when asked (index -> scenario).

    Holds the scenario document with includes and presets expanded; a sweep ships it to
    its workers once per batch, and each point is resolved where it runs. The last
    scenario made is kept, so the replicates of a point share it.

    Parameters
    ----------
    expanded : mapping
        :func:`expanded_document` of the scenario.
    base_dir, source, allow_dirs, allow_plugins
        As for :func:`~simulator.spec.loader.parse_scenario`; the resolver carries them
        to the workers that make the points.
    """

    def __init__(
        self,
        expanded: Mapping,
        base_dir: str | Path,
        source: str,
        allow_dirs: Sequence[str | Path] = (),
        allow_plugins: Sequence[str] = (),
    ):
        self.expanded, self.base_dir, self.source = expanded, Path(base_dir), source
        self.allow_dirs = tuple(allow_dirs)
        self.allow_plugins = tuple(allow_plugins)
        self.name = str(expanded.get("name", ""))
        seed = expanded.get("seed", 0)
        self.base_seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
        self._last: tuple[str, Scenario] | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_last": None}  # a worker builds its own

    def document(self, values: Mapping[str, Any], seed: int | None = None) -> Mapping:
        """The expanded document with ``values`` set (and ``seed``, when given); a Monte
        Carlo sample index (``mc_sample``) is not a path and is left out."""
        doc = self.expanded
        for path, value in values.items():
            if path == MC_COLUMN:
                continue
            doc = set_path(doc, path, value, self.source)
        return doc if seed is None else set_path(doc, "seed", seed, self.source)

    def scenario(self, values: Mapping[str, Any], seed: int) -> Scenario:
        """The validated scenario of a point.

        Raises
        ------
        ScenarioError
            When the point's values are invalid together.
        """
        key = repr((sorted(values.items()), seed))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        # the parameter draws derive from the scenario's own seed, not the point's: sample
        # s draws the same values at every point (common random numbers across points)
        sample = values.get(MC_COLUMN)
        scenario = parse_scenario(
            self.document(values, seed),
            base_dir=self.base_dir,
            source=self.source,
            allow_dirs=self.allow_dirs,
            sample=None if sample is None else SampleKey(self.base_seed, sample),
            allow_plugins=self.allow_plugins,
        )
        self._last = (key, scenario)
        return scenario


def checked_values(parameter: Parameter) -> list[Any]:
    """The values of a swept path that are validated before the sweep runs (see
    :data:`MAX_CHECKED_VALUES`): every distinct one, or the ends and end steps of a
    long range, or the bounds of a continuous one."""
    if parameter.continuous:
        return [parameter.low, parameter.high]
    distinct = list({_key(v): v for v in parameter.listed}.values())
    if len(distinct) <= MAX_CHECKED_VALUES:
        return distinct
    return [distinct[0], distinct[1], distinct[-2], distinct[-1]]


def _key(value: Any) -> str:
    return repr(value) if not isinstance(value, (Mapping, list)) else repr(plain(value))


def check_values(
    resolver: PointResolver, spec: SweepSpec, where: Callable[[str, Any], str] = lambda p, v: ""
) -> None:
    """Validate the swept paths and values before anything runs, without making points.

    Every path is set once (a bad path is one problem); each value of
    :func:`checked_values` is set alone into the scenario (the other paths at the file's
    values) and the result validated. Values that are only wrong together fail their
    points at run time (``status: error`` rows).

    Raises
    ------
    ScenarioError
        Listing every bad path, and every bad value with its YAML path and where it is
        first used (``sweep value links.wlan.latency_ms=-1 (point 1): ...``).

    Warns
    -----
    RadioRangeWarning
        Once per device radio that some values take beyond the throughput its power
        model was measured on (:func:`simulator.network.radio_range.warn_sweep`).
    """
    for path in spec.paths:  # structure first: a bad path is one problem, not one per value
        set_path(resolver.expanded, path, None, resolver.source)
    problems: list[Problem] = []
    checked: list[tuple[str, Scenario]] = []
    for parameter in spec.parameters:
        for value in checked_values(parameter):
            try:
                scenario = resolver.scenario(
                    {parameter.path: value}, resolver.expanded.get("seed", 0)
                )
            except ScenarioError as exc:
                label = f"sweep value {parameter.path}={value!r}{where(parameter.path, value)}"
                problems += [replace(p, message=f"{label}: {p.message}") for p in exc.problems]
            else:
                checked.append((f"{parameter.path}={value!r}", scenario))
    if problems:
        raise ScenarioError(problems)
    # a radio swept (or set) beyond the throughput its power fit was measured on says so
    # once per radio, as `run` and `validate` do
    warn_sweep(checked, resolver.source)


def scenario_with_values(
    path: str | Path,
    values: Mapping[str, Any],
    allow_dirs: Sequence[str | Path] = (),
    allow_plugins: Sequence[str] = (),
) -> tuple[Scenario, Mapping]:
    """The scenario in ``path`` with ``values`` set at their paths, as one sweep point
    (``socsim run --set``): set after includes and presets are expanded, so a path may
    override a preset's figure; the paths are checked first, then the whole scenario.

    Returns
    -------
    (Scenario, mapping)
        The validated scenario and its expanded document with the values set (for the
        YAML lines of later problems).

    Raises
    ------
    ScenarioError
        A path that does not exist (naming what exists there and the nearest key), or a
        value the scenario refuses, at its YAML path, each labelled ``--set PATH=VALUE``.
    """
    from simulator.spec.yamlio import load_yaml_file

    path = Path(path)
    expanded = expanded_document(load_yaml_file(path), path.parent, str(path), allow_dirs)
    for where in values:  # structure first: one problem per bad path
        set_path(expanded, where, None, str(path))
    resolver = PointResolver(expanded, path.parent, str(path), allow_dirs, allow_plugins)
    document = resolver.document(values)
    try:
        scenario = parse_scenario(
            document, path.parent, str(path), allow_dirs, allow_plugins=allow_plugins
        )
    except ScenarioError as exc:
        raise ScenarioError([_label_set(p, values) for p in exc.problems]) from None
    return scenario, document


def _label_set(problem: Problem, values: Mapping[str, Any]) -> Problem:
    """``problem`` prefixed with the ``--set`` that put a value at or above its path."""
    for where, value in values.items():
        if problem.path == where or problem.path.startswith((f"{where}.", f"{where}[")):
            return replace(problem, message=f"--set {where}={value!r}: {problem.message}")
    return problem
