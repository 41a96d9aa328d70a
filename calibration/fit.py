"""Fitting the roofline's parameters to measured operator times.

The model is socsim's own (:func:`simulator.hardware.cost.op_time_s`)::

    t = dispatch + max(flops / (peak * eff[kind] * S(n)), bytes / bandwidth)

with ``peak`` and a reference bandwidth from the microbenchmarks. Two stages:

1. Per-operator kernel times (the profiler's) fix ``eff[kind]`` (bounded to (0, 1]), the
   bandwidth factor (effective bandwidth = factor x the best streaming rate) and the
   kernel's own fixed cost, by robust least squares (``soft_l1``, so a few outliers such
   as a preempted run on a shared machine do not drag the fit) on log-time residuals
   (relative errors), each weighted by the square root of the op's share of its
   model's time (:func:`time_share_weights`), from several starting bandwidths.
2. End-to-end times of the same fit models add what the kernel profile does not see:
   ``wall = scale x (kernel_sum + n_ops x constant)``, fitted (robust, relative error)
   on the *measured* kernel sums of the fit *networks* (not the kernel sweeps,
   :func:`calibration.table.is_sweep`: isolated kernels each followed by a reduction,
   whose constant differs; a table without networks uses them). Stage 2 reads only
   measured sums, so it runs first. A positive constant is the runtime's overhead
   between kernels (``dispatch_s`` = kernel + overhead). A negative one is the
   profiler's own cost inside every kernel time it records, which an unprofiled run
   does not pay (:attr:`FitResult.profiler_s`, bounded by the fastest kernel timed).
   The *runtime scale* (:attr:`FitResult.runtime_scale`; at
   :data:`SCALE_MIN_THREADS` threads or more with :data:`MIN_SCALE_MODELS` networks or
   more, else 1) is how much longer an unprofiled run takes in proportion to its
   kernels: at two threads a real CNN's wall is about 1.04 x its kernel sum, which one
   constant, pulled by the many small networks, cannot follow. Every kernel time has
   the profiler's cost taken off and is multiplied by the scale
   (:func:`without_profiler`) before stage 1 and before a learned predictor trains, so
   both predict what an op takes in an unprofiled run. docs/calibration.md has the
   measurements behind each choice ("The profiler's cost per kernel", "Pool features,
   the constant from networks", "The runtime scale").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calibration.table import is_sweep, network_rows
from simulator.errors import SocsimError
from simulator.frozen import FrozenMap
from simulator.graph.model import DTYPE_BYTES, Op
from simulator.hardware.cost import compute_time_s, memory_time_s, op_time_s
from simulator.hardware.units import ComputeUnit

EFF_FLOOR = 1e-4
BANDWIDTH_FACTOR_BOUNDS = (0.02, 50.0)  # small working sets stream from cache, far above DRAM
DISPATCH_US_BOUNDS = (0.0, 1000.0)
#: A kernel timed at under twice the profiler's cost keeps this share of its time
#: (taking the whole cost off would leave nothing, or less, to learn from).
PROFILER_FLOOR = 0.5
#: Stage 2 fits the runtime scale with at least this many end-to-end rows (with fewer it
#: cannot tell a scale from the per-op constant) and within these bounds.
MIN_SCALE_MODELS = 5
SCALE_BOUNDS = (0.5, 2.0)
#: ... and at this many threads or more: at one thread it gained 0.2-1.0 points of
#: leave-one-network-out MAPE (on 2 %) but made two consecutive runs' predictions agree
#: within 3.6 % instead of 2.2 % (runs T and U of 2026-12-07; docs/calibration.md, "The
#: runtime scale"), and agreement within 3 % is the binding requirement there.
SCALE_MIN_THREADS = 2
#: soft_l1 switches from quadratic to linear at this log-residual (about 10 %).
LOSS_SCALE = 0.1
#: Starting bandwidth factors of the multi-start fit.
BANDWIDTH_STARTS = (0.5, 2.0, 10.0, 40.0)


@dataclass(frozen=True)
class HostRates:
    """The host's reference rates (from the microbenchmarks).

    Attributes
    ----------
    peak_flops : Mapping[str, float]
        Best achieved FLOP/s by dtype, over all ``threads`` cores.
    bandwidth_bps : float
        Best achieved streaming rate (B/s).
    threads : int
        Cores a kernel uses.
    """

    peak_flops: Mapping[str, float]
    bandwidth_bps: float
    threads: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops", FrozenMap(self.peak_flops))
        if not self.peak_flops or any(not v > 0 for v in self.peak_flops.values()):
            raise SocsimError(f"host rates need a peak > 0 for some dtype, got {self.peak_flops}")
        if not self.bandwidth_bps > 0 or self.threads < 1:
            raise SocsimError("host rates need bandwidth > 0 and threads >= 1")


@dataclass(frozen=True)
class FitResult:
    """Fitted parameters and how well they fit.

    Attributes
    ----------
    efficiency : Mapping[str, float]
        eff per op kind, plus ``default`` (the geometric mean of the fitted kinds).
    bandwidth_bps : float
        Effective memory bandwidth (B/s).
    kernel_dispatch_s, overhead_s : float
        Fixed cost inside a kernel, and the runtime's per-node overhead between kernels.
    profiler_s : float
        The profiler's own cost inside every kernel time it records (s; 0 unless stage
        2 found the end-to-end runs faster than their kernel sums), taken off the
        kernel times before the fit (:func:`without_profiler`).
    runtime_scale : float
        An op's time in an unprofiled run over its profiled kernel time without the
        profiler's cost (stage 2; 1 with too few end-to-end rows): the kernel times are
        multiplied by it before the fit.
    rates : HostRates
        The reference rates the efficiencies are relative to.
    op_stats, model_stats : Mapping[str, float]
        ``n``, ``mape`` (%), ``within_10`` (share) and ``median_abs_log`` of the
        per-op and per-model (end-to-end) residuals on the fit data; ``op_stats`` also
        counts the ``memory_bound`` ops (few: the bandwidth is poorly determined).
    """

    efficiency: Mapping[str, float]
    bandwidth_bps: float
    kernel_dispatch_s: float
    overhead_s: float
    rates: HostRates
    op_stats: Mapping[str, float] = field(default_factory=dict)
    model_stats: Mapping[str, float] = field(default_factory=dict)
    profiler_s: float = 0.0
    runtime_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("efficiency", "op_stats", "model_stats"):
            object.__setattr__(self, name, FrozenMap(getattr(self, name)))
        if not SCALE_BOUNDS[0] <= self.runtime_scale <= SCALE_BOUNDS[1]:
            raise SocsimError(
                f"runtime_scale must be within {SCALE_BOUNDS}, got {self.runtime_scale}"
            )
        if self.overhead_s < 0 or self.profiler_s < 0 or min(self.overhead_s, self.profiler_s) > 0:
            raise SocsimError(
                f"overhead_s ({self.overhead_s}) and profiler_s ({self.profiler_s}) must be "
                ">= 0 and not both > 0 (one signed per-op constant)"
            )

    @property
    def dispatch_s(self) -> float:
        return self.kernel_dispatch_s + self.overhead_s

    def unit(self, name: str = "cpu", with_overhead: bool = True) -> ComputeUnit:
        """The fitted unit, as socsim costs ops on it."""
        return make_unit(
            name,
            self.rates,
            self.efficiency,
            self.bandwidth_bps,
            self.dispatch_s if with_overhead else self.kernel_dispatch_s,
        )


def make_unit(
    name: str,
    rates: HostRates,
    efficiency: Mapping[str, float],
    bandwidth_bps: float,
    dispatch_s: float,
) -> ComputeUnit:
    """A one-node CPU unit with per-core peaks (the measured peak / threads)."""
    per_core = {dtype: peak / rates.threads for dtype, peak in rates.peak_flops.items()}
    return ComputeUnit(
        name=name,
        kind="cpu",
        peak_flops=per_core,
        efficiency=dict(efficiency),
        memory_bandwidth_bytes_per_s=bandwidth_bps,
        dispatch_s=dispatch_s,
        cores=rates.threads,
    )


def row_op(row: Mapping, index: int) -> Op:
    """An :class:`Op` carrying a table row's kind, dtype, FLOPs, bytes and parallel fraction."""
    elems = round(float(row["bytes"]) / DTYPE_BYTES[row["dtype"]])
    fraction = float(row.get("parallel_fraction", 1.0))
    return Op(
        f"op{index}",
        row["kind"],
        flops=float(row["flops"]),
        input_elems=elems,
        dtype=row["dtype"],
        parallel_fraction=1.0 if math.isnan(fraction) else fraction,
    )


