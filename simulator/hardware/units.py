"""Compute units and the nodes that hold them (SI units throughout)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simulator.errors import SocsimError
from simulator.frozen import FrozenMap
from simulator.graph.model import DTYPE_BYTES, OP_KINDS
from simulator.hardware.dvfs import DvfsTable
from simulator.hardware.governors import GOVERNORS
from simulator.hardware.memory import CacheLevel, check_hierarchy, resolve
from simulator.hardware.thermal import ThermalModel
from simulator.hardware.variation import BackgroundLoad, TimeVariation

if TYPE_CHECKING:
    from simulator.hardware.predictor import KernelPredictor

UNIT_KINDS: tuple[str, ...] = ("cpu", "gpu", "dsp", "npu")
#: How two units of one SoC synchronise; the cost of each pair is the user's figure.
SYNC_MECHANISMS: tuple[str, ...] = ("shared_memory_fence", "driver_call", "interrupt", "default")
NODE_ROLES: tuple[str, ...] = ("device", "edge", "cloud")
#: What a node does when its memory pool is short (docs/memory.md).
MEMORY_POLICIES: tuple[str, ...] = ("refuse", "allow")


def _check_nonneg(owner: str, **values: float) -> None:
    for label, value in values.items():
        if math.isnan(value) or value < 0:
            raise SocsimError(f"{owner}: {label} must be >= 0, got {value}")


@dataclass(frozen=True)
class ComputeUnit:
    """One compute unit of a node (a CPU cluster, a GPU, a DSP, an NPU).

    Attributes
    ----------
    name : str
        Unique within its node.
    kind : str
        One of :data:`UNIT_KINDS`.
    peak_flops : Mapping[str, float]
        Peak FLOP/s *per core* by dtype; a dtype not listed is not supported.
    efficiency : Mapping[str, float]
        Achieved/peak fraction by op kind; key ``"default"`` covers the rest.
    memory_bandwidth_bytes_per_s : float
        DRAM streaming bandwidth (B/s); ``inf`` means never memory-bound.
    dispatch_s : float
        Fixed launch overhead per op (s).
    cores : int
        Cores or lanes an op spreads over (Amdahl speedup).
    idle_w, active_w : float
        Power when idle and total power while busy (W).
    memory_bytes : float
        Capacity for resident weights plus live activations (B).
    supports : frozenset of str or None
        Op kinds the unit can run; ``None`` means every kind.
    cores_per_op : int or None
        Cores one op uses; the unit runs ``cores // cores_per_op`` ops at once. ``None``
        means every core (one op at a time).
    barrier_s : float
        Barrier cost of an op per doubling of its cores: ``barrier_s × log2(cores used)``.
    dvfs : DvfsTable or None
        Operating points; ``peak_flops`` and ``active_w`` are then the top point's.
        None: one fixed operating point.
    governor, governor_options : str, Mapping
        The DVFS governor (:data:`simulator.hardware.governors.GOVERNORS`) and its
        validated options (SI), asked for a level at every op start.
    throttled_max_hz : float or None
        While its node is thermally throttled, the unit runs at most at this frequency
        (None: the lowest point).
    fused_kernels : bool
        Whether the unit's kernel library runs fused ops (conv + norm + activation,
        elementwise chains; :func:`simulator.graph.techniques.fusion.fuse`). A unit
        without them cannot run a fused op: placement falls back, and the scorecard
        counts it against flexibility.
    sparse_efficiency : float
        Share in [0, 1] of a weight-pruned op's zero multiply-adds the unit's sparse
        kernels skip: compute time scales by ``1 - sparse_efficiency x sparsity`` and
        the weights are read compressed. 0 (no sparse kernels): the op runs dense, its
        time unchanged by pruning.
    predictor : KernelPredictor or None
        Learned per-kernel predictor (:mod:`simulator.hardware.predictor`) for the op
        kinds it has models of; the roofline covers the rest. None: roofline only.
    caches : tuple of CacheLevel
        The unit's memory hierarchy in front of DRAM, innermost first: its own levels,
        then its node's shared ones (:class:`Node` appends them). Empty: the plain
        roofline on ``memory_bandwidth_bytes_per_s`` (docs/cost-model.md).
    variation : Mapping[str, TimeVariation]
        Execution-time variation by op kind, key ``"default"`` for the kinds not listed
        (:mod:`simulator.hardware.variation`); empty: op times are the cost model's.
        The run draws it; placement estimates use the mean (the cost model's time).
    background : BackgroundLoad or None
        Background utilisation that slows every op on the unit (processor sharing); the
        run applies it, placement estimates do not. None: the unit is the scenario's.
    """

    name: str
    kind: str
    peak_flops: Mapping[str, float] = field(default_factory=dict)
    efficiency: Mapping[str, float] = field(default_factory=lambda: {"default": 1.0})
    memory_bandwidth_bytes_per_s: float = math.inf
    dispatch_s: float = 0.0
    cores: int = 1
    idle_w: float = 0.0
    active_w: float = 0.0
    memory_bytes: float = math.inf
    supports: frozenset[str] | None = None
    cores_per_op: int | None = None
    barrier_s: float = 0.0
    dvfs: DvfsTable | None = None
    governor: str = "performance"
    governor_options: Mapping[str, Any] = field(default_factory=FrozenMap)
    throttled_max_hz: float | None = None
    fused_kernels: bool = True
    sparse_efficiency: float = 0.0
    predictor: KernelPredictor | None = None
    caches: tuple[CacheLevel, ...] = ()
    variation: Mapping[str, TimeVariation] = field(default_factory=FrozenMap)
    background: BackgroundLoad | None = None

    def __post_init__(self) -> None:
        owner = f"unit '{self.name}'"
        unknown_kinds = set(self.variation) - {*OP_KINDS, "default"}
        if unknown_kinds:
            raise SocsimError(f"{owner}: unknown op kinds in variation: {sorted(unknown_kinds)}")
        object.__setattr__(self, "variation", FrozenMap(self.variation))
        object.__setattr__(self, "caches", tuple(self.caches))
        try:
            check_hierarchy(self.caches, self.memory_bandwidth_bytes_per_s)
        except SocsimError as exc:
            raise SocsimError(f"{owner}: {exc}") from None
        if not 0.0 <= self.sparse_efficiency <= 1.0:
            raise SocsimError(
                f"{owner}: sparse_efficiency must be in [0, 1], got {self.sparse_efficiency}"
            )
        if self.kind not in UNIT_KINDS:
            raise SocsimError(f"{owner}: kind must be one of {UNIT_KINDS}, got '{self.kind}'")
        for dtype, peak in self.peak_flops.items():
            if dtype not in DTYPE_BYTES or not peak > 0:
                raise SocsimError(f"{owner}: peak for '{dtype}' must be a dtype with peak > 0")
        if "default" not in self.efficiency:
            raise SocsimError(f"{owner}: efficiency needs a 'default' entry")
        for kind, eff in self.efficiency.items():
            if not 0 < eff <= 1:
                raise SocsimError(f"{owner}: efficiency['{kind}'] must be in (0, 1], got {eff}")
        if self.cores < 1:
            raise SocsimError(f"{owner}: cores must be >= 1, got {self.cores}")
        if self.cores_per_op is not None and not 1 <= self.cores_per_op <= self.cores:
            raise SocsimError(
                f"{owner}: cores_per_op must be between 1 and cores ({self.cores}), "
                f"got {self.cores_per_op}"
            )
        _check_nonneg(owner, barrier_s=self.barrier_s)
        GOVERNORS.get(self.governor)  # raises with the nearest valid name
        object.__setattr__(self, "governor_options", FrozenMap(self.governor_options))
        if not self.memory_bandwidth_bytes_per_s > 0 or not self.memory_bytes > 0:
            raise SocsimError(f"{owner}: memory bandwidth and capacity must be > 0")
        _check_nonneg(owner, dispatch_s=self.dispatch_s, idle_w=self.idle_w, active_w=self.active_w)
        if self.supports is not None:
            unknown = set(self.supports) - set(OP_KINDS)
            if unknown:
                raise SocsimError(f"{owner}: unknown op kinds in supports: {sorted(unknown)}")
            object.__setattr__(self, "supports", frozenset(self.supports))
        object.__setattr__(self, "peak_flops", FrozenMap(self.peak_flops))
        object.__setattr__(self, "efficiency", FrozenMap(self.efficiency))

    @property
    def op_cores(self) -> int:
        """Cores one op runs on."""
        return self.cores_per_op or self.cores

    @property
    def slots(self) -> int:
        """How many ops the unit runs at once."""
        return self.cores // self.op_cores

    def efficiency_for(self, op_kind: str) -> float:
        return self.efficiency.get(op_kind, self.efficiency["default"])

    def runs_kind(self, op_kind: str) -> bool:
        return self.supports is None or op_kind in self.supports


@dataclass(frozen=True)
class SyncPair:
    """The synchronisation cost (s) and mechanism between two units of one node."""

    units: frozenset[str]
    mechanism: str
    sync_s: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", frozenset(self.units))
        if len(self.units) != 2:
            raise SocsimError(f"a sync pair joins two different units, got {sorted(self.units)}")
        if self.mechanism not in SYNC_MECHANISMS:
            raise SocsimError(
                f"unknown sync mechanism '{self.mechanism}'; valid: {', '.join(SYNC_MECHANISMS)}"
            )
        _check_nonneg(f"sync pair {sorted(self.units)}", sync_s=self.sync_s)


@dataclass(frozen=True)
class Node:
    """A machine: a phone SoC, an edge server, a cloud server.

    Attributes
    ----------
    name : str
        Unique in the platform.
    role : str
        ``device``, ``edge`` or ``cloud``: whose battery its energy is.
    units : tuple of ComputeUnit
        In declaration order.
    sync_s : float
        Synchronisation cost per edge that crosses two units of this node (s).
    shared_memory_bandwidth_bytes_per_s : float
        Copy bandwidth between units of this node (B/s).
    caches : tuple of CacheLevel
        Levels shared by all the node's units (a system-level cache, a shared L3),
        innermost first; every unit sees them after its own levels, at most as fast
        as its last own level, and not at all when no larger than it (its ``caches``
        are resolved here, :func:`simulator.hardware.memory.resolve`).
    dram_bandwidth_bytes_per_s : float or None
        DRAM bandwidth all the node's units together can pull (B/s), shared by the ops
        running at once (``docs/shared-dram.md``). None: the largest unit
        ``memory_bandwidth_bytes_per_s`` (see :attr:`dram_bps`).
    load_factor : float
        Neurosurgeon's K_load (> 0, default 1): the placement estimates multiply the
        time of every op on the node's units by it (a declared background load); the
        engine runs ops at their own durations.
    memory_bytes : float
        The node's memory pool (B) that resident weights and live activations of all its
        units share (inf: not limited); each unit's ``memory_bytes`` is its own limit.
    memory_policy : str
        What happens when the pool is short (docs/memory.md): ``refuse`` (weights that
        do not fit are a placement error; a request whose activations might not fit is
        dropped on arrival) or ``allow`` (run anyway; the ``memory`` table shows it).
    private : bool
        Only apps sourced on this node get its units among a policy's candidates
        (:func:`simulator.placement.objectives.candidate_units`); a fleet's members are
        private unless the document says otherwise (docs/fleets.md).
    """

    name: str
    role: str
    units: tuple[ComputeUnit, ...]
    sync_s: float = 0.0
    shared_memory_bandwidth_bytes_per_s: float = math.inf
    sync_pairs: tuple[SyncPair, ...] = ()
    thermal: ThermalModel | None = None
    battery_j: float | None = None
    caches: tuple[CacheLevel, ...] = ()
    dram_bandwidth_bytes_per_s: float | None = None
    load_factor: float = 1.0
    memory_bytes: float = math.inf
    memory_policy: str = "refuse"
    private: bool = False

    def __post_init__(self) -> None:
        self._resolve_caches()
        if not self.memory_bytes > 0:
            raise SocsimError(f"node '{self.name}': memory must be > 0, got {self.memory_bytes}")
        if self.memory_policy not in MEMORY_POLICIES:
            raise SocsimError(
                f"node '{self.name}': memory_policy must be one of {MEMORY_POLICIES}, "
                f"got '{self.memory_policy}'"
            )
        if not self.load_factor > 0 or not math.isfinite(self.load_factor):
            raise SocsimError(
                f"node '{self.name}': load_factor must be > 0, got {self.load_factor}"
            )
        if self.role not in NODE_ROLES:
            raise SocsimError(f"node '{self.name}': role must be one of {NODE_ROLES}")
        if not self.units:
            raise SocsimError(f"node '{self.name}' has no compute units")
        names = [u.name for u in self.units]
        if len(set(names)) != len(names):
            raise SocsimError(f"node '{self.name}': duplicate unit names {names}")
        _check_nonneg(f"node '{self.name}'", sync_s=self.sync_s)
        if self.battery_j is not None and not self.battery_j > 0:
            raise SocsimError(f"node '{self.name}': battery capacity must be > 0")
        if not self.shared_memory_bandwidth_bytes_per_s > 0:
            raise SocsimError(f"node '{self.name}': shared memory bandwidth must be > 0")
        dram = self.dram_bandwidth_bytes_per_s
        if dram is not None and not dram > 0:
            raise SocsimError(f"node '{self.name}': DRAM bandwidth must be > 0, got {dram}")
        seen = set()
        for pair in self.sync_pairs:
            unknown = sorted(set(pair.units) - set(names))
            if unknown:
                raise SocsimError(
                    f"node '{self.name}': sync pair names unknown unit(s) {unknown}; "
                    f"units: {', '.join(names)}"
                )
            if pair.units in seen:
                raise SocsimError(f"node '{self.name}': sync pair {sorted(pair.units)} given twice")
            seen.add(pair.units)

    def _resolve_caches(self) -> None:
        """Mark the node's levels shared and append them to every unit's own levels."""
        shared = tuple(
            level if level.shared else dataclasses.replace(level, shared=True)
            for level in self.caches
        )
        object.__setattr__(self, "caches", shared)
        try:
            check_hierarchy(shared, 0.0)  # among themselves; each unit checks its DRAM
        except SocsimError as exc:
            raise SocsimError(f"node '{self.name}': {exc}") from None
        units = []
        for unit in self.units:
            caches = resolve(unit.caches, shared)
            if caches != unit.caches:
                try:
                    unit = dataclasses.replace(unit, caches=caches)
                except SocsimError as exc:
                    raise SocsimError(f"node '{self.name}' (shared caches): {exc}") from None
            units.append(unit)
        object.__setattr__(self, "units", tuple(units))

    @property
    def dram_bps(self) -> float:
        """DRAM bandwidth (B/s) the node's running ops share.

        The declared ``dram_bandwidth_bytes_per_s``, else the largest unit
        ``memory_bandwidth_bytes_per_s``: no unit alone is throttled by the default, and
        no set of units together exceeds what the fastest one could pull (``inf`` when
        every unit is never memory-bound: nothing is shared).
        """
        if self.dram_bandwidth_bytes_per_s is not None:
            return self.dram_bandwidth_bytes_per_s
        return max(u.memory_bandwidth_bytes_per_s for u in self.units)

    def sync_for(self, a: str, b: str) -> tuple[float, str]:
        """(sync cost in s, mechanism) of an edge between units ``a`` and ``b`` of this node."""
        key = frozenset((a, b))
        for pair in self.sync_pairs:
            if pair.units == key:
                return pair.sync_s, pair.mechanism
        return self.sync_s, "default"

    def unit(self, name: str) -> ComputeUnit:
        for unit in self.units:
            if unit.name == name:
                return unit
        raise SocsimError(f"node '{self.name}' has no unit '{name}'")
