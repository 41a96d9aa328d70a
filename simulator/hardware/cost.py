"""The operator cost model: pure functions from (op, unit) to seconds and joules.

Default roofline (the modelling contract)::

    t = dispatch + barrier(n) + max(flops / (peak[dtype] * eff[kind] * S(n)), memory)
    memory = bytes / DRAM bandwidth                    (no caches)
           = max over levels L of bytes(L) / bandwidth(L)   (cache levels: memory.py)
           = 0 for a view (moves_bytes: a reshape that aliases its input copies nothing)
    flops = op flops x (1 - sparse_efficiency x sparsity)  (weight pruning; 0 without kernels)
    S(n) = 1 / ((1 - p) + p / n)                       (Amdahl, p = parallel fraction)
    barrier(n) = barrier_s * log2(n)                   (n = the cores one op uses)

An explicit time table on the op overrides everything; a unit's learned kernel
predictor (:mod:`simulator.hardware.predictor`) overrides the roofline for the ops it
covers. :func:`cost_model` names which of the three costs an op. docs/cost-model.md
states the whole model.
"""

from __future__ import annotations

import math

from simulator.graph.model import Op
from simulator.hardware.memory import LevelTraffic, hierarchy_time_s, level_traffic
from simulator.hardware.predictor import predicted_parts_s
from simulator.hardware.units import ComputeUnit


def amdahl_speedup(parallel_fraction: float, cores: int) -> float:
    """Amdahl speedup ``1 / ((1 - p) + p / n)`` of work with parallel fraction p on n cores.

    Parameters
    ----------
    parallel_fraction : float
        p in [0, 1].
    cores : int
        n >= 1.

    Returns
    -------
    float
        Speedup, between 1 and n; it tends to 1 / (1 - p) as n grows.
    """
    if not 0.0 <= parallel_fraction <= 1.0:
        raise ValueError(f"parallel_fraction must be in [0, 1], got {parallel_fraction}")
    if cores < 1:
        raise ValueError(f"cores must be >= 1, got {cores}")
    if parallel_fraction == 1.0:  # exact at the ends (1 / (1 / n) need not round to n)
        return float(cores)
    return 1.0 / ((1.0 - parallel_fraction) + parallel_fraction / cores)


def explicit_time_s(op: Op, unit: ComputeUnit, unit_id: str) -> float | None:
    """The op's tabled time on this unit (by qualified id, then bare name), if tabled."""
    if unit_id in op.time_s:
        return op.time_s[unit_id]
    return op.time_s.get(unit.name)


def unsupported_reason(op: Op, unit: ComputeUnit, unit_id: str) -> str | None:
    """Why ``unit`` cannot run ``op``, or None when it can."""
    if op.time_s:
        if explicit_time_s(op, unit, unit_id) is None:
            return f"op has explicit times only for {sorted(op.time_s)}"
        return None
    if not unit.runs_kind(op.kind):
        return f"unit does not support op kind '{op.kind}'"
    if op.fused and not unit.fused_kernels:
        return f"unit has no fused kernel for {'+'.join(op.fused)}"
    if op.dtype not in unit.peak_flops:
        have = ", ".join(sorted(unit.peak_flops)) or "none"
        return f"unit has no {op.dtype} throughput (has: {have})"
    return None


def compute_time_s(op: Op, unit: ComputeUnit) -> float:
    """Roofline compute-bound time (s) of the op, without dispatch."""
    if op.flops == 0:
        return 0.0
    rate = (
        unit.peak_flops[op.dtype]
        * unit.efficiency_for(op.kind)
        * amdahl_speedup(op.parallel_fraction, unit.op_cores)
    )
    # sparse kernels skip the zero weights' multiply-adds, as far as they are efficient
    return op.flops * (1.0 - unit.sparse_efficiency * op.sparsity) / rate


def barrier_time_s(unit: ComputeUnit) -> float:
    """Per-op barrier (s) of the cores an op uses: ``barrier_s × log2(cores)`` (a tree barrier)."""
    return unit.barrier_s * math.log2(unit.op_cores) if unit.op_cores > 1 else 0.0


def activation_bytes(op: Op) -> float:
    """The op's activation bytes (B): its inputs plus its outputs."""
    return float(op.input_bytes + op.output_bytes)


def streamed_weight_bytes(op: Op, unit: ComputeUnit) -> float:
    """Weight bytes the op reads on ``unit`` (B): dense when a dense kernel runs a pruned op."""
    if op.sparsity and not unit.sparse_efficiency:
        # a dense kernel expands the compressed weights and streams them dense
        return float(op.dense_weight_bytes)
    return float(op.weight_bytes)


def moves_bytes(op: Op) -> bool:
    """Whether the op reads and writes memory at all: False for a view (:attr:`Op.is_view`).

    The one rule every path that costs memory time or DRAM traffic follows (this module,
    :mod:`simulator.cost_table`, and through :func:`dram_traffic_bytes` the engine's
    shared DRAM and ``co_execute``). Why: a Reshape, Flatten, Squeeze or Identity
    aliases its input in real runtimes (onnxruntime, TFLite) and copies nothing: with
    onnxruntime on the development host a Reshape or Flatten of 0.4 KB to 7 MB took
    1-7 us whatever its size (dispatch), a Transpose of the same sizes up to ~1 ms, in
    proportion to its bytes (docs/cost-model.md, "Views cost dispatch only"). A view
    keeps its fixed costs (dispatch, barrier), and the learned predictor's time when
    one covers it.
    """
    return not op.is_view


