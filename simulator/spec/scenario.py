"""The validated scenario: everything a run needs, frozen, in SI units."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import PlacementError
from simulator.failures import FailureSpec
from simulator.frozen import FrozenMap
from simulator.graph.model import ModelGraph
from simulator.placement.base import PlacementSpec
from simulator.platform import Platform
from simulator.rules import energy_window_ordered, raise_first, scenario_apps
from simulator.scheduling import SCHEDULERS
from simulator.spec.fleets import FleetMap
from simulator.workload import WorkloadEntry


@dataclass(frozen=True)
class Scenario:
    """A complete, validated scenario.

    Attributes
    ----------
    name : str
    seed : int
        Root of every random stream of the run.
    platform : Platform
        Nodes, units and network.
    models : Mapping[str, ModelGraph]
    workload : tuple of WorkloadEntry
        One entry per app.
    placement : PlacementSpec or None
        Default placement of apps that do not give their own.
    duration_s : float or None
        No arrival after this time (s); in-flight requests still finish.
    scheduler : str
        How a free unit picks its next ready op (:data:`simulator.scheduling.SCHEDULERS`).
    failures : tuple of FailureSpec
        Nodes and units that go down, and when (:mod:`simulator.failures`).
    memory_series : bool
        Log every change of each unit's memory in use (the ``memory`` table, trace
        ``full``).
    plugins : tuple of str
        Modules that register names the scenario uses (:mod:`simulator.plugins`); a
        process given this scenario ready-made imports them before running it.
    source_file : str or None
        Where it was loaded from.
    accuracy_top1 : Mapping[str, float or None]
        Top-1 (%) of each model after its ``techniques``: the published or given
        baseline plus the techniques' changes; None (or absent) when unknown.
    energy_window_s : (float, float) or None
        Energy figures integrate power over exactly this interval (s); None: first
        arrival to last completion, extended to the last radio tail or op.
    document : Mapping
        The resolved document (includes and presets expanded, fleets as written): writing
        it back and loading it again gives the same scenario.
    fleets : FleetMap
        Which nodes, apps and links the document's fleets made (docs/fleets.md).
    """

    name: str
    seed: int
    platform: Platform
    models: Mapping[str, ModelGraph]
    workload: tuple[WorkloadEntry, ...]
    placement: PlacementSpec | None = None
    duration_s: float | None = None
    scheduler: str = "fcfs"
    failures: tuple[FailureSpec, ...] = ()
    memory_series: bool = False
    plugins: tuple[str, ...] = ()
    source_file: str | None = None
    document: Mapping[str, Any] = field(default_factory=FrozenMap)
    accuracy_top1: Mapping[str, float | None] = field(default_factory=FrozenMap)
    energy_window_s: tuple[float, float] | None = None
    fleets: FleetMap = field(default_factory=FleetMap)

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", FrozenMap(self.models))
        object.__setattr__(self, "accuracy_top1", FrozenMap(self.accuracy_top1))
        object.__setattr__(self, "workload", tuple(self.workload))
        object.__setattr__(self, "plugins", tuple(self.plugins))
        object.__setattr__(self, "failures", tuple(self.failures))
        nodes = self.platform.nodes
        raise_first(scenario_apps(self.workload, self.models, nodes, self.placement))
        SCHEDULERS.get(self.scheduler)  # raises with the nearest name
        raise_first(energy_window_ordered(self.energy_window_s))

    def placement_for(self, entry: WorkloadEntry) -> PlacementSpec:
        """The placement spec that applies to ``entry`` (its first replica if it has several)."""
        return self.placements_for(entry)[0]

    def placements_for(self, entry: WorkloadEntry) -> tuple[PlacementSpec, ...]:
        """Every placement (replica) of ``entry``, in order."""
        if entry.replicas:
            return entry.replicas
        chosen = entry.placement if entry.placement is not None else self.placement
        if chosen is None:  # __post_init__'s app_has_placement rules this out
            raise PlacementError(f"app '{entry.app}' has no placement and no default applies")
        return (chosen,)
