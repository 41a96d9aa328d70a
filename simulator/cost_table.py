"""Every (op, unit) execution time of a list of ops at once, the same floats as one by one.

Planning asks the cost model for every op on every unit (HEFT on 10,000 ops and six units
asks 60,000 times). :func:`op_time_rows` answers them together: for each unit, the ops the
plain roofline costs (no explicit time table, no kernel predictor on the unit, no cache
levels) are costed with numpy in one pass; every other op goes through
:func:`simulator.hardware.cost.op_time_s`, the one statement of the model.

The vectorised pass performs the scalar path's float operations in the scalar path's
order (IEEE double arithmetic is the same in numpy and in Python), so its floats are
bit-identical to it; tests compare them with ``float.hex``. Pure: no SimPy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from simulator.graph.model import Op
from simulator.hardware.cost import barrier_time_s, moves_bytes, op_time_s, unsupported_reason
from simulator.hardware.units import ComputeUnit

#: ``None`` in a row: the unit cannot run the op.
Row = dict[str, float | None]


class _OpColumns:
    """The roofline's per-op inputs as arrays (ops with attributes read once)."""

    def __init__(self, ops: Sequence[Op]):
        n = len(ops)
        flops = [0.0] * n
        sparsity = [0.0] * n
        parallel = [0.0] * n
        activation = [0.0] * n
        weights = [0.0] * n
        dense = [0.0] * n
        self.fused = [False] * n
        self.kinds = [op.kind for op in ops]
        self.dtypes = [op.dtype for op in ops]
        # the scalar path's memory rule: a view moves no bytes
        self.views = np.array([not moves_bytes(op) for op in ops], dtype=bool)
        self.any_view = bool(self.views.any())
        for i, op in enumerate(ops):
            flops[i] = op.flops
            parallel[i] = op.parallel_fraction
            # the scalar path's activation_bytes and streamed_weight_bytes
            activation[i] = float(op.input_bytes + op.output_bytes)
            if op.attrs:
                sparsity[i] = op.sparsity
                self.fused[i] = bool(op.fused)
                weights[i] = float(op.weight_bytes)
                dense[i] = float(op.dense_weight_bytes)
            else:
                weights[i] = dense[i] = float(op.dense_weight_bytes)
        self.flops = np.array(flops, dtype=np.float64)
        self.sparsity = np.array(sparsity, dtype=np.float64)
        self.parallel = np.array(parallel, dtype=np.float64)
        self.activation = np.array(activation, dtype=np.float64)
        self.weights = np.array(weights, dtype=np.float64)
        self.dense = np.array(dense, dtype=np.float64)


def _roofline(unit: ComputeUnit, cols: _OpColumns, idx: np.ndarray) -> np.ndarray:
    """:func:`~simulator.hardware.cost.op_time_s` of the ops ``idx`` on a plain-roofline
    unit, as the scalar path computes it (same operations, same order)."""
    kinds = [cols.kinds[i] for i in idx]
    dtypes = [cols.dtypes[i] for i in idx]
    peak_of = {d: unit.peak_flops[d] for d in set(dtypes)}
    eff_of = {k: unit.efficiency_for(k) for k in set(kinds)}
    peak = np.array([peak_of[d] for d in dtypes], dtype=np.float64)
    eff = np.array([eff_of[k] for k in kinds], dtype=np.float64)
    p = cols.parallel[idx]
    cores = unit.op_cores
    with np.errstate(divide="ignore", invalid="ignore"):
        # amdahl_speedup: exactly n at p == 1
        speedup = np.where(p == 1.0, float(cores), 1.0 / ((1.0 - p) + p / cores))
        rate = peak * eff * speedup
        flops = cols.flops[idx]
        work = flops * (1.0 - unit.sparse_efficiency * cols.sparsity[idx])
        compute = np.where(flops == 0, 0.0, work / rate)
    bandwidth = unit.memory_bandwidth_bytes_per_s
    if math.isinf(bandwidth):
        memory = np.zeros(len(idx))
    else:
        # a dense kernel streams a pruned op's weights dense
        streamed = cols.weights[idx]
        if not unit.sparse_efficiency:
            streamed = np.where(cols.sparsity[idx] != 0, cols.dense[idx], streamed)
        memory = (cols.activation[idx] + streamed) / bandwidth
        if cols.any_view:
            memory = np.where(cols.views[idx], 0.0, memory)
    fixed = unit.dispatch_s + barrier_time_s(unit)
    return fixed + np.maximum(compute, memory)


def _vectorisable(unit: ComputeUnit) -> bool:
    return unit.predictor is None and not unit.caches


def op_time_rows(ops: Sequence[Op], units: Sequence[tuple[str, ComputeUnit]]) -> list[Row]:
    """Per op, ``{uid: time_s or None}`` over ``units`` (None: the unit cannot run it).

    Parameters
    ----------
    ops : sequence of Op
    units : sequence of (uid, ComputeUnit)
        Qualified id and unit, in the order the rows list them.

    Returns
    -------
    list of dict
        One row per op, keys in ``units`` order; times (s) are those of
        :func:`simulator.hardware.cost.op_time_s`, bit for bit.
    """
    rows: list[Row] = [{} for _ in ops]
    plain = [i for i, op in enumerate(ops) if not op.time_s]
    plain_set = set(plain)
    cols = _OpColumns([ops[i] for i in plain]) if plain else None
    for uid, unit in units:
        done: set[int] = set()
        if cols is not None and _vectorisable(unit):
            # an untabled op's support depends on its kind, fusion and dtype only: asked
            # once per such shape, of its first op
            runs: dict[tuple, bool] = {}
            able = []
            for k, shape in enumerate(zip(cols.kinds, cols.fused, cols.dtypes, strict=True)):
                ok = runs.get(shape)
                if ok is None:
                    ok = runs[shape] = unsupported_reason(ops[plain[k]], unit, uid) is None
                if ok:
                    able.append(k)
            times = iter(_roofline(unit, cols, np.array(able, dtype=np.intp)).tolist())
            able_set = set(able)
            for k, i in enumerate(plain):
                rows[i][uid] = next(times) if k in able_set else None
            done = plain_set
        for i, op in enumerate(ops):
            if i in done:
                continue
            reason = unsupported_reason(op, unit, uid)
            rows[i][uid] = op_time_s(op, unit, uid) if reason is None else None
    return rows