def _stats(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    rel = predicted / measured - 1.0
    return {
        "n": len(measured),
        "mape": float(np.mean(np.abs(rel)) * 100) if len(rel) else math.nan,
        "within_10": float(np.mean(np.abs(rel) <= 0.10)) if len(rel) else math.nan,
        "median_abs_log": float(np.median(np.abs(np.log(predicted / measured))))
        if len(rel)
        else math.nan,
    }


def predict(ops: Sequence[Op], unit: ComputeUnit) -> np.ndarray:
    """socsim's time (s) of every op on ``unit``."""
    return np.array([op_time_s(op, unit) for op in ops])


def time_share_weights(op_rows: pd.DataFrame) -> np.ndarray:
    """Per-op residual weights: sqrt of the op's share of its model's summed op time.

    Normalised so the squared weights average 1. The fit then serves end-to-end
    latency: a 300 µs depthwise layer counts more than a 3 µs Flatten of the same model.
    """
    times = op_rows["median_s"].astype(float)
    share = (times / times.groupby(op_rows["model"]).transform("sum")).to_numpy()
    return np.sqrt(share * len(share) / share.sum())


def fit_kernels(op_rows: pd.DataFrame, rates: HostRates) -> tuple[dict, float, float]:
    """Stage 1: (efficiency by kind, bandwidth B/s, kernel dispatch s) from op rows.

    Raises
    ------
    SocsimError
        With no rows, or rows whose dtype has no measured peak.
    """
    if op_rows.empty:
        raise SocsimError("fit: no operator rows to fit")
    missing = sorted(set(op_rows["dtype"]) - set(rates.peak_flops))
    if missing:
        raise SocsimError(
            f"fit: rows of dtype {missing} but peaks only for {sorted(rates.peak_flops)}"
        )
    records = op_rows.to_dict("records")
    ops = [row_op(r, i) for i, r in enumerate(records)]
    # rows with the same op (all but its name) cost the same:
    # the residuals cost each distinct op once (1,624 rows, 1,013 ops on 2026-12-07),
    # as the finite-difference Jacobian calls them hundreds of times
    distinct, inverse = _distinct_ops(ops)
    measured = op_rows["median_s"].to_numpy(float)
    kinds = sorted({op.kind for op in ops if op.flops > 0})
    n = len(kinds)

    def unpack(x: np.ndarray) -> tuple[dict, float, float]:
        eff = dict(zip(kinds, x[:n], strict=True))
        eff["default"] = float(np.exp(np.mean(np.log(x[:n])))) if n else 1.0
        return eff, x[n] * rates.bandwidth_bps, x[n + 1] * 1e-6

    weights = time_share_weights(op_rows)

    def residuals(x: np.ndarray) -> np.ndarray:
        unit = make_unit("cpu", rates, *unpack(x))
        return weights * (np.log(predict(distinct, unit)[inverse]) - np.log(measured))

    lower = [EFF_FLOOR] * n + [BANDWIDTH_FACTOR_BOUNDS[0], DISPATCH_US_BOUNDS[0]]
    upper = [1.0] * n + [BANDWIDTH_FACTOR_BOUNDS[1], DISPATCH_US_BOUNDS[1]]
    dispatch_start = min(max(1.0, float(np.min(measured)) * 0.5e6), DISPATCH_US_BOUNDS[1] - 1)
    from scipy.optimize import least_squares

    # the bandwidth is weakly determined (cache-resident working sets), which leaves
    # local minima: start from several bandwidths, keep the lowest cost (deterministic)
    result = min(
        (
            least_squares(
                residuals,
                [0.5] * n + [factor, dispatch_start],
                bounds=(lower, upper),
                loss="soft_l1",
                f_scale=LOSS_SCALE,
                x_scale="jac",
                max_nfev=2000,
            )
            for factor in BANDWIDTH_STARTS
        ),
        key=lambda r: r.cost,
    )
    efficiency, bandwidth, dispatch = unpack(result.x)
    return (
        _identified(efficiency, ops, make_unit("cpu", rates, *unpack(result.x))),
        bandwidth,
        dispatch,
    )


def _distinct_ops(ops: Sequence[Op]) -> tuple[list[Op], np.ndarray]:
    """The ops that differ in anything but their name, and each op's index among those."""
    index: dict[Op, int] = {}
    distinct: list[Op] = []
    inverse = np.empty(len(ops), dtype=np.intp)
    for i, op in enumerate(ops):
        key = dataclasses.replace(op, name="op")  # the name costs nothing
        if key not in index:
            index[key] = len(distinct)
            distinct.append(op)
        inverse[i] = index[key]
    return distinct, inverse


def _identified(efficiency: dict, ops: Sequence[Op], unit: ComputeUnit) -> dict:
    """The efficiencies the data determine: kinds with at least one compute-bound op.

    A kind whose ops are all memory- or dispatch-bound leaves its efficiency at the
    starting guess; it gets ``default`` (the geometric mean of the identified kinds).
    """
    bound = {
        op.kind for op in ops if op.flops and compute_time_s(op, unit) > memory_time_s(op, unit)
    }
    kept = {k: v for k, v in efficiency.items() if k in bound}
    kept["default"] = float(np.exp(np.mean(np.log(list(kept.values()))))) if kept else 1.0
    return kept


def fit_overhead(
    model_rows: pd.DataFrame,
    kernel_sum_s: Mapping[str, float],
    op_count: Mapping[str, int],
    fastest_kernel_s: float = 0.0,
    with_scale: bool = True,
) -> tuple[float, float]:
    """Stage 2: ``(scale, constant_s)`` so that ``scale x (kernel_sum + op_count x
    constant)`` matches each model's median wall time.

    Minimises the robust (``soft_l1``) relative error, the constant in
    ``[-fastest_kernel_s, 1000 µs]``, the scale within :data:`SCALE_BOUNDS`, fitted only
    ``with_scale`` and with :data:`MIN_SCALE_MODELS` rows or more (else 1); ``(1, 0)``
    when there are no model rows. A positive constant is the runtime's overhead between
    kernels, a negative one the profiler's cost per kernel (:func:`split_overhead`).
    """
    rows = [r for r in model_rows.to_dict("records") if r["model"] in kernel_sum_s]
    if not rows:
        return 1.0, 0.0
    wall = np.array([r["median_s"] for r in rows])
    base = np.array([kernel_sum_s[r["model"]] for r in rows])
    count = np.array([op_count[r["model"]] for r in rows], float)
    from scipy.optimize import least_squares

    low = -max(fastest_kernel_s, 0.0) * 1e6
    scaled = with_scale and len(rows) >= MIN_SCALE_MODELS
    # x = (constant in µs, scale); the lower bounds a hair below so an optimum may sit
    # on them; clipped back
    bounds = (
        [low - 1e-12, SCALE_BOUNDS[0] if scaled else 1.0 - 1e-12],
        [DISPATCH_US_BOUNDS[1], SCALE_BOUNDS[1] if scaled else 1.0],
    )
    result = least_squares(
        lambda x: x[1] * (base + count * x[0] * 1e-6) / wall - 1.0,
        [1.0, 1.0],
        bounds=bounds,
        loss="soft_l1",
        f_scale=LOSS_SCALE,
    )
    constant = float(np.clip(result.x[0], low, DISPATCH_US_BOUNDS[1])) * 1e-6
    scale = float(np.clip(result.x[1], *SCALE_BOUNDS)) if scaled else 1.0
    return scale, constant


def split_overhead(constant_s: float, scale: float = 1.0) -> tuple[float, float]:
    """(overhead_s, profiler_s) of stage 2's signed constant: its positive part, scaled,
    is the runtime's overhead between kernels, its negative part the profiler's cost."""
    return scale * max(constant_s, 0.0), max(-constant_s, 0.0)


def without_profiler(table: pd.DataFrame, profiler_s: float, scale: float = 1.0) -> pd.DataFrame:
    """``table`` with every op row's time (``median_s``) as an unprofiled run takes it:
    ``profiler_s`` taken off (a time under ``profiler_s / (1 - PROFILER_FLOOR)`` keeping
    :data:`PROFILER_FLOOR` of itself), then multiplied by the runtime ``scale``; model
    rows unchanged. The same table when ``profiler_s`` is 0 and ``scale`` 1."""
    if profiler_s <= 0 and scale == 1.0:
        return table
    out = table.copy()
    op = out["level"] == "op"
    times = out.loc[op, "median_s"].astype(float)
    out.loc[op, "median_s"] = scale * np.maximum(times - profiler_s, PROFILER_FLOOR * times)
    return out


def fit(table: pd.DataFrame, rates: HostRates) -> FitResult:
    """Both stages on a measurement table (``op`` rows, and ``model`` rows if any); stage
    2 first (it reads measured sums only), so stage 1 fits kernels without the
    profiler's cost."""
    measured = table[table["level"] == "op"]
    model_rows = table[table["level"] == "model"]
    networks = model_rows[~model_rows["model"].map(is_sweep)]
    # the signed per-op constant (runtime overhead, or profiler cost) is fitted on the
    # *measured* kernel sums, so it does not absorb a kernel model's bias (and serves any)
    timed = measured["median_s"].astype(float)
    scale, constant = fit_overhead(
        networks if not networks.empty else model_rows,
        measured.groupby("model")["median_s"].sum().to_dict(),
        measured.groupby("model").size().to_dict(),
        float(timed[timed > 0].min()) if (timed > 0).any() else 0.0,
        with_scale=rates.threads >= SCALE_MIN_THREADS,
    )
    overhead, profiler = split_overhead(constant, scale)
    op_rows = without_profiler(measured, profiler, scale).reset_index(drop=True)
    # the kernels are fitted where they run in a network (not at a graph boundary);
    # every kernel still counts in its model's end-to-end sum below
    inside = network_rows(op_rows)
    efficiency, bandwidth, kernel_dispatch = fit_kernels(inside.reset_index(drop=True), rates)
    unit = make_unit("cpu", rates, efficiency, bandwidth, kernel_dispatch)
    ops = [row_op(r, i) for i, r in enumerate(op_rows.to_dict("records"))]
    predicted = predict(ops, unit)
    kept = op_rows.index.isin(inside.index)
    per_model = pd.Series(predicted).groupby(op_rows["model"].to_numpy()).sum()
    counts = op_rows.groupby("model").size()
    result = FitResult(
        efficiency=efficiency,
        bandwidth_bps=bandwidth,
        kernel_dispatch_s=kernel_dispatch,
        overhead_s=overhead,
        profiler_s=profiler,
        runtime_scale=scale,
        rates=rates,
        op_stats={
            **_stats(predicted[kept], op_rows.loc[kept, "median_s"].to_numpy(float)),
            "memory_bound": sum(
                memory_time_s(op, unit) > compute_time_s(op, unit)
                for op, k in zip(ops, kept, strict=True)
                if k
            ),
        },
    )
    fitted_models = model_rows[model_rows["model"].isin(per_model.index)]
    if not fitted_models.empty:
        e2e = np.array([per_model[m] + counts[m] * overhead for m in fitted_models["model"]])
        stats = _stats(e2e, fitted_models["median_s"].to_numpy(float))
        result = dataclasses.replace(result, model_stats=stats)
    return result
