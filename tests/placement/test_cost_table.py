"""The vectorised (op, unit) cost table and the oracle's memory against the scalar model.

``op_time_rows`` must give the floats of :func:`simulator.hardware.cost.op_time_s` bit
for bit (compared with ``float.hex``), whichever path costs an op; the oracle must answer
the same for an op whichever graph or call order asks first.
"""

from __future__ import annotations

import math
import random

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from simulator.cost_table import op_time_rows
from simulator.errors import PlacementError, SocsimError
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.hardware.cost import op_energy_j, op_time_s, unsupported_reason
from simulator.hardware.memory import CacheLevel
from simulator.hardware.units import ComputeUnit, Node
from simulator.platform import CostOracle, Platform


def hexes(row) -> dict:
    return {u: None if t is None else t.hex() for u, t in row.items()}


UNITS = [
    (
        "n.big",
        ComputeUnit(
            "big",
            "cpu",
            {"fp32": 3e10},
            {"default": 0.5, "fc": 0.7},
            memory_bandwidth_bytes_per_s=3e10,
            dispatch_s=1e-5,
            cores=4,
            barrier_s=2e-6,
        ),
    ),
    (
        "n.two",
        ComputeUnit(
            "two",
            "cpu",
            {"fp32": 1e10, "int8": 4e10},
            {"default": 0.6},
            memory_bandwidth_bytes_per_s=1.7e10,
            cores=4,
            cores_per_op=2,
            sparse_efficiency=0.8,
        ),
    ),
    (
        "n.gpu",
        ComputeUnit(
            "gpu",
            "gpu",
            {"fp32": 5e11, "fp16": 1e12},
            {"default": 0.3},
            dispatch_s=3e-5,
            supports=frozenset({"conv", "fc", "matmul"}),
            fused_kernels=False,
        ),
    ),
    (
        "n.npu",
        ComputeUnit(
            "npu", "npu", {"int8": 4e12}, {"default": 0.9}, memory_bandwidth_bytes_per_s=2.5e10
        ),
    ),
    (
        "n.cache",
        ComputeUnit(
            "cache",
            "cpu",
            {"fp32": 2e10},
            {"default": 0.5},
            memory_bandwidth_bytes_per_s=1e10,
            caches=(CacheLevel("l2", 2e5, 8e10),),
        ),
    ),
]

#: A reshape's view attributes (the ONNX importer's and GraphBuilder's): a view moves no
#: bytes, a copy (no attribute) does; both paths must agree either way.
VIEW_ATTRS = st.sampled_from([{}, {"view": 1}, {"flatten": 1, "view": 1}, {"flatten": 1}])

ops = st.builds(
    lambda i, kind, flops, p, dtype, elems, params, sparsity, fused, tabled, view: Op(
        f"op{i}",
        kind,
        flops=flops,
        params=params,
        input_elems=elems[0],
        output_elems=elems[1],
        dtype=dtype,
        parallel_fraction=p,
        time_s={"big": tabled} if tabled is not None else {},
        attrs={
            **({"sparsity": sparsity, "out_channels": 8} if sparsity else {}),
            **({"fused": (f"op{i}", "relu")} if fused else {}),
            **view,
        },
    ),
    st.integers(0, 10**6),
    st.sampled_from(["conv", "fc", "pool", "matmul", "elementwise", "reshape"]),
    st.one_of(st.just(0.0), st.floats(1.0, 1e10)),
    st.one_of(st.just(1.0), st.just(0.0), st.floats(0.0, 1.0)),
    st.sampled_from(["fp32", "fp16", "int8"]),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    st.integers(0, 10**6),
    st.one_of(st.just(0.0), st.floats(0.01, 0.95)),
    st.booleans(),
    st.one_of(st.none(), st.floats(1e-6, 1.0)),
    VIEW_ATTRS,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(ops, min_size=1, max_size=30))
def test_rows_equal_the_scalar_model_bit_for_bit(some_ops):
    rows = op_time_rows(some_ops, UNITS)
    for op, row in zip(some_ops, rows, strict=True):
        assert list(row) == [uid for uid, _ in UNITS]
        expected = {
            uid: op_time_s(op, unit, uid) if unsupported_reason(op, unit, uid) is None else None
            for uid, unit in UNITS
        }
        assert hexes(row) == hexes(expected), op


def test_rows_equal_the_scalar_model_on_arbitrary_floats():
    """Hypothesis favours round values, where the order of float operations seldom
    shows; uniformly drawn ones round differently under any reordering."""
    rng = random.Random(7)
    some_ops = [
        Op(
            f"op{i}",
            rng.choice(["conv", "fc", "matmul", "reshape"]),
            flops=10 ** rng.uniform(0, 10),  # compute- and memory-bound ones
            params=rng.randrange(10**6),
            input_elems=rng.randrange(10**6),
            output_elems=rng.randrange(10**6),
            dtype=rng.choice(["fp32", "fp16", "int8"]),
            parallel_fraction=rng.random(),
            attrs={"sparsity": rng.uniform(0.01, 0.9), "out_channels": 4}
            if i % 3 == 0
            else {"view": 1}
            if i % 3 == 1
            else {},
        )
        for i in range(600)
    ]
    rows = op_time_rows(some_ops, UNITS)
    for op, row in zip(some_ops, rows, strict=True):
        for uid, unit in UNITS:
            if row[uid] is not None:
                assert row[uid].hex() == op_time_s(op, unit, uid).hex(), (op, uid)


