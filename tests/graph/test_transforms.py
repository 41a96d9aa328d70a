"""split_op / split_ops: arithmetic by hand, rewiring, and invariants (hypothesis)."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ModelError
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.graph.transforms import apportion, split_op, split_ops
from simulator.graph.zoo import build_zoo_model


def diamond() -> ModelGraph:
    """a -> b -> {c, d}; b is a conv with awkward sizes for rounding."""
    ops = [
        Op("a", "conv", flops=100.0, macs=50.0, params=4, input_elems=9, output_elems=7),
        Op("b", "conv", flops=1000.0, macs=500.0, params=10, input_elems=7, output_elems=11),
        Op("c", "fc", flops=44.0, macs=22.0, params=22, input_elems=11, output_elems=2),
        Op("d", "activation", flops=11.0, input_elems=11, output_elems=11),
    ]
    edges = [
        Edge("a", "b", 28),
        Edge("b", "c", 44, comm_s=0.5),
        Edge("b", "d", 44),
    ]
    return ModelGraph("diamond", ops, edges)


def test_split_op_arithmetic_by_hand():
    g = split_op(diamond(), "b", [0.25, 0.75])
    p0, p1, merge = g.op("b#0"), g.op("b#1"), g.op("b#merge")
    # flops / macs scale by the ratio
    assert (p0.flops, p1.flops) == (250.0, 750.0)
    assert (p0.macs, p1.macs) == (125.0, 375.0)
    # 11 output elements: shares 2.75 / 8.25 -> floors 2 / 8, the 1 left goes to the
    # larger remainder (0.75 > 0.25): 3 / 8
    assert (p0.output_elems, p1.output_elems) == (3, 8)
    # 10 params: 2.5 / 7.5 -> floors 2 / 7, remainders tie at 0.5 -> the lower index: 3 / 7
    assert (p0.params, p1.params) == (3, 7)
    # channel split: each part reads the full input
    assert p0.input_elems == p1.input_elems == 7
    assert (p0.kind, p0.dtype, p0.parallel_fraction) == ("conv", "fp32", 1.0)
    assert merge.kind == "concat"
    assert merge.flops == merge.macs == merge.params == 0
    assert merge.input_elems == merge.output_elems == 11


def test_split_op_rewires_edges():
    g = split_op(diamond(), "b", [0.25, 0.75])
    edges = {(e.src, e.dst): e for e in g.edges()}
    assert set(edges) == {
        ("a", "b#0"),
        ("a", "b#1"),
        ("b#0", "b#merge"),
        ("b#1", "b#merge"),
        ("b#merge", "c"),
        ("b#merge", "d"),
    }
    assert edges["a", "b#0"].bytes == edges["a", "b#1"].bytes == 28  # full input each
    assert edges["b#0", "b#merge"].bytes == 3 * 4  # part output bytes (fp32)
    assert edges["b#1", "b#merge"].bytes == 8 * 4
    assert edges["b#merge", "c"] == Edge("b#merge", "c", 44, comm_s=0.5)  # original kept
    assert edges["b#merge", "d"].bytes == 44
    assert nx.is_directed_acyclic_graph(g.graph)
    # the parts and merge take b's place in declaration order
    assert g.order == ("a", "b#0", "b#1", "b#merge", "c", "d")


def test_split_preserves_totals_and_leaves_the_input_alone():
    original = diamond()
    g = split_op(original, "b", [0.2, 0.3, 0.5])
    assert g.total_flops == pytest.approx(original.total_flops, rel=1e-15)
    assert g.total_macs == pytest.approx(original.total_macs, rel=1e-15)
    assert g.total_params == original.total_params
    assert sum(g.op(f"b#{i}").output_elems for i in range(3)) == 11
    assert g.exit_ops() == original.exit_ops()
    assert g.name == original.name
    assert "b" in original and "b" not in g  # pure: the input graph is unchanged
    assert len(original) == 4


def test_rows_split_scales_input_and_keeps_weights():
    g = split_op(diamond(), "b", [0.5, 0.5], axis="rows")
    p0, p1 = g.op("b#0"), g.op("b#1")
    assert p0.params == p1.params == 10  # every band needs all the filters
    assert (p0.input_elems, p1.input_elems) == (4, 3)  # 3.5 / 3.5 -> tie to index 0
    assert (p0.output_elems, p1.output_elems) == (6, 5)
    assert g.edge("a", "b#0").bytes + g.edge("a", "b#1").bytes == 28
    assert g.edge("a", "b#0").bytes == 14
    with pytest.raises(ModelError, match="rows split needs a spatial op"):
        split_op(diamond(), "c", [0.5, 0.5], axis="rows")


def test_split_of_an_entry_op_and_of_consecutive_ops():
    original = diamond()
    g = split_ops(original, {"a": [0.5, 0.5], "b": [0.1, 0.9]})
    assert set(g.entry_ops()) == {"a#0", "a#1"}
    assert g.request_input_bytes == original.request_input_bytes  # each part reads all of it
    for i in range(2):
        assert g.edge("a#merge", f"b#{i}").bytes == 28
    assert g.edge("a#0", "a#merge").bytes == 4 * 4  # 7 elems: 3.5 / 3.5 -> 4 / 3
    assert g.total_params == original.total_params
    assert nx.is_directed_acyclic_graph(g.graph)


def test_custom_suffix():
    g = split_op(diamond(), "b", [0.5, 0.5], suffix="/")
    assert {"b/0", "b/1", "b/merge"} <= set(g.order)


@pytest.mark.parametrize(
    ("ratios", "message"),
    [
        ([], "at least one ratio"),
        ([0.5, 0.6], "sum to 1"),
        ([1.0, 0.0], "> 0"),
        ([1.5, -0.5], "> 0"),
        ([math.nan, 1.0], "> 0"),
    ],
)
def test_bad_ratios_are_model_errors(ratios, message):
    with pytest.raises(ModelError, match=message):
        split_op(diamond(), "b", ratios)


def test_other_errors():
    with pytest.raises(ModelError, match="no op named"):
        split_op(diamond(), "zzz", [1.0])
    with pytest.raises(ModelError, match="unknown axis"):
        split_op(diamond(), "b", [1.0], axis="depth")
    timed = ModelGraph("t", [Op("x", "conv", flops=1.0, time_s={"cpu": 1.0})], [])
    with pytest.raises(ModelError, match="explicit time table"):
        split_op(timed, "x", [0.5, 0.5])
    clash = ModelGraph("c", [Op("x", "conv", flops=2.0, output_elems=2), Op("x#merge", "conv")], [])
    with pytest.raises(ModelError, match="reuse existing op names"):
        split_op(clash, "x", [0.5, 0.5])


def test_apportion_examples():
    assert apportion(10, [0.25, 0.75]) == [3, 7]  # 2.5 / 7.5: tie -> lower index
    assert apportion(7, [1 / 3, 1 / 3, 1 / 3]) == [3, 2, 2]
    assert apportion(0, [0.5, 0.5]) == [0, 0]
    assert apportion(5, [1.0]) == [5]


ratio_lists = st.lists(st.floats(0.01, 1.0), min_size=1, max_size=6).map(
    lambda xs: [x / math.fsum(xs) for x in xs]
)


@given(total=st.integers(0, 10**12), ratios=ratio_lists)
def test_apportion_sums_exactly_and_stays_within_one(total, ratios):
    parts = apportion(total, ratios)
    assert sum(parts) == total
    for part, r in zip(parts, ratios, strict=True):
        assert abs(part - total * r) < 1 + 1e-9 * total  # float slack on total * r


@settings(max_examples=40, deadline=None)
@given(
    ratios=ratio_lists,
    axis=st.sampled_from(["channels", "rows"]),
    index=st.integers(0, 100),
)
def test_split_of_any_alexnet_conv_preserves_totals(ratios, axis, index):
    original = build_zoo_model("alexnet")
    convs = [op.name for op in original if op.kind == "conv"]
    name = convs[index % len(convs)]
    g = split_op(original, name, ratios, axis=axis)
    k = len(ratios)
    assert len(g) == len(original) + k
    assert g.total_flops == pytest.approx(original.total_flops, rel=1e-12)
    assert g.total_macs == pytest.approx(original.total_macs, rel=1e-12)
    op = original.op(name)
    parts = [g.op(f"{name}#{i}") for i in range(k)]
    assert sum(p.output_elems for p in parts) == op.output_elems
    if axis == "channels":
        assert g.total_params == original.total_params
        assert all(p.input_elems == op.input_elems for p in parts)
    else:
        assert all(p.params == op.params for p in parts)
        assert sum(p.input_elems for p in parts) == op.input_elems
    assert all(p.flops >= 2 * p.macs for p in parts)
    assert nx.is_directed_acyclic_graph(g.graph)
    for succ in original.successors(name):
        assert g.edge(f"{name}#merge", succ).bytes == original.edge(name, succ).bytes
