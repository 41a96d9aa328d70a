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


def test_fp16_model_defaults_to_fp16_with_half_the_bytes():
    fp32 = load_onnx(MODELS_DIR / "small_cnn.onnx")
    fp16 = load_onnx(MODELS_DIR / "small_cnn_fp16.onnx")
    assert {op.dtype for op in fp16} == {"fp16"}
    assert fp16.order == fp32.order and fp16.total_flops == fp32.total_flops
    assert fp16.weight_bytes * 2 == fp32.weight_bytes
    assert [e.bytes * 2 for e in fp16.edges()] == [e.bytes for e in fp32.edges()]


def test_transformer_encoder_matches_the_zoo_op_by_op():
    """Exporter-style attention (MatMul + Add, head reshapes, scaled scores) under
    fuse='ort' gives the zoo's transformer ops exactly; the head splits are extra
    zero-FLOP reshapes."""
    options = {"layers": 2, "d_model": 64, "heads": 4, "d_ff": 256, "seq_len": 16}
    imported = load_onnx(make_models.transformer_encoder(**options), fuse="ort")
    zoo = build_zoo_model("transformer_encoder", "fp32", **options)
    assert (imported.total_macs, imported.total_params, imported.total_flops) == (
        zoo.total_macs,
        zoo.total_params,
        zoo.total_flops,
    )
    for op in zoo:
        if op.name == "input":  # the zoo's explicit input op; ONNX has a graph input
            continue
        mine = imported.op(op.name)
        assert (mine.kind, mine.macs, mine.flops, mine.params) == (
            op.kind,
            op.macs,
            op.flops,
            op.params,
        ), op.name
    extra = set(imported.order) - set(zoo.order)
    # per layer: 3 head reshapes, 3 transposes, the context transpose and merge
    assert {imported.op(n).kind for n in extra} == {"reshape"} and len(extra) == 2 * 8
