"""The three indicators a run summary lacks, for one run of a whole scenario (sweep rows).

A sweep row carries latency and energy from the run summary; this module adds the other
three of the five indicators (docs/techniques.md) by the scorecard's own rules
(:mod:`simulator.score.card`: :func:`~simulator.score.card.flexibility`,
:func:`~simulator.score.card.target_unit`, :func:`~simulator.score.card.peak_memory`):

- ``accuracy_top1`` (%): each app's model top-1 after its ``techniques`` (the loader's
  figure, ``Scenario.accuracy_top1``); for a model with early exits, the top-1 of the
  exit its placement fixed (``edgent``) or the share-weighted mean over its exits
  (:func:`exit_accuracy_top1`); with several apps the mean over the apps, NaN when
  one app's is unknown;
- ``peak_memory_bytes``: Σ over units of each unit's peak (NaN without an engine run);
- ``flexibility``: the share of ops the target unit of each app's (first) placement runs
  natively; with several apps the ops are pooled (natively run ops over all ops).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from simulator.graph.exits import ExitModel, exits_of, expected
from simulator.graph.model import ModelGraph
from simulator.placement.base import Placement, place
from simulator.placement.exitplan import EXIT_NOTE
from simulator.platform import CostOracle
from simulator.score.card import flexibility, target_unit
from simulator.spec.scenario import Scenario
from simulator.workload import WorkloadEntry

#: The columns :func:`scenario_indicators` returns, in the sweep table's order.
INDICATOR_KEYS = ("accuracy_top1", "peak_memory_bytes", "flexibility")


def app_flexibility(
    scenario: Scenario,
    entry: WorkloadEntry,
    oracle: CostOracle,
    placement: Placement | None = None,
) -> dict:
    """:func:`~simulator.score.card.flexibility` of an app's first placement: the placed
    graph's ops on the placement's target unit.

    ``placement`` is that placement when already made (an
    :class:`~simulator.placement.plan.ExecutionPlan` holds it); otherwise the app's model
    is placed from its source here.
    """
    spec = scenario.placements_for(entry)[0]
    graph = scenario.models[entry.model]
    if placement is None:
        placement = place(spec, graph, oracle, entry.source)
    placed = placement.graph or graph
    target = target_unit(spec, placement.assignment, placed, oracle, entry.source)
    record = flexibility(placed, target, oracle)
    if exits_of(graph):  # the accuracy follows the exits the placement's requests take
        record["accuracy_top1"] = exit_accuracy_top1(
            graph, placement, scenario.accuracy_top1.get(entry.model)
        )
    return record


def exit_accuracy_top1(graph: ModelGraph, placement: Placement, top1: float | None) -> float:
    """Top-1 (%) of the requests of a model ``graph`` placed by ``placement``: the exit a
    policy fixed (``edgent``), else ``Σ share_k × accuracy_k`` over the exits requests
    draw (:func:`~simulator.graph.exits.expected`; NaN when an exit taken has none);
    ``top1`` (the model's) for a model without exits."""
    if EXIT_NOTE in placement.notes:
        return float(placement.notes["exit_accuracy_top1"])
    if isinstance(graph, ExitModel):
        return expected(graph.accuracies, graph.shares)
    return math.nan if top1 is None else float(top1)


def scenario_indicators(
    scenario: Scenario,
    peak_memory_bytes: float,
    flex: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, float]:
    """Accuracy, peak memory and flexibility of a run of ``scenario``.

    Parameters
    ----------
    scenario : Scenario
    peak_memory_bytes : float
        Σ of the units' peaks (bytes) of the run, or NaN when no engine ran.
    flex : mapping of app to flexibility record, optional
        :func:`app_flexibility` of each app, when already known; otherwise computed.

    Returns
    -------
    dict
        ``{"accuracy_top1": %, "peak_memory_bytes": bytes, "flexibility": share}``.
    """
    oracle = None
    accuracy, ops, native = [], 0, 0
    for entry in scenario.workload:
        top1 = scenario.accuracy_top1.get(entry.model)
        record = (flex or {}).get(entry.app)
        if record is None:
            oracle = oracle or CostOracle(scenario.platform)
            record = app_flexibility(scenario, entry, oracle)
        top1 = record.get("accuracy_top1", top1)  # a model with exits: theirs
        accuracy.append(math.nan if top1 is None else float(top1))
        ops += record["ops"]
        native += record["ops"] - record["unsupported_ops"]
    return {
        "accuracy_top1": sum(accuracy) / len(accuracy) if accuracy else math.nan,
        "peak_memory_bytes": peak_memory_bytes,
        "flexibility": native / ops if ops else math.nan,
    }
