"""The five-indicator scorecard: technique combinations x placements, one row each.

For every (combination, placement) the scored app's model is rewritten by the
combination's techniques (on top of the model's own), placed, and run alone with the
app's arrivals; the row holds the five indicators:

==============  ==============================================================  ===========
indicator       column(s)                                                       better
==============  ==============================================================  ===========
accuracy        ``accuracy_top1`` (%): baseline + technique deltas, NaN unknown higher
latency         ``latency_p50_s``, ``latency_p99_s``                            lower (p50)
energy          ``device_inferences_per_j``: completed requests per device J    higher
memory          ``peak_memory_bytes``: Σ over units of each unit's peak         lower
flexibility     ``flexibility``: share of ops the target unit runs natively     higher
==============  ==============================================================  ===========

Flexibility: the *target unit* is the unit the placement aims at (its ``preferred``
or ``unit`` option; for other policies the unit given the most FLOPs);
``unsupported_ops`` counts the ops the target cannot run (they fall back elsewhere,
each switch a hop), ``custom_ops`` the fused and ``custom``-kind ops (kernels a
portable runtime may lack), and ``flexibility = (ops - unsupported_ops) / ops``.

A row is marked ``pareto`` when no other row is at least as good on all five
indicators (accuracy, p50 latency, device inferences per joule, peak memory,
flexibility) and strictly better on one; an unknown accuracy counts as the worst.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import ModelError, Problem, ScenarioError
from simulator.frozen import FrozenMap
from simulator.graph.exits import carry_exits
from simulator.graph.model import ModelGraph
from simulator.graph.techniques import apply_techniques
from simulator.placement.base import PlacementSpec, place
from simulator.platform import CostOracle
from simulator.spec.scenario import Scenario

#: Indicators the Pareto front is taken over, with their sense (+1 higher is better).
PARETO_INDICATORS: Mapping[str, int] = FrozenMap(
    {
        "accuracy_top1": +1,
        "latency_p50_s": -1,
        "device_inferences_per_j": +1,
        "peak_memory_bytes": -1,
        "flexibility": +1,
    }
)


@dataclass(frozen=True)
class Combination:
    """A model and the techniques applied to it.

    Attributes
    ----------
    model : str or None
        A key of the scenario's models; None: the scored app's model.
    techniques : tuple of mapping
        ``{"name": ..., **options}`` entries, applied in order.
    """

    model: str | None = None
    techniques: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "techniques", tuple(FrozenMap(t) for t in self.techniques))


def describe(techniques: Sequence[Mapping[str, Any]]) -> str:
    """``quantize(dtype=int8) > fuse`` — the technique list in one cell."""
    parts = []
    for spec in techniques:
        options = ", ".join(f"{k}={v}" for k, v in spec.items() if k != "name" and v is not None)
        parts.append(f"{spec['name']}({options})" if options else str(spec["name"]))
    return " > ".join(parts) or "(none)"


def _family(scenario: Scenario, model: str) -> str | None:
    spec = (scenario.document.get("models") or {}).get(model) or {}
    return spec.get("family") or spec.get("zoo")


def target_unit(
    spec: PlacementSpec, assignment: Mapping[str, str], graph: ModelGraph, oracle, source: str
) -> str:
    """The unit a placement aims at: its ``preferred`` or ``unit`` option, else the unit
    it gives the most FLOPs (ties: the first in op order)."""
    ref = spec.options.get("preferred") or spec.options.get("unit")
    if isinstance(ref, str) and spec.options.get("node") is None:
        return oracle.platform.resolve_unit(ref, source)
    flops: dict[str, float] = {}
    for op in graph:
        uid = assignment[op.name]
        flops[uid] = flops.get(uid, 0.0) + op.flops
    return max(flops, key=lambda u: (flops[u], -list(flops).index(u)))


def flexibility(graph: ModelGraph, target: str, oracle: CostOracle) -> dict:
    """Unsupported / custom op counts on ``target`` and the flexibility share."""
    unsupported = sum(not oracle.supports(op, target) for op in graph)
    custom = sum(bool(op.fused) or op.kind == "custom" for op in graph)
    return {
        "target_unit": target,
        "ops": len(graph),
        "unsupported_ops": unsupported,
        "custom_ops": custom,
        "flexibility": (len(graph) - unsupported) / len(graph),
    }


def peak_memory(units: pd.DataFrame) -> int:
    """The memory indicator (bytes): Σ over a run's units of each unit's peak."""
    return int(units["peak_memory_bytes"].sum())


#: Sweep and summary columns where a higher value is better (the rest: lower is better).
HIGHER_IS_BETTER = frozenset(
    {
        *(column for column, sense in PARETO_INDICATORS.items() if sense > 0),
        "inferences_per_j",
        "throughput_rps",
        "deadline_met_rate",
        "completed",
    }
)


#: The five indicators by name, as sweep-table columns (``socsim plot pareto --x memory``).
INDICATOR_COLUMNS: Mapping[str, str] = FrozenMap(
    {
        "accuracy": "accuracy_top1",
        "latency": "latency_p50_s",
        "energy": "device_energy_per_inference_j",
        "memory": "peak_memory_bytes",
        "flexibility": "flexibility",
    }
)


def sense(column: str) -> int:
    """+1 when a higher ``column`` is better (accuracy, flexibility, inferences per joule,
    throughput, deadline met rate), else -1 (latency, energy, memory)."""
    return +1 if column in HIGHER_IS_BETTER else -1


def pareto_mask(frame: pd.DataFrame, indicators: Mapping[str, int] = PARETO_INDICATORS):
    """Rows no other row dominates on ``indicators`` (NaN is the worst value)."""
    values = np.column_stack(
        [np.nan_to_num(frame[c].to_numpy(float) * s, nan=-np.inf) for c, s in indicators.items()]
    )
    keep = np.ones(len(values), dtype=bool)
    for i in range(len(values)):
        at_least = np.all(values >= values[i], axis=1)
        strictly = np.any(values > values[i], axis=1)
        keep[i] = not np.any(at_least & strictly)
    return keep


def _scenario_for(scenario: Scenario, app: str, model: str, graph: ModelGraph, spec) -> Scenario:
    entry = next(e for e in scenario.workload if e.app == app)
    entry = replace(entry, model=model, placement=spec, replicas=(), adaptive=None)
    if entry.dispatch == "adaptive":
        entry = replace(entry, dispatch="round_robin")
    models = {**scenario.models, model: graph}
    return replace(scenario, models=models, workload=(entry,))


def score_rows(
    scenario: Scenario,
    combinations: Mapping[str, Combination],
    placements: Mapping[str, PlacementSpec],
    app: str | None = None,
) -> pd.DataFrame:
    """Run every combination under every placement and return the scorecard.

    Parameters
    ----------
    scenario : Scenario
    combinations : mapping of name to Combination
    placements : mapping of name to PlacementSpec
    app : str or None
        The workload app scored (its source and arrivals are used); default the first.

    Returns
    -------
    pandas.DataFrame
        One row per (combination, placement), in that nested order, with the columns
        the module docstring lists plus ``combination``, ``placement``, ``model``,
        ``techniques``, ``macs``, ``weight_bytes``, ``units_used`` and ``pareto``.

    Raises
    ------
    ScenarioError
        For an unknown app or model name (naming the nearest) or a technique that
        fails (naming ``score.combinations.<name>.techniques[i]``).
    PlacementError
        When a placement cannot place a combination's model.
    """
    from simulator.engine import simulate  # lazy: the engine is heavy
    from simulator.score.indicators import exit_accuracy_top1  # it imports this module

    apps = [e.app for e in scenario.workload]
    app = app or apps[0]
    if app not in apps:
        raise ScenarioError([Problem("score.app", f"unknown app '{app}'; apps: {apps}")])
    base_model = next(e.model for e in scenario.workload if e.app == app)
    oracle = CostOracle(scenario.platform)
    rows = []
    for cname, combo in combinations.items():
        model = combo.model or base_model
        where = f"score.combinations.{cname}"
        if model not in scenario.models:
            known = ", ".join(scenario.models)
            raise ScenarioError([Problem(f"{where}.model", f"unknown model '{model}'; {known}")])
        try:
            graph, top1 = apply_techniques(
                scenario.models[model],
                combo.techniques,
                _family(scenario, model),
                scenario.accuracy_top1.get(model),
            )
            graph = carry_exits(scenario.models[model], graph, top1)  # early exits kept
        except ModelError as exc:  # reported at the combination's YAML path
            raise ScenarioError([Problem(f"{where}.techniques", exc.message)]) from None
        for pname, spec in placements.items():
            variant = _scenario_for(scenario, app, model, graph, spec)
            source = variant.workload[0].source
            placement = place(spec, graph, oracle, source)
            placed = placement.graph or graph
            result = simulate(variant)
            summary, units = result.summary, result.units
            rows.append(
                {
                    "combination": cname,
                    "placement": pname,
                    "model": model,
                    "techniques": describe(combo.techniques),
                    "accuracy_top1": exit_accuracy_top1(graph, placement, top1),
                    "latency_p50_s": summary["latency_p50_s"],
                    "latency_p99_s": summary["latency_p99_s"],
                    "device_inferences_per_j": summary["device_inferences_per_j"],
                    "device_energy_per_inference_j": summary["device_energy_per_inference_j"],
                    "peak_memory_bytes": peak_memory(units),
                    "device_peak_memory_bytes": int(
                        units.loc[units["role"] == "device", "peak_memory_bytes"].sum()
                    ),
                    **flexibility(
                        placed,
                        target_unit(spec, placement.assignment, placed, oracle, source),
                        oracle,
                    ),
                    "macs": placed.total_macs,
                    "weight_bytes": placed.weight_bytes,
                    "units_used": ";".join(sorted(set(placement.assignment.values()))),
                    "completed": summary["completed"],
                }
            )
    frame = pd.DataFrame(rows)
    frame["pareto"] = pareto_mask(frame)
    return frame


__all__ = [
    "INDICATOR_COLUMNS",
    "PARETO_INDICATORS",
    "Combination",
    "describe",
    "flexibility",
    "pareto_mask",
    "peak_memory",
    "score_rows",
    "sense",
]
