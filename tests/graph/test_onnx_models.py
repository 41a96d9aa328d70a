"""Imported MobileNetV1 / ResNet-18 agree with the zoo; shipped ONNX files regenerate."""

from __future__ import annotations

import functools

import pytest
from onnx_util import MODELS_DIR, make_models_module

from simulator.graph.onnx_import import load_onnx
from simulator.graph.zoo import ZOO, build_zoo_model

make_models = make_models_module()


@functools.cache
def onnx_of(zoo_name: str):
    """The ONNX model (built once per test session; load_onnx does not modify it)."""
    return getattr(make_models, zoo_name)()


@pytest.mark.parametrize("zoo_name", ["mobilenet_v1", "resnet18"])
def test_imported_architecture_matches_the_zoo_and_published_totals(zoo_name):
    onnx_model = onnx_of(zoo_name)
    imported = load_onnx(onnx_model, fuse="none")
    zoo = build_zoo_model(zoo_name, "fp32")
    # the same layers: exactly the zoo's MACs and params (BatchNorm counts scale + bias)
    assert imported.total_macs == zoo.total_macs
    assert imported.total_params == zoo.total_params
    assert imported.total_flops == zoo.total_flops
    # the zoo's flatten is a free view; ONNX has a Flatten node (a zero-FLOP reshape)
    assert set(imported.order) == set(zoo.order) | {"flatten"}
    published = next(
        f for f in ZOO[zoo_name].published if f.options in ((), (("width_multiplier", 1.0),))
    )
    assert imported.total_macs == pytest.approx(published.macs, rel=0.01)
    assert abs(imported.total_params - published.params) <= max(published.params_tolerance, 1)
    # per-layer: every zoo conv / fc has the same MACs under the same name
    for op in zoo:
        if op.kind in ("conv", "dwconv", "fc"):
            assert imported.op(op.name).macs == op.macs, op.name
            assert imported.op(op.name).kind == op.kind, op.name


@pytest.mark.parametrize(
    ("zoo_name", "fused_ops"),
    [
        # conv1, 13 x (dw, pw) each with bn + relu, avgpool, flatten, fc, softmax
        ("mobilenet_v1", 1 + 26 + 4),
        # conv1 (+bn, relu), maxpool; 8 blocks x (conv1+bn+relu, conv2+bn, add, relu)
        # plus 3 downsample conv+bn; avgpool, flatten, fc
        ("resnet18", 2 + 8 * 4 + 3 + 3),
    ],
)
def test_ort_fusion_keeps_macs_and_folds_batchnorm(zoo_name, fused_ops):
    onnx_model = onnx_of(zoo_name)
    none = load_onnx(onnx_model, fuse="none")
    fused = load_onnx(onnx_model, fuse="ort")
    assert len(fused) == fused_ops
    assert fused.total_macs == none.total_macs
    bn = [op for op in none if op.kind == "norm"]
    # BN's 2*C params (scale, bias) become the bias-less conv's C bias
    assert none.total_params - fused.total_params == sum(op.params // 2 for op in bn)
    assert fused.total_flops < none.total_flops  # folded BatchNorm costs nothing


def test_shipped_models_regenerate_byte_identically(tmp_path):
    written = make_models.main(tmp_path)
    assert sorted(p.name for p in written) == sorted(make_models.SHIPPED)
    for path in written:
        assert path.read_bytes() == (MODELS_DIR / path.name).read_bytes(), path.name


def test_shipped_models_are_small_and_load():
    for filename in make_models.SHIPPED:
        path = MODELS_DIR / filename
        assert path.stat().st_size < 300_000
        graph = load_onnx(path)
        assert graph.total_macs > 0 and graph.name == path.stem
