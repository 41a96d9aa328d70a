"""The memory hierarchy of the cost model (simulator.hardware.memory) by hand and by property.

The test unit: 1 core at 1 TFLOP/s fp32 (efficiency 1), no dispatch, DRAM 10 GB/s,
L1 64 KiB at 200 GB/s, L2 1 MiB at 100 GB/s. An FC 1024 -> 1024 in fp32 has
W = 1024 x 1024 x 4 = 4 194 304 B of weights, A = 4096 + 4096 = 8192 B of activations
and 2 x 1024 x 1024 = 2 097 152 FLOPs (2.097 us of compute).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.errors import SocsimError
from simulator.graph.model import Op
from simulator.hardware.cost import (
    barrier_time_s,
    compute_time_s,
    dram_traffic_bytes,
    memory_time_s,
    memory_traffic,
    op_time_parts_s,
    op_time_s,
)
from simulator.hardware.memory import DRAM, CacheLevel
from simulator.hardware.units import ComputeUnit, Node

KIB, MIB = 1024, 1024 * 1024
L1 = CacheLevel("l1", 64 * KIB, 200e9)
L2 = CacheLevel("l2", 1 * MIB, 100e9)


def unit(caches=(L1, L2), **changes) -> ComputeUnit:
    fields = {
        "name": "cpu",
        "kind": "cpu",
        "peak_flops": {"fp32": 1e12},
        "memory_bandwidth_bytes_per_s": 10e9,
        "caches": caches,
    }
    return ComputeUnit(**{**fields, **changes})


def fc(n: int, name: str = "fc") -> Op:
    return Op(name, "fc", flops=2 * n * n, macs=n * n, params=n * n, input_elems=n, output_elems=n)


def traffic(op: Op, u: ComputeUnit) -> dict[str, float]:
    return {t.level: t.nbytes for t in memory_traffic(op, u)}


def test_fc_exceeding_the_llc_streams_its_weights_from_dram():
    op, u = fc(1024), unit()
    assert traffic(op, u) == {"l1": 8192, "l2": 0, DRAM: 4_194_304}
    assert dram_traffic_bytes(op, u) == 4_194_304
    # DRAM-bound: the weights over the DRAM rate; the activations' 8192 B at L1 take 41 ns
    assert op_time_s(op, u) == pytest.approx(4_194_304 / 10e9, rel=1e-12)  # 419.43 us
    assert compute_time_s(op, u) == pytest.approx(2.097152e-6)


def test_the_same_fc_fitting_in_l2_runs_at_l2_bandwidth():
    big_l2 = CacheLevel("l2", 8 * MIB, 100e9)  # A + W = 4 202 496 B <= 8 MiB
    op, u = fc(1024), unit(caches=(L1, big_l2))
    assert traffic(op, u) == {"l1": 8192, "l2": 4_194_304, DRAM: 0}
    assert dram_traffic_bytes(op, u) == 0
    assert op_time_s(op, u) == pytest.approx(4_194_304 / 100e9, rel=1e-12)  # 41.94 us


def test_a_small_fc_keeps_weights_and_activations_in_the_caches():
    op, u = fc(256), unit()  # W = 262 144 B, A = 2048 B: A in L1, A + W in L2
    assert traffic(op, u) == {"l1": 2048, "l2": 262_144, DRAM: 0}
    assert memory_time_s(op, u) == pytest.approx(262_144 / 100e9, rel=1e-12)  # 2.62 us


def elementwise(elems: int) -> Op:
    return Op("add", "elementwise", flops=elems, input_elems=elems, output_elems=elems)


def test_activations_that_fit_come_from_the_innermost_level_that_holds_them():
    op = elementwise(4096)  # 16 KiB in + 16 KiB out = 32 KiB <= L1
    assert traffic(op, unit()) == {"l1": 32_768, "l2": 0, DRAM: 0}
    assert memory_time_s(op, unit()) == pytest.approx(32_768 / 200e9, rel=1e-12)  # 164 ns
    op = elementwise(65_536)  # 256 KiB + 256 KiB = 512 KiB: spills L1, fits L2
    assert traffic(op, unit()) == {"l1": 0, "l2": 524_288, DRAM: 0}
    assert memory_time_s(op, unit()) == pytest.approx(524_288 / 100e9, rel=1e-12)


def test_activations_that_spill_the_last_level_stream_from_dram():
    op = elementwise(1 << 20)  # 4 MiB in + 4 MiB out
    assert traffic(op, unit()) == {"l1": 0, "l2": 0, DRAM: 8 * MIB}
    assert op_time_s(op, unit()) == pytest.approx(8 * MIB / 10e9, rel=1e-12)  # 838.86 us


def test_weights_need_room_beside_the_activations():
    # A = 512 KiB fits L2; W = 768 KiB fits L2 alone, but A + W = 1.25 MiB does not
    op = Op("c", "conv", flops=1e6, params=196_608, input_elems=65_536, output_elems=65_536)
    assert traffic(op, unit()) == {"l1": 0, "l2": 524_288, DRAM: 786_432}
    assert memory_time_s(op, unit()) == pytest.approx(786_432 / 10e9, rel=1e-12)


def test_a_node_shared_level_is_seen_by_every_unit_after_its_own():
    slc = CacheLevel("slc", 8 * MIB, 50e9)
    node = Node("phone", "device", (unit(caches=(L1,)), unit(caches=(), name="gpu")), caches=(slc,))
    cpu, gpu = node.units
    assert [c.name for c in cpu.caches] == ["l1", "slc"] and [c.name for c in gpu.caches] == ["slc"]
    assert cpu.caches[-1].shared and not cpu.caches[0].shared
    op = fc(1024)  # A + W = 4.2 MB <= 8 MiB: weights from the SLC, nothing from DRAM
    assert traffic(op, cpu) == {"l1": 8192, "slc": 4_194_304, DRAM: 0}
    assert traffic(op, gpu) == {"slc": 4_202_496, DRAM: 0}
    assert op_time_s(op, cpu) == pytest.approx(4_194_304 / 50e9, rel=1e-12)  # 83.89 us
    assert dram_traffic_bytes(op, gpu) == 0
    again = Node("phone", "device", node.units, caches=node.caches)  # resolving is idempotent
    assert again.units == node.units


def test_a_unit_sees_a_shared_level_through_its_own_and_skips_one_no_larger():
    slc = CacheLevel("slc", 8 * MIB, 500e9)  # faster than the cpu's L2: seen at 100 GB/s
    big = unit(caches=(L1, CacheLevel("l2", 16 * MIB, 100e9)), name="big")
    node = Node("phone", "device", (unit(), big), caches=(slc,))
    cpu, big = node.units
    assert [(c.name, c.bandwidth_bytes_per_s) for c in cpu.caches] == [
        ("l1", 200e9),
        ("l2", 100e9),
        ("slc", 100e9),
    ]
    assert [c.name for c in big.caches] == ["l1", "l2"]  # 8 MiB behind 16 MiB adds nothing
    op = fc(1024)
    assert traffic(op, cpu) == {"l1": 8192, "l2": 0, "slc": 4_194_304, DRAM: 0}
    assert op_time_s(op, cpu) == pytest.approx(4_194_304 / 100e9, rel=1e-12)


def test_node_levels_out_of_order_are_refused():
    with pytest.raises(SocsimError, match=r"node 'phone'.*must be larger"):
        Node("phone", "device", (unit(),), caches=(CacheLevel("a", MIB, 1e9), L1))


def test_dvfs_parts_carry_the_hierarchy_memory_time():
    op, u = fc(1024), unit(dispatch_s=5e-6)
    fixed, compute, memory = op_time_parts_s(op, u)
    assert (fixed, memory) == (5e-6, pytest.approx(4_194_304 / 10e9, rel=1e-12))
    assert fixed + max(compute, memory) == op_time_s(op, u)


def test_pruned_weights_streamed_dense_by_a_dense_kernel():
    pruned = dataclasses.replace(fc(1024), attrs={"sparsity": 0.9})
    assert dram_traffic_bytes(pruned, unit()) == 4_194_304  # dense expansion, as without caches
    # a sparse kernel reads them compressed: 550 504 B, which now fit in L2 beside A
    assert pruned.weight_bytes == 550_504
    assert traffic(pruned, unit(sparse_efficiency=1.0)) == {"l1": 8192, "l2": 550_504, DRAM: 0}


@pytest.mark.parametrize(
    ("caches", "dram", "match"),
    [
        ((L2, L1), 10e9, "must be larger than 'l2'"),
        ((L1, CacheLevel("l2", MIB, 300e9)), 10e9, "must not be faster than 'l1'"),
        ((L1, L2), 150e9, "must not be slower than DRAM"),
        ((L1, L2), float("inf"), "finite DRAM rate"),
        ((L1, CacheLevel("l1", MIB, 1e9)), 1e9, "unique"),
    ],
)
def test_invalid_hierarchies_are_refused(caches, dram, match):
    with pytest.raises(SocsimError, match=match):
        unit(caches=caches, memory_bandwidth_bytes_per_s=dram)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_a_level_needs_a_finite_positive_size_and_bandwidth(bad):
    with pytest.raises(SocsimError, match="finite and > 0"):
        CacheLevel("l1", bad, 1e9)
    with pytest.raises(SocsimError, match="finite and > 0"):
        CacheLevel("l1", 1024, bad)
    with pytest.raises(SocsimError, match="other than 'dram'"):
        CacheLevel(DRAM, 1024, 1e9)


# --- properties ---------------------------------------------------------------------

ops = st.builds(
    lambda kind, flops, params, i, o, sparsity: Op(
        "op",
        kind,
        flops=flops,
        params=params,
        input_elems=i,
        output_elems=o,
        attrs={"sparsity": sparsity} if sparsity else {},
    ),
    st.sampled_from(("conv", "fc", "elementwise", "matmul")),
    st.floats(0, 1e10),
    st.integers(0, 1 << 24),
    st.integers(0, 1 << 22),
    st.integers(0, 1 << 22),
    st.sampled_from((0.0, 0.5)),
)


@st.composite
def hierarchies(draw, max_levels: int = 4):
    """(levels, DRAM rate): sizes strictly growing, rates non-increasing down to DRAM."""
    n = draw(st.integers(0, max_levels))
    sizes = sorted(draw(st.lists(st.integers(1, 1 << 28), min_size=n, max_size=n, unique=True)))
    dram = draw(st.floats(1e8, 1e11))
    rates = sorted(draw(st.lists(st.floats(1.0, 100.0), min_size=n, max_size=n)), reverse=True)
    return tuple(
        CacheLevel(f"l{i}", size, dram * rate)
        for i, (size, rate) in enumerate(zip(sizes, rates, strict=True))
    ), dram


@given(ops, hierarchies(max_levels=0), st.floats(0, 1e-4), st.integers(1, 8))
def test_without_caches_the_time_is_todays_roofline_exactly(op, hierarchy, dispatch_s, cores):
    _, dram = hierarchy
    u = unit(caches=(), memory_bandwidth_bytes_per_s=dram, dispatch_s=dispatch_s, cores=cores)
    weights = op.dense_weight_bytes if op.sparsity else op.weight_bytes
    nbytes = float(op.bytes_moved) + (weights - op.weight_bytes)
    expected = dispatch_s + barrier_time_s(u) + max(compute_time_s(op, u), nbytes / dram)
    assert op_time_s(op, u) == expected
    assert dram_traffic_bytes(op, u) == nbytes


@given(ops, hierarchies())
def test_traffic_is_conserved_and_dram_bounds_the_memory_time(op, hierarchy):
    levels, dram = hierarchy
    u = unit(caches=levels, memory_bandwidth_bytes_per_s=dram)
    served = memory_traffic(op, u)
    weights = op.dense_weight_bytes if op.sparsity else op.weight_bytes
    assert sum(t.nbytes for t in served) == op.input_bytes + op.output_bytes + weights
    assert served[-1].level == DRAM and served[-1].nbytes == dram_traffic_bytes(op, u)
    assert memory_time_s(op, u) >= dram_traffic_bytes(op, u) / dram


@given(ops, hierarchies(), st.data())
def test_adding_a_cache_level_never_makes_an_op_slower(op, hierarchy, data):
    levels, dram = hierarchy
    at = data.draw(st.integers(0, len(levels)))
    lo_size = levels[at - 1].size_bytes if at else 0
    hi_size = levels[at].size_bytes if at < len(levels) else 1 << 30
    if hi_size - lo_size < 2:
        return
    size = data.draw(st.integers(lo_size + 1, hi_size - 1))
    slowest = levels[at - 1].bandwidth_bytes_per_s if at else 1e13
    fastest = levels[at].bandwidth_bytes_per_s if at < len(levels) else dram
    rate = data.draw(st.floats(fastest, slowest))
    more = (*levels[:at], CacheLevel("new", size, rate), *levels[at:])
    before = unit(caches=levels, memory_bandwidth_bytes_per_s=dram)
    after = unit(caches=more, memory_bandwidth_bytes_per_s=dram)
    assert memory_time_s(op, after) <= memory_time_s(op, before)
    assert op_time_s(op, after) <= op_time_s(op, before)
    assert dram_traffic_bytes(op, after) <= dram_traffic_bytes(op, before)