def memory_traffic(op: Op, unit: ComputeUnit) -> tuple[LevelTraffic, ...]:
    """Bytes the op moves at each level of the unit's hierarchy, innermost first, DRAM last.

    See :mod:`simulator.hardware.memory` for the rules; without caches, everything is
    DRAM traffic. A view moves nothing at any level (:func:`moves_bytes`).
    """
    moved = moves_bytes(op)
    return level_traffic(
        activation_bytes(op) if moved else 0.0,
        streamed_weight_bytes(op, unit) if moved else 0.0,
        unit.caches,
        unit.memory_bandwidth_bytes_per_s,
    )


def dram_traffic_bytes(op: Op, unit: ComputeUnit) -> float:
    """Bytes the op moves between the node's DRAM and ``unit`` (B).

    The figure a node's shared DRAM bandwidth is divided by while ops run at once; with
    caches, only the share no cache level holds (:func:`memory_traffic`); 0 for a view
    (:func:`moves_bytes`).
    """
    if unit.caches:
        return memory_traffic(op, unit)[-1].nbytes
    if not moves_bytes(op):
        return 0.0
    return activation_bytes(op) + streamed_weight_bytes(op, unit)


def memory_time_s(op: Op, unit: ComputeUnit) -> float:
    """Memory-bound time (s): the slowest level's bytes over its bandwidth.

    Without caches: DRAM traffic over the unit's DRAM bandwidth (the plain roofline).
    """
    if unit.caches:
        return hierarchy_time_s(memory_traffic(op, unit))
    if math.isinf(unit.memory_bandwidth_bytes_per_s):
        return 0.0
    return dram_traffic_bytes(op, unit) / unit.memory_bandwidth_bytes_per_s


def _require_supported(op: Op, unit: ComputeUnit, unit_id: str) -> None:
    """Raise ValueError naming why ``unit`` cannot run ``op``, if it cannot."""
    reason = unsupported_reason(op, unit, unit_id)
    if reason is not None:
        raise ValueError(f"op '{op.name}' cannot run on '{unit_id or unit.name}': {reason}")


def op_time_s(op: Op, unit: ComputeUnit, unit_id: str = "") -> float:
    """Execution time (s) of ``op`` on ``unit``.

    Raises
    ------
    ValueError
        When the unit cannot run the op (see :func:`unsupported_reason`).
    """
    _require_supported(op, unit, unit_id)
    tabled = explicit_time_s(op, unit, unit_id)
    if tabled is not None:
        return tabled
    predicted = predicted_time_s(op, unit)
    if predicted is not None:
        return predicted
    return (
        unit.dispatch_s
        + barrier_time_s(unit)
        + max(compute_time_s(op, unit), memory_time_s(op, unit))
    )


def op_time_parts_s(op: Op, unit: ComputeUnit, unit_id: str = "") -> tuple[float, float, float]:
    """(fixed, compute, memory) seconds of the roofline at the unit's top frequency.

    ``fixed + max(compute, memory)`` is :func:`op_time_s`; DVFS stretches ``compute``
    by ``f_max / f``. An explicitly tabled time counts as compute-bound; a predicted one
    is split like the roofline's (:func:`~simulator.hardware.predictor.predicted_parts_s`).
    """
    _require_supported(op, unit, unit_id)
    tabled = explicit_time_s(op, unit, unit_id)
    if tabled is not None:
        return 0.0, tabled, 0.0
    compute, memory = compute_time_s(op, unit), memory_time_s(op, unit)
    # (predicted_time_s is None without a predictor: the first test only narrows its type)
    if unit.predictor is not None and predicted_time_s(op, unit) is not None:
        return predicted_parts_s(op, unit.predictor, unit.op_cores, compute, memory)
    return unit.dispatch_s + barrier_time_s(unit), compute, memory


def predicted_time_s(op: Op, unit: ComputeUnit) -> float | None:
    """The unit's learned predictor's time (s) of the op, or None when it has none for it."""
    return None if unit.predictor is None else unit.predictor.time_s(op, unit.op_cores)


def cost_model(op: Op, unit: ComputeUnit, unit_id: str = "") -> str:
    """Which model costs ``op`` on ``unit``: ``table``, ``predictor`` or ``roofline``."""
    if explicit_time_s(op, unit, unit_id) is not None:
        return "table"
    return "roofline" if predicted_time_s(op, unit) is None else "predictor"


def op_energy_j(op: Op, unit: ComputeUnit, unit_id: str = "") -> float:
    """Energy (J) the op draws: its share of the unit's active power x time.

    The share is ``cores_per_op / cores`` (1 when an op uses the whole unit).
    """
    return energy_for_time_j(unit, op_time_s(op, unit, unit_id))


def energy_for_time_j(unit: ComputeUnit, time_s: float) -> float:
    """Energy (J) of one op that runs ``time_s`` on ``unit`` (see :func:`op_energy_j`)."""
    return unit.active_w * unit.op_cores / unit.cores * time_s
