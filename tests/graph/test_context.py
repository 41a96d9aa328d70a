"""The context ModelGraph stamps on its ops: the network's weight bytes, each op's
input age (bytes touched since its oldest input was written) and input count, by hand
and as properties of random DAGs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.graph.context import FOOTPRINT_KEY, INPUT_AGE_KEY, INPUT_COUNT_KEY, input_ages
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.hardware.kernel_features import op_features


def op(name: str, kind: str = "activation", elems: int = 100, params: int = 0, **attrs) -> Op:
    # fp32: every element is 4 bytes
    return Op(name, kind, input_elems=elems, output_elems=elems, params=params, attrs=attrs)


def dense_block() -> ModelGraph:
    """x feeds a two-layer chain and, with the chain's end, a concat (DenseNet's
    pattern); a view sits in the chain."""
    ops = [
        op("x", elems=100),  # reads the request: 400 + 400 bytes
        op("a", "conv", elems=100, params=50),  # 400 in + 200 weights + 400 out
        op("v", "reshape", elems=100, view=True),  # a view touches nothing
        op("b", "activation", elems=100),  # 400 + 400
        Op("cat", "concat", input_elems=200, output_elems=200),  # 800 + 800
    ]
    edges = [Edge("x", "a", 400), Edge("a", "v", 400), Edge("v", "b", 400)]
    edges += [Edge("x", "cat", 400), Edge("b", "cat", 400)]
    return ModelGraph("block", ops, edges)


def test_input_age_by_hand():
    graph = dense_block()
    age = {o.name: o.attrs[INPUT_AGE_KEY] for o in graph}
    # x reads the request: everything the network touches (800 + 1000 + 0 + 800 + 1600)
    assert age["x"] == 4200
    # a, v and b read what was just written
    assert (age["a"], age["v"], age["b"]) == (0, 0, 0)
    # cat's oldest input is x's output: a (1000 bytes), v (none) and b (800) ran since
    assert age["cat"] == 1800
    assert op_features(graph.op("cat"))["input_age_bytes"] == 1800.0
    assert {o.attrs[FOOTPRINT_KEY] for o in graph} == {200}


def test_input_age_follows_the_run_order_not_the_declaration():
    # the same ops declared with b's branch first: the order ties by declaration only
    # among ops that are ready, so the ages are the same
    graph = dense_block()
    shuffled = ModelGraph("shuffled", list(reversed(list(graph))), list(graph.edges()))
    assert {o.name: o.attrs[INPUT_AGE_KEY] for o in shuffled} == {
        o.name: o.attrs[INPUT_AGE_KEY] for o in graph
    }


def test_input_count_by_hand():
    graph = dense_block()
    count = {o.name: o.attrs[INPUT_COUNT_KEY] for o in graph}
    # x reads only the request (1); the chain one op each; cat reads x and b
    assert count == {"x": 1, "a": 1, "v": 1, "b": 1, "cat": 2}
    assert op_features(graph.op("cat"))["inputs"] == 2.0


def test_an_op_outside_a_graph_has_no_input_age():
    bare = op("x")
    assert "input_age_bytes" not in op_features(bare)
    assert "inputs" not in op_features(bare)
    ModelGraph("one", [bare], [])
    assert INPUT_AGE_KEY not in bare.attrs  # the graph stamps a copy


@st.composite
def dags(draw):
    n = draw(st.integers(1, 12))
    ops = [op(f"o{i}", elems=draw(st.integers(0, 1000))) for i in range(n)]
    edges = [Edge(f"o{i}", f"o{j}", 4) for j in range(n) for i in range(j) if draw(st.booleans())]
    return ModelGraph("random", ops, edges)


@settings(max_examples=60, deadline=None)
@given(dags())
def test_input_age_properties(graph):
    total = sum(o.bytes_moved for o in graph)
    order = graph.order
    for position, name in enumerate(order):
        age = graph.op(name).attrs[INPUT_AGE_KEY]
        preds = graph.predecessors(name)
        assert 0 <= age <= total
        if not preds:
            assert age == total
        elif order[position - 1] in preds and len(preds) == 1:
            assert age == 0  # its only input was written by the op just before
        else:  # at least the bytes of the ops between its oldest producer and itself
            first = min(order.index(p) for p in preds)
            between = order[first + 1 : position]
            assert age == sum(graph.op(b).bytes_moved for b in between)
    assert input_ages(graph.graph, order) == {o.name: o.attrs[INPUT_AGE_KEY] for o in graph}
    for name in order:  # every op reads at least one thing: its producers, or the request
        assert graph.op(name).attrs[INPUT_COUNT_KEY] == max(len(graph.predecessors(name)), 1)
