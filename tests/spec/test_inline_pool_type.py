"""Inline pool ops may declare ``pool: max | average`` (``attrs['max']``), the type the
kernel predictor reads (docs/predictors.md); a bad value or a type on another kind is an
error at its YAML path."""

from __future__ import annotations

import pytest

from simulator.hardware.kernel_features import op_features

# conv -> 2 x 2 stride-2 pool over 16 x 8 x 8 (1024 -> 256 elements, 4 taps each)
OPS = """\
  net:
    ops:
      - {name: conv, kind: conv, macs: 100000, input_elems: 3072, output_elems: 1024}
      - {name: pool, kind: pool, flops: 1024, input_elems: 1024, output_elems: 256POOL}
    edges: [{src: conv, dst: pool}]
"""


def with_ops(spec, ops: str) -> str:
    return spec.edit(spec.BASE, "  net: {zoo: alexnet}\n", ops)


@pytest.mark.parametrize(("given", "is_max"), [("max", 1.0), ("average", 0.0)])
def test_the_pool_key_sets_the_pool_max_feature(spec, given, is_max):
    net = spec.load(with_ops(spec, OPS.replace("POOL", f", pool: {given}"))).models["net"]
    features = op_features(net.op("pool"))
    assert features["pool_max"] == is_max
    assert (features["pool_taps"], features["pool_stride"]) == (4.0, 4.0)


def test_without_the_key_the_pool_lacks_only_pool_max(spec):
    net = spec.load(with_ops(spec, OPS.replace("POOL", ""))).models["net"]
    assert "max" not in net.op("pool").attrs
    features = op_features(net.op("pool"))
    assert "pool_max" not in features and features["pool_taps"] == 4.0


def test_an_unknown_pool_type_names_path_and_nearest_choice(spec):
    p = spec.problem(with_ops(spec, OPS.replace("POOL", ", pool: maximum")))
    assert p.path == "models.net.ops[1].pool"
    assert "'max'" in p.message and "'average'" in p.message
    assert "max" in str(p)


def test_a_pool_type_on_another_kind_is_refused_at_its_key(spec):
    text = with_ops(spec, OPS.replace("POOL", "")).replace(
        "output_elems: 1024}", "output_elems: 1024, pool: max}"
    )
    p = spec.problem(text)
    assert p.path == "models.net.ops[0].pool"
    assert "only a pool op has a pool type (this op is a conv)" in p.message