def two_graphs_platform():
    platform = Platform([Node("n", "device", tuple(unit for _, unit in UNITS))])
    shared = Op("shared", "conv", flops=2e8, input_elems=1000, output_elems=500, params=300)
    a = ModelGraph(
        "a",
        [shared, Op("a1", "fc", flops=4e6, input_elems=500, output_elems=10)],
        [Edge("shared", "a1", 2000)],
    )
    b = ModelGraph(
        "b",
        [Op("a1", "pool", flops=1e3, input_elems=500, output_elems=20), shared],
        [Edge("a1", "shared", 80)],
    )
    return platform, a, b


def test_one_oracle_serves_several_graphs_with_same_named_ops():
    platform, a, b = two_graphs_platform()
    oracle = CostOracle(platform)
    rows_a = oracle.op_time_rows(list(a))
    rows_b = oracle.op_time_rows(list(b))
    fresh = CostOracle(platform)
    for graph, rows in ((a, rows_a), (b, rows_b)):
        for op, row in zip(graph, rows, strict=True):
            for uid, unit in UNITS:
                if row[uid] is None:
                    assert not fresh.supports(op, uid)
                    with pytest.raises(PlacementError):
                        oracle.op_time_s(op, uid)
                    continue
                assert oracle.op_time_s(op, uid).hex() == fresh.op_time_s(op, uid).hex()
                assert oracle.op_energy_j(op, uid) == op_energy_j(op, unit, uid)
    # "a1" names a pool in one graph and an fc in the other: costed apart
    assert rows_a[1]["n.big"] != rows_b[0]["n.big"]


def test_scalar_answers_first_then_rows_keep_declaration_order():
    platform, a, _ = two_graphs_platform()
    oracle = CostOracle(platform)
    op = a.op("a1")
    for uid, _unit in reversed(UNITS):  # partial memory, in reverse order
        if oracle.supports(op, uid):
            oracle.op_time_s(op, uid)
    (row,) = oracle.op_time_rows([op])
    assert list(row) == [uid for uid, _ in UNITS]
    assert hexes(row) == hexes(CostOracle(platform).op_time_rows([op])[0])


def test_unknown_unit_is_an_error_not_a_cached_none():
    platform, a, _ = two_graphs_platform()
    oracle = CostOracle(platform)
    oracle.op_time_rows(list(a))
    with pytest.raises(SocsimError, match=r"no unit 'n\.tpu'"):
        oracle.op_time_s(a.op("a1"), "n.tpu")


def test_memory_is_bounded(monkeypatch):
    import simulator.platform as platform_module

    monkeypatch.setattr(platform_module, "MEMO_OPS", 3)
    platform, a, b = two_graphs_platform()
    oracle = CostOracle(platform)
    rows = oracle.op_time_rows(list(a) + list(b))  # more ops than it keeps
    assert all(math.isfinite(row["n.big"]) for row in rows)
    assert len(oracle._rows) <= 3


def test_derived_quantities_are_remembered_per_op_object_and_unit(monkeypatch):
    import simulator.platform as platform_module
    from simulator.hardware.cost import cost_model, op_time_parts_s

    platform, a, b = two_graphs_platform()
    oracle = CostOracle(platform)
    calls = []

    def counted(value):
        calls.append(value)
        return value

    op = a.op("a1")
    assert oracle.derived(op, "x", "n.big", lambda: counted(1)) == 1
    assert oracle.derived(op, "x", "n.big", lambda: counted(2)) == 1  # remembered
    assert oracle.derived(op, "x", "n.two", lambda: counted(3)) == 3  # another unit
    assert oracle.derived(op, "y", "n.big", lambda: counted(4)) == 4  # another quantity
    # "a1" of the other graph is another op object: never the first one's answer
    assert oracle.derived(b.op("a1"), "x", "n.big", lambda: counted(5)) == 5
    assert calls == [1, 3, 4, 5]
    with pytest.raises(ZeroDivisionError):  # an exception is not remembered
        oracle.derived(op, "z", "n.big", lambda: 1 / 0)
    assert oracle.derived(op, "z", "n.big", lambda: counted(6)) == 6
    # the oracle's parts and cost model are the scalar functions' (bit for bit)
    for uid, unit in UNITS:
        if oracle.supports(op, uid):
            assert oracle.op_time_parts_s(op, uid) == op_time_parts_s(op, unit, uid)
            assert oracle.cost_model(op, uid) == cost_model(op, unit, uid)
    monkeypatch.setattr(platform_module, "MEMO_OPS", 2)
    for other in list(a) + list(b):
        oracle.derived(other, "x", "n.big", lambda: 0)
    assert len(oracle._derived) <= 2
