"""The operator cost model (simulator.hardware.cost) against hand-computed numbers."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.graph.model import OP_KINDS, Op
from simulator.hardware.cost import (
    amdahl_speedup,
    compute_time_s,
    explicit_time_s,
    memory_time_s,
    op_energy_j,
    op_time_s,
    unsupported_reason,
)
from simulator.hardware.units import ComputeUnit

EXACT = 1e-12


def cpu(**changes) -> ComputeUnit:
    """4 cores x 10 GFLOP/s fp32, conv at 80 %, the rest at 50 %, 1 GB/s, 5 us dispatch."""
    fields = {
        "name": "cpu",
        "kind": "cpu",
        "peak_flops": {"fp32": 10e9},
        "efficiency": {"default": 0.5, "conv": 0.8},
        "memory_bandwidth_bytes_per_s": 1e9,
        "dispatch_s": 5e-6,
        "cores": 4,
        "idle_w": 0.25,
        "active_w": 2.0,
    }
    fields.update(changes)
    return ComputeUnit(**fields)


# -- Amdahl ---------------------------------------------------------------------------
def test_amdahl_hand_value():
    # 1 / ((1 - 0.9) + 0.9 / 4) = 1 / 0.325 = 40 / 13
    assert amdahl_speedup(0.9, 4) == pytest.approx(1 / (0.1 + 0.225), rel=EXACT)
    assert amdahl_speedup(0.9, 4) == pytest.approx(40 / 13, rel=EXACT)
    assert amdahl_speedup(0.5, 2) == pytest.approx(4 / 3, rel=EXACT)


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 7, 8, 49, 64, 1000])
def test_amdahl_fully_parallel_is_linear(cores):
    assert amdahl_speedup(1.0, cores) == pytest.approx(cores, rel=EXACT)


@pytest.mark.parametrize("cores", [1, 2, 8, 1000])
def test_amdahl_serial_is_one(cores):
    assert amdahl_speedup(0.0, cores) == 1.0


def test_amdahl_one_core_is_one():
    for p in (0.0, 0.3, 0.9, 1.0):
        assert amdahl_speedup(p, 1) == pytest.approx(1.0, rel=EXACT)


@pytest.mark.parametrize("p", [0.5, 0.9, 0.99])
def test_amdahl_limit_is_one_over_serial_fraction(p):
    limit = 1 / (1 - p)
    assert amdahl_speedup(p, 10**9) == pytest.approx(limit, rel=1e-6)
    assert amdahl_speedup(p, 10**9) <= limit
    assert amdahl_speedup(p, 1000) < limit


def test_amdahl_monotone_in_cores():
    values = [amdahl_speedup(0.9, n) for n in range(1, 200)]
    assert all(b >= a for a, b in itertools.pairwise(values))
    assert values[-1] > values[0]


@pytest.mark.parametrize(("p", "n"), [(-0.1, 4), (1.5, 4), (math.nan, 4), (0.5, 0), (0.5, -2)])
def test_amdahl_rejects_bad_arguments(p, n):
    with pytest.raises(ValueError):
        amdahl_speedup(p, n)


@given(st.floats(0, 1), st.integers(1, 10_000))
def test_amdahl_between_one_and_n(p, n):
    s = amdahl_speedup(p, n)
    assert 1.0 <= s <= n


@given(st.floats(0, 1), st.integers(1, 1000))
def test_amdahl_non_decreasing_in_n(p, n):
    assert amdahl_speedup(p, n + 1) >= amdahl_speedup(p, n)


# -- roofline -------------------------------------------------------------------------
def test_compute_bound_fully_parallel_conv():
    # rate = 10e9 x 0.8 x S(1, 4) = 32e9 FLOP/s; 3.2e9 FLOPs -> 0.1 s.
    # bytes = (1000 + 1000) x 4 = 8000 B -> 8 us at 1 GB/s: compute-bound.
    op = Op("c", "conv", flops=3.2e9, input_elems=1000, output_elems=1000, parallel_fraction=1.0)
    unit = cpu()
    assert compute_time_s(op, unit) == pytest.approx(0.1, rel=EXACT)
    assert memory_time_s(op, unit) == pytest.approx(8e-6, rel=EXACT)
    assert op_time_s(op, unit, "phone.cpu") == pytest.approx(5e-6 + 0.1, rel=EXACT)


def test_compute_bound_with_amdahl():
    # rate = 10e9 x 0.8 x 40/13 FLOP/s; 8e9 FLOPs -> 13/40 = 0.325 s.
    op = Op("c", "conv", flops=8e9, parallel_fraction=0.9)
    assert op_time_s(op, cpu()) == pytest.approx(5e-6 + 0.325, rel=EXACT)


def test_memory_bound_elementwise():
    # bytes = (1e6 + 1e6) x 4 = 8e6 B -> 8 ms at 1 GB/s;
    # compute = 1e6 / (10e9 x 0.5 x 4) = 50 us (elementwise uses the default efficiency).
    op = Op("add", "elementwise", flops=1e6, input_elems=10**6, output_elems=10**6)
    unit = cpu()
    assert compute_time_s(op, unit) == pytest.approx(5e-5, rel=EXACT)
    assert memory_time_s(op, unit) == pytest.approx(8e-3, rel=EXACT)
    assert op_time_s(op, unit) == pytest.approx(5e-6 + 8e-3, rel=EXACT)


def test_memory_traffic_counts_weights_in_their_dtype():
    # fp16 fc: weights 1e6 x 2 B, input 1000 x 2, output 1000 x 2 -> 2_004_000 B -> 2.004 ms;
    # compute = 2e6 / (40e9 x 0.5 x 4) = 25 us.
    op = Op(
        "fc",
        "fc",
        flops=2e6,
        macs=1e6,
        params=10**6,
        input_elems=1000,
        output_elems=1000,
        dtype="fp16",
    )
    unit = cpu(peak_flops={"fp32": 10e9, "fp16": 40e9})
    assert op.bytes_moved == 2_004_000
    assert compute_time_s(op, unit) == pytest.approx(2.5e-5, rel=EXACT)
    assert op_time_s(op, unit) == pytest.approx(5e-6 + 2.004e-3, rel=EXACT)


def test_zero_flops_costs_dispatch_plus_memory():
    op = Op("r", "reshape", input_elems=250, output_elems=250)
    assert compute_time_s(op, cpu()) == 0.0
    assert op_time_s(op, cpu()) == pytest.approx(5e-6 + 2000 / 1e9, rel=EXACT)


def test_infinite_bandwidth_is_never_memory_bound():
    unit = cpu(memory_bandwidth_bytes_per_s=math.inf, dispatch_s=0.0, cores=1)
    op = Op("add", "elementwise", flops=1e6, input_elems=10**9, output_elems=10**9)
    assert memory_time_s(op, unit) == 0.0
    assert op_time_s(op, unit) == pytest.approx(1e6 / (10e9 * 0.5), rel=EXACT)


def test_empty_op_costs_dispatch_only():
    assert op_time_s(Op("nop", "reshape"), cpu()) == 5e-6


def test_efficiency_by_kind_and_default():
    unit = cpu()
    assert unit.efficiency_for("conv") == 0.8
    for kind in OP_KINDS:
        if kind != "conv":
            assert unit.efficiency_for(kind) == 0.5


# -- explicit time tables -------------------------------------------------------------
def test_explicit_time_by_qualified_id_and_bare_name():
    op = Op("x", "conv", time_s={"phone.cpu": 0.001, "cpu": 0.002, "gpu": 0.003})
    unit = cpu()
    gpu = ComputeUnit("gpu", "gpu", peak_flops={"fp32": 1e12})
    assert op_time_s(op, unit, "phone.cpu") == 0.001  # qualified id wins, no dispatch
    assert op_time_s(op, unit, "cloud.cpu") == 0.002  # bare name of a cpu on another node
    assert op_time_s(op, gpu, "phone.gpu") == 0.003
    assert explicit_time_s(op, unit, "phone.cpu") == 0.001
    assert explicit_time_s(op, unit, "edge.cpu") == 0.002


def test_explicit_time_overrides_the_roofline():
    op = Op("x", "conv", flops=3.2e9, input_elems=10**9, time_s={"cpu": 0.25})
    assert op_time_s(op, cpu(), "phone.cpu") == 0.25


def test_explicit_table_limits_the_units():
    op = Op("x", "conv", time_s={"phone.gpu": 0.003})
    reason = unsupported_reason(op, cpu(), "phone.cpu")
    assert reason is not None
    assert "explicit times only for ['phone.gpu']" in reason
    with pytest.raises(ValueError, match=r"op 'x' cannot run on 'phone.cpu'.*explicit times"):
        op_time_s(op, cpu(), "phone.cpu")


def test_explicit_table_wins_over_kind_and_dtype_support():
    # A scheduling-paper table is the truth for the units it names.
    unit = cpu(supports=frozenset({"conv"}), peak_flops={"fp32": 1e9})
    op = Op("x", "attention", dtype="int8", time_s={"cpu": 0.5})
    assert unsupported_reason(op, unit, "phone.cpu") is None
    assert op_time_s(op, unit, "phone.cpu") == 0.5


# -- unsupported ops ------------------------------------------------------------------
def test_unsupported_kind():
    unit = cpu(supports=frozenset({"conv", "pool"}))
    op = Op("f", "fc", flops=1.0)
    assert unsupported_reason(op, unit, "phone.cpu") == "unit does not support op kind 'fc'"
    assert unsupported_reason(Op("c", "conv", flops=1.0), unit, "phone.cpu") is None
    with pytest.raises(ValueError, match=r"op 'f' cannot run on 'phone\.cpu'"):
        op_time_s(op, unit, "phone.cpu")
    with pytest.raises(ValueError, match="op 'f' cannot run on 'cpu'"):
        op_time_s(op, unit)  # no id: the unit's own name


def test_unsupported_dtype():
    op = Op("q", "conv", flops=1.0, dtype="int8")
    assert unsupported_reason(op, cpu(), "u") == "unit has no int8 throughput (has: fp32)"
    bare = ComputeUnit("bare", "npu")
    assert unsupported_reason(op, bare, "u") == "unit has no int8 throughput (has: none)"
    with pytest.raises(ValueError, match="int8"):
        op_energy_j(op, cpu(), "u")


def test_supports_none_runs_every_kind():
    unit = cpu()
    for kind in OP_KINDS:
        assert unsupported_reason(Op("o", kind, flops=1.0), unit, "u") is None


# -- energy ---------------------------------------------------------------------------
def test_energy_is_active_power_times_time():
    op = Op("c", "conv", flops=3.2e9, parallel_fraction=1.0)
    unit = cpu()
    assert op_energy_j(op, unit) == 2.0 * op_time_s(op, unit)
    assert op_energy_j(op, unit) == pytest.approx(2.0 * (5e-6 + 0.1), rel=EXACT)


def test_energy_of_tabled_op():
    op = Op("x", "custom", time_s={"cpu": 0.25})
    assert op_energy_j(op, cpu(), "phone.cpu") == 0.5


def test_energy_of_zero_power_unit_is_zero():
    assert op_energy_j(Op("c", "conv", flops=1e9), cpu(active_w=0.0)) == 0.0


# -- properties -----------------------------------------------------------------------
_flops = st.floats(0, 1e12, allow_nan=False)
_elems = st.integers(0, 10**9)
_fraction = st.floats(0, 1)
_kind = st.sampled_from(("conv", "fc", "elementwise", "pool"))


def _unit(cores: int, bandwidth: float, dispatch: float) -> ComputeUnit:
    return cpu(cores=cores, memory_bandwidth_bytes_per_s=bandwidth, dispatch_s=dispatch)


_units = st.builds(
    _unit,
    st.integers(1, 128),
    st.one_of(st.just(math.inf), st.floats(1e6, 1e12)),
    st.floats(0, 1e-3),
)


@given(_units, _kind, _flops, _flops, _elems, _fraction)
def test_time_non_decreasing_in_flops(unit, kind, f1, f2, elems, p):
    lo, hi = sorted((f1, f2))
    a = Op("o", kind, flops=lo, input_elems=elems, parallel_fraction=p)
    b = Op("o", kind, flops=hi, input_elems=elems, parallel_fraction=p)
    assert op_time_s(a, unit) <= op_time_s(b, unit)


@given(_units, _kind, _flops, _elems, _elems, _fraction)
def test_time_non_decreasing_in_bytes(unit, kind, flops, e1, e2, p):
    lo, hi = sorted((e1, e2))
    a = Op("o", kind, flops=flops, input_elems=lo, output_elems=lo, parallel_fraction=p)
    b = Op("o", kind, flops=flops, input_elems=hi, output_elems=hi, parallel_fraction=p)
    assert op_time_s(a, unit) <= op_time_s(b, unit)


@given(_kind, _flops, _elems, _fraction, st.integers(1, 128), st.integers(1, 128))
def test_time_non_increasing_in_cores(kind, flops, elems, p, n1, n2):
    few, many = sorted((n1, n2))
    op = Op("o", kind, flops=flops, input_elems=elems, parallel_fraction=p)
    assert op_time_s(op, _unit(many, 1e9, 1e-6)) <= op_time_s(op, _unit(few, 1e9, 1e-6))


@given(_units, _kind, _flops, _elems, _fraction)
def test_time_at_least_dispatch_and_each_bound(unit, kind, flops, elems, p):
    op = Op("o", kind, flops=flops, input_elems=elems, parallel_fraction=p)
    t = op_time_s(op, unit)
    assert t >= unit.dispatch_s
    assert t >= compute_time_s(op, unit)
    assert t >= memory_time_s(op, unit)
    assert op_energy_j(op, unit) == unit.active_w * t
