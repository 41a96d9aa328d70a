"""Edgent's joint exit and partition choice (Li, Zeng, Zhou, Chen, "Edge AI: On-Demand
Accelerating Deep Neural Network Inference via Edge Computing", IEEE TWC 2020; MECOM 2018).

Edgent right-sizes an early-exit model (cuts it at one exit) and partitions what is left
between the device and an edge server. Its search (Algorithm 1 of the paper, "exit
point and partition point search"): take the exits from the most accurate down; for
each, find the partition of the right-sized model with the lowest predicted latency; the
first exit whose best latency meets the latency requirement wins. When none does, the
paper returns nothing: here ``miss: error`` (default) raises a PlacementError listing
each exit's best latency, ``miss: fastest`` keeps the exit and partition with the lowest
latency (the requirement missed).

The partition of each right-sized model is :func:`~simulator.placement.split.split_point`'s
(every prefix cut of its op order, the same contention-free estimate the engine
matches); the right-sized model is :func:`~simulator.graph.exits.right_sized_ops`. Pure:
no SimPy, no I/O, no state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.errors import PlacementError
from simulator.graph.exits import ExitModel, right_sized_ops, subgraph
from simulator.graph.model import ModelGraph
from simulator.placement.base import POLICIES, Placement
from simulator.placement.exitplan import EXIT_NOTE
from simulator.placement.locations import LOAD_OPTIONS, LOCATION_OPTIONS
from simulator.placement.objectives import COMMON_OPTIONS
from simulator.placement.split import split_point
from simulator.platform import CostOracle
from simulator.schema import Field, Number, Record, Text

MISS = ("error", "fastest")


@dataclass(frozen=True)
class ExitOption:
    """One exit as Edgent weighs it.

    Attributes
    ----------
    name : str
    accuracy_top1 : float
        Top-1 (%) of the exit.
    latency_s : float
        Predicted latency (s) of its best partition; NaN when no partition can run.
    """

    name: str
    accuracy_top1: float
    latency_s: float


def edgent_choice(options: Sequence[ExitOption], requirement_s: float) -> int | None:
    """Edgent's search: the index in ``options`` of the most accurate exit whose best
    latency meets ``requirement_s`` (ties in accuracy: the later exit, the deeper one, as
    the paper walks the exits from the last), or None when no exit does."""
    ranked = sorted(range(len(options)), key=lambda i: (-options[i].accuracy_top1, -i))
    for i in ranked:
        if options[i].latency_s <= requirement_s:  # NaN never does
            return i
    return None


class EdgentPlacement(Placement):
    """A placement of a right-sized model: its label names the exit (``e2:split@conv3``)."""

    def label(self, oracle: CostOracle) -> str:
        return f"{self.notes[EXIT_NOTE]}:{super().label(oracle)}"


_OPTIONS = Record(
    {
        **LOCATION_OPTIONS,
        **LOAD_OPTIONS,
        "deadline_ms": Field(
            Number("ms", 1e-3, gt=0),
            to="deadline_s",
            doc="the latency requirement a lone request's predicted latency must meet",
        ),
        "miss": Field(
            Text(choices=MISS, what="choice"),
            default="error",
            doc="when no exit meets the requirement: error (Edgent returns nothing) or "
            "fastest (the exit and partition with the lowest latency)",
        ),
        "exclude": COMMON_OPTIONS["exclude"],
        "check_memory": COMMON_OPTIONS["check_memory"],
    },
    name="edgent placement",
)


@POLICIES.register("edgent", _OPTIONS)
def edgent(
    graph: ModelGraph, oracle: CostOracle, source: str, options: Mapping[str, Any]
) -> Placement:
    """Edgent: the most accurate exit whose best device/remote split meets ``deadline_ms``.

    ``notes["candidates"]`` holds one row per exit (name, accuracy, best latency, cut,
    whether it meets the requirement, why not).
    """
    policy = "edgent"
    if not isinstance(graph, ExitModel):
        raise PlacementError(
            f"model '{graph.name}' declares no exits; give it 'exits:' (docs/early-exit.md)",
            policy,
        )
    unknown = [n for n, a in zip(graph.exit_names, graph.accuracies, strict=True) if a is None]
    if unknown:
        raise PlacementError(
            f"it ranks exits by accuracy: give accuracy_top1 for {', '.join(unknown)} "
            "(the model's own accuracy_top1 for 'final')",
            policy,
        )
    requirement_s = options["deadline_s"]
    # each right-sized model's best split, by latency alone (the requirement checked here)
    split_options = {**options, "objective": "latency", "deadline_s": None}
    rows: list[dict[str, Any]] = []
    placements: list[tuple[ModelGraph, Placement] | None] = []
    for k, (name, top1) in enumerate(zip(graph.exit_names, graph.accuracies, strict=True)):
        sized = subgraph(graph, right_sized_ops(graph, k))
        row = {"exit": name, "accuracy_top1": top1, "latency_s": math.nan, "cut_after": ""}
        try:
            placement = split_point(sized, oracle, source, split_options)
        except PlacementError as exc:
            row.update(meets=False, reason=exc.message)
            rows.append(row)
            placements.append(None)
            continue
        best = placement.notes["candidates"][placement.notes["k"]]
        meets = best["latency_s"] <= requirement_s
        row.update(
            latency_s=best["latency_s"],
            cut_after=best["cut_after"],
            meets=meets,
            reason="" if meets else f"{best['latency_s'] * 1e3:.4g} ms > requirement",
        )
        rows.append(row)
        placements.append((sized, placement))
    weighed = [ExitOption(r["exit"], r["accuracy_top1"], r["latency_s"]) for r in rows]
    chosen = edgent_choice(weighed, requirement_s)
    if chosen is None:
        runnable = [i for i, r in enumerate(rows) if not math.isnan(r["latency_s"])]
        text = "; ".join(
            f"{r['exit']} ({r['accuracy_top1']:g} %): "
            + (f"{r['latency_s'] * 1e3:.4g} ms" if not math.isnan(r["latency_s"]) else r["reason"])
            for r in rows
        )
        if options.get("miss", "error") == "error" or not runnable:
            raise PlacementError(
                f"no exit meets the latency requirement {requirement_s * 1e3:.4g} ms; each "
                f"exit's best split: {text} (raise deadline_ms, or miss: fastest)",
                policy,
            )
        chosen = min(runnable, key=lambda i: (rows[i]["latency_s"], -i))
    found = placements[chosen]
    assert found is not None  # a chosen exit has a latency, so a placement
    sized, split = found
    notes = {
        EXIT_NOTE: rows[chosen]["exit"],
        "exit_accuracy_top1": rows[chosen]["accuracy_top1"],
        "predicted_latency_s": rows[chosen]["latency_s"],
        "requirement_met": rows[chosen]["meets"],
        "device": split.notes["device"],
        "remote": split.notes["remote"],
        "cut_after": split.notes["cut_after"],
        "candidates": tuple(rows),
    }
    return EdgentPlacement(split.assignment, split.order, policy, source, notes, sized)
