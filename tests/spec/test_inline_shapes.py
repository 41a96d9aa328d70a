"""Inline ops declare conv / fc shapes (GraphBuilder's attrs) so the techniques act on
them; bad shapes are reported at their YAML path; techniques that cannot act say why."""

from __future__ import annotations

import pytest

from simulator.graph.layers import GraphBuilder

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
