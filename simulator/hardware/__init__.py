"""Compute units, nodes and the pure operator cost model."""

from simulator.hardware.cost import amdahl_speedup, op_energy_j, op_time_s, unsupported_reason
from simulator.hardware.units import NODE_ROLES, UNIT_KINDS, ComputeUnit, Node

__all__ = [
    "NODE_ROLES",
    "UNIT_KINDS",
    "ComputeUnit",
    "Node",
    "amdahl_speedup",
    "op_energy_j",
    "op_time_s",
    "unsupported_reason",
]
