"""Compute units and the nodes that hold them (SI units throughout)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.errors import SocsimError
from simulator.frozen import FrozenMap
from simulator.graph.model import DTYPE_BYTES, OP_KINDS

UNIT_KINDS: tuple[str, ...] = ("cpu", "gpu", "dsp", "npu")
NODE_ROLES: tuple[str, ...] = ("device", "edge", "cloud")


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

    def __post_init__(self) -> None:
        owner = f"unit '{self.name}'"
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

    def efficiency_for(self, op_kind: str) -> float:
        return self.efficiency.get(op_kind, self.efficiency["default"])

    def runs_kind(self, op_kind: str) -> bool:
        return self.supports is None or op_kind in self.supports


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
    """

    name: str
    role: str
    units: tuple[ComputeUnit, ...]
    sync_s: float = 0.0
    shared_memory_bandwidth_bytes_per_s: float = math.inf

    def __post_init__(self) -> None:
        if self.role not in NODE_ROLES:
            raise SocsimError(f"node '{self.name}': role must be one of {NODE_ROLES}")
        if not self.units:
            raise SocsimError(f"node '{self.name}' has no compute units")
        names = [u.name for u in self.units]
        if len(set(names)) != len(names):
            raise SocsimError(f"node '{self.name}': duplicate unit names {names}")
        _check_nonneg(f"node '{self.name}'", sync_s=self.sync_s)
        if not self.shared_memory_bandwidth_bytes_per_s > 0:
            raise SocsimError(f"node '{self.name}': shared memory bandwidth must be > 0")

    def unit(self, name: str) -> ComputeUnit:
        for unit in self.units:
            if unit.name == name:
                return unit
        raise SocsimError(f"node '{self.name}' has no unit '{name}'")
