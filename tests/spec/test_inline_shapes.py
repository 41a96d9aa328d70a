"""Inline ops declare conv / fc shapes (GraphBuilder's attrs) so the techniques act on
them; bad shapes are reported at their YAML path; techniques that cannot act say why."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ModelError
from simulator.graph.layers import GraphBuilder
from simulator.graph.techniques import apply_techniques
from simulator.schema import Context, Loc
from simulator.spec.inline import build_inline_model
from simulator.spec.inline_shapes import SHAPE_FIELDS
from simulator.spec.modeldefs import INLINE_MODEL

# conv1: 3 -> 16 channels, 3 x 3, on a 16 x 16 output (no bias); relu; fc: 4096 -> 10
OPS = """\
  net:
    ops:
      - {name: conv1, kind: conv, macs: 110592, input_elems: 3072, output_elems: 4096,
         in_channels: 3, out_channels: 16, kernel: 3}
      - {name: relu1, kind: activation, flops: 4096, input_elems: 4096, output_elems: 4096}
      - {name: fc, kind: fc, macs: 40960, input_elems: 4096, output_elems: 10,
         in_features: 4096, out_features: 10, bias: true}
    edges: [{src: conv1, dst: relu1}, {src: relu1, dst: fc}]
"""


def with_model(spec, ops: str = OPS, techniques: str = "") -> str:
    return spec.edit(spec.BASE, "  net: {zoo: alexnet}\n", ops + techniques)


def builder_twin():
    """The same layers built by GraphBuilder: the inline ops must match it."""
    b = GraphBuilder()
    x = b.input((3, 32, 32))
    x = b.conv(x, 16, 3, stride=2, padding=1, bias=False, name="conv1")
    x = b.relu(x, name="relu1")
    b.fc(x, 10, name="fc")
    return b.build("twin")


def test_shape_keys_become_attrs_and_params(spec):
    net = spec.load(with_model(spec)).models["net"]
    twin = builder_twin()
    for name in ("conv1", "fc"):
        assert dict(net.op(name).attrs) == dict(twin.op(name).attrs), name
        # params default to the shape's count: 16 x 3 x 9 = 432; 4096 x 10 + 10
        assert net.op(name).params == twin.op(name).params, name
        assert net.op(name).macs == twin.op(name).macs, name


def test_channel_pruning_acts_on_inline_ops_as_on_builder_ops(spec):
    techniques = "    techniques: [{name: prune_channels, ratio: 0.5}]\n"
    net = spec.load(with_model(spec, techniques=techniques)).models["net"]
    # conv1 16 -> 8 channels: MACs 110592 / 2; the fc reads 2048 features: MACs 20480
    assert net.op("conv1").macs == 55296 and net.op("conv1").params == 216
    assert net.op("fc").macs == 20480 and net.op("fc").params == 2048 * 10 + 10
    assert net.op("relu1").output_elems == 2048


def test_depthwise_separable_acts_on_inline_convs(spec):
    techniques = "    techniques: [{name: depthwise_separable}]\n"
    net = spec.load(with_model(spec, techniques=techniques)).models["net"]
    # 3 x 256 x 9 (depthwise) + 16 x 256 x 3 (pointwise) instead of 110592
    assert net.op("conv1_dw").macs == 6912 and net.op("conv1").macs == 12288


def test_techniques_on_ops_without_shapes_are_errors_at_their_path(spec):
    bare = OPS.replace(",\n         in_channels: 3, out_channels: 16, kernel: 3}", "}")
    for technique, expected in (
        ("prune_channels, ratio: 0.5", "conv / fc ops without shape attributes"),
        ("depthwise_separable", "convs without shape attributes (an inline op declares"),
    ):
        text = with_model(spec, bare, f"    techniques: [{{name: {technique}}}]\n")
        p = spec.problem(text)
        assert p.path == "models.net.techniques[0]"
        assert "matched no op it can transform" in p.message and expected in p.message
        assert "conv1" in p.message


@pytest.mark.parametrize(
    ("old", "new", "path", "message"),
    [
        ("kernel: 3}", "kernel: 3, groups: 2}", "groups", "groups 2 must divide in_channels 3"),
        ("kernel: 3}", "kernel: 3, in_features: 3}", "in_features", "'in_features' is not a conv"),
        ("kernel: 3}", "kernel: 0}", "kernel", ">= 1"),
        ("kernel: 3}", "kernel: 3, params: 400}", "params", "shape, which gives 432"),
        ("out_channels: 16, kernel: 3}", "out_channels: 16}", None, "needs kernel too"),
        (
            "output_elems: 4096,\n         in_ch",
            "output_elems: 4095,\n         in_ch",
            "output_elems",
            "whole number of the 16",
        ),
        (
            "kind: conv, macs: 110592, input_elems: 3072, output_elems: 4096,\n"
            "         in_channels: 3, out_channels: 16, kernel: 3}",
            "kind: dwconv, macs: 1, output_elems: 4096, in_channels: 16, out_channels: 16,"
            " kernel: 3, groups: 8}",
            "groups",
            "kind must be 'conv'",
        ),
        (
            "{name: relu1, kind: activation,",
            "{name: relu1, kind: activation, kernel: 3,",
            "kernel",
            "applies to conv, dwconv and fc ops",
        ),
    ],
)
def test_bad_shapes_are_reported_at_their_key(spec, old, new, path, message):
    p = spec.problem(with_model(spec, OPS.replace(old, new)))
    index = 1 if "relu1" in old else 0
    where = f"models.net.ops[{index}]"
    assert p.path == (f"{where}.{path}" if path else where)
    assert message in p.message


def inline_twin(graph):
    """``graph`` written as an inline model (figures and shape keys), built by the loader."""
    ops = []
    for op in graph:
        entry = {
            "name": op.name,
            "kind": op.kind,
            "flops": op.flops,
            "macs": op.macs,
            "input_elems": op.input_elems,
            "output_elems": op.output_elems,
        }
        shape = {k: v for k, v in op.attrs.items() if k in SHAPE_FIELDS}
        if shape:
            entry.update(shape, bias=bool(shape["bias"]))
        else:
            entry["params"] = op.params  # shaped ops: params come from the shape
        if "max" in op.attrs:  # a pool's type: the inline key 'pool'
            entry["pool"] = "max" if op.attrs["max"] else "average"
        ops.append(entry)
    raw = {"ops": ops, "edges": [{"src": e.src, "dst": e.dst} for e in graph.edges()]}
    ctx, loc = Context(), Loc("models.net")
    checked = INLINE_MODEL.check(raw, loc, ctx)
    built = build_inline_model("net", checked, raw, loc, ctx)
    assert not ctx.problems, ctx.problems
    return built


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(1, 24),
    st.sampled_from([1, 3, 5]),
    st.booleans(),
    st.integers(1, 24),
    st.floats(0, 0.9),
)
def test_inline_twin_of_a_builder_graph_prunes_and_substitutes_identically(
    c_in, c_mid, kernel, bias, features, ratio
):
    b = GraphBuilder()
    x = b.input((c_in, 9, 9))
    x = b.relu(b.conv(x, c_mid, kernel, padding=kernel // 2, bias=bias, name="conv1"), name="r1")
    x = b.conv(x, c_mid, 3, padding=1, groups=c_mid, bias=False, name="dw")
    x = b.conv(x, features, 1, bias=bias, name="pw")
    b.fc(b.global_avgpool(x, name="gap"), 5, name="fc")
    graph = b.build("net")
    twin = inline_twin(graph)
    for technique in (
        {"name": "prune_channels", "ratio": ratio},
        {"name": "depthwise_separable"},
    ):
        try:
            ours, _ = apply_techniques(twin, [technique])
        except ModelError as exc:  # no 3 x 3+ standard conv: both must refuse alike
            with pytest.raises(ModelError, match="matched no op it can transform"):
                apply_techniques(graph, [technique])
            assert "matched no op it can transform" in exc.message
            continue
        ref, _ = apply_techniques(graph, [technique])
        for op in ref:
            mine = ours.op(op.name)
            assert (mine.flops, mine.macs, mine.params) == (op.flops, op.macs, op.params)
            assert (mine.input_elems, mine.output_elems) == (op.input_elems, op.output_elems)
            assert dict(mine.attrs) == dict(op.attrs), op.name
