"""Plan every app without running it: the placement problems ``socsim validate`` reports.

The schema accepts ``{policy: single, unit: npu}`` for a model the NPU cannot run (an
op kind it does not support, a dtype it has no throughput for); only placing the model
finds out. :func:`plan_problems` places and compiles every app's placement (each replica)
exactly as ``socsim run`` does before its first event (``simulator.engine.plan_replicas``)
and returns each failure as a :class:`~simulator.errors.Problem` at the YAML path of the
placement that failed, with the placer's message, which names the op, the unit, why, and
the fix (``use policy 'fallback' ...``); then every node whose weights do not fit its
memory pool (:mod:`simulator.placement.memory_pool`). Nothing is simulated; no SimPy, no tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from simulator.errors import Problem, SocsimError
from simulator.placement.exitplan import exit_plans
from simulator.placement.members import Planner
from simulator.placement.memory_pool import pool_problems
from simulator.placement.online import OnlineHeft, online_apps, shared_units
from simulator.placement.plan import ExecutionPlan
from simulator.platform import CostOracle
from simulator.schema import mark_of


def _yaml_path(entry: Any, index: int, replica: int) -> tuple[str, list[Any]]:
    """The YAML path of ``entry``'s ``replica``-th placement, and the keys to reach it."""
    if entry.replicas:
        return f"workload[{index}].replicas[{replica}]", ["workload", index, "replicas", replica]
    if entry.placement is not None:
        return f"workload[{index}].placement", ["workload", index, "placement"]
    return "placement", ["placement"]


def _mark(document: Any, keys: list[Any]) -> tuple[str | None, int | None]:
    """File and line of the value at ``keys`` in the loaded YAML ``document``, if known."""
    container = document
    for key in keys[:-1]:
        try:
            container = container[key]
        except (KeyError, IndexError, TypeError):
            return None, None
    mark = mark_of(container, keys[-1]) if container is not None else None
    return (mark.file, mark.line) if mark is not None else (None, None)


def plan_problems(
    scenario: Any, document: Mapping | None = None, source: str | None = None
) -> list[Problem]:
    """Place and compile every app's placement; a problem for each that cannot be made.

    Parameters
    ----------
    scenario : Scenario
        A loaded scenario (its schema checks passed).
    document : mapping, optional
        The scenario file as loaded (``simulator.spec.yamlio.load_yaml_file``), for the
        file and line of each placement.
    source : str, optional
        The scenario file, named when a line is not known.

    Returns
    -------
    list of Problem
        One per (app, replica) whose placement fails, in workload order; empty when every
        app can be planned.
    """
    oracle = CostOracle(scenario.platform)
    planner = Planner(scenario, oracle)  # as run plans: identical fleet members share
    failed: dict[tuple, SocsimError | None] = {}
    planned: dict[tuple, ExecutionPlan] = {}
    plans: dict[str, list[ExecutionPlan]] = {}
    # (index of the entry as written, app, problem): a fleet entry's members share one
    problems: list[tuple[int, str, Problem]] = []
    units_of: dict[str, list[tuple[str, ...]]] = {}  # app -> its placements' units
    for index, entry in enumerate(scenario.workload):
        for replica, spec in enumerate(scenario.placements_for(entry)):
            key = (entry.model, entry.source, id(spec))  # as run plans: once per key
            if key not in failed:
                graph = scenario.models[entry.model]
                try:
                    plan = planner.plan(entry, spec)
                    exit_plans(graph, plan, oracle)  # an early-exit model: each exit's plan
                    planned[key] = plan
                    failed[key] = None
                    units_of.setdefault(entry.app, []).append(plan.units)
                except SocsimError as exc:  # PlacementError, ModelError: the user's to fix
                    failed[key] = exc
            error = failed[key]
            if error is None:
                plans.setdefault(entry.app, []).append(planned[key])
                continue
            problem = _problem(scenario, index, replica, str(error), document, source)
            problems.append((scenario.fleets.written_index(index), entry.app, problem))
    if not problems and online_apps(scenario):  # units online HEFT reserves are its own
        for index, error in shared_units(
            scenario, OnlineHeft(online_apps(scenario), oracle), units_of
        ):
            entry, written = scenario.workload[index], scenario.fleets.written_index(index)
            path, keys = _yaml_path(entry, written, 0)
            file, line = _mark(document, keys) if document is not None else (None, None)
            problem = Problem(path, str(error), file=file or source, line=line)
            problems.append((written, entry.app, problem))
    if problems:  # the pools are checked once every app can be planned
        return _fold_members(problems)
    index_of = {entry.app: index for index, entry in enumerate(scenario.workload)}
    for pool in pool_problems(scenario.platform, plans):
        index = index_of[pool.app]
        problem = _problem(scenario, index, pool.replica, pool.message, document, source)
        problems.append((scenario.fleets.written_index(index), pool.app, problem))
    return _fold_members(problems)


def _problem(
    scenario: Any, index: int, replica: int, message: str, document: Any, source: str | None
) -> Problem:
    """A problem of workload entry ``index``'s ``replica``-th placement, at the YAML path
    of the entry as written."""
    entry = scenario.workload[index]
    path, keys = _yaml_path(entry, scenario.fleets.written_index(index), replica)
    file, line = _mark(document, keys) if document is not None else (None, None)
    return Problem(path, f"app '{entry.app}': {message}", file=file or source, line=line)


def _fold_members(problems: list[tuple[int, str, Problem]]) -> list[Problem]:
    """The problems, those of one fleet entry's members (the same written entry and YAML
    path, another app: each member with its own names) folded into the first member's,
    with their count. Problems of different entries stay apart, even at one path
    (``placement``), and so do an app's own problems (two nodes' pools)."""
    first: dict[tuple[int, str], tuple[str, int]] = {}
    others: dict[tuple[int, str], set[str]] = {}
    out: list[Problem] = []
    for written, app, problem in problems:
        key = (written, problem.path)
        seen = first.get(key)
        if seen is not None and seen[0] != app:
            others.setdefault(key, set()).add(app)
            continue
        first.setdefault(key, (app, len(out)))
        out.append(problem)
    for key, apps in others.items():
        index = first[key][1]
        note = f" (and {len(apps)} more member app(s) of this fleet entry)"
        out[index] = replace(out[index], message=out[index].message + note)
    return out
