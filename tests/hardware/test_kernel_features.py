"""The network-footprint context feature: ModelGraph stamps it, op_features reads it, the
trainer uses it where the table has it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.predictor_fit import train_predictor
from calibration.predictor_synth import conv_op, fc_op
from simulator.graph.context import FOOTPRINT_KEY
from simulator.graph.layers import GraphBuilder
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.graph.onnx_export import export_onnx
from simulator.graph.onnx_import import load_onnx
from simulator.graph.techniques.prune import prune_channels
from simulator.graph.zoo import build_zoo_model
from simulator.hardware.kernel_features import (
    CONTEXT_FEATURES,
    GENERIC_FEATURES,
    feature_columns,
    kind_features,
    op_features,
)


def two_op_graph() -> ModelGraph:
    # conv 3 -> 8 channels, 3x3, on 8x8: 8*3*9 + 8 = 224 params; fc 512 -> 10: 5130
    conv = conv_op("conv", 3, 8, 3, 1, 8)
    fc = fc_op("fc", 1, 512, 10)
    return ModelGraph("tiny", [conv, fc], [Edge("conv", "fc", conv.output_bytes)])


def test_every_op_carries_its_networks_weight_bytes_by_hand():
    graph = two_op_graph()
    assert graph.weight_bytes == (224 + 5130) * 4  # fp32
    for op in graph:
        assert op.attrs[FOOTPRINT_KEY] == 21416
        assert op_features(op)["net_weight_bytes"] == 21416.0


def test_conv_gemm_features_by_hand():
    """A conv lowered to a GEMM: depth (c_in / g) k^2, rows c_out / g, and im2col writes
    depth x output pixels x groups elements, none for a 1x1 stride-1 conv."""
    conv = op_features(conv_op("c", 3, 8, 3, 1, 8))  # 3 -> 8, 3x3, 8x8 output
    assert (conv["gemm_depth"], conv["gemm_rows"], conv["im2col_elems"]) == (27, 8, 27 * 64)
    pointwise = op_features(conv_op("p", 16, 32, 1, 1, 14))
    assert (pointwise["gemm_depth"], pointwise["im2col_elems"]) == (16, 0.0)
    strided = op_features(conv_op("s", 16, 32, 1, 2, 14))  # 1x1 stride 2 gathers pixels
    assert strided["im2col_elems"] == 16 * 7 * 7
    grouped = op_features(conv_op("g", 16, 32, 3, 1, 8, groups=4))  # 4 groups of 4 -> 8
    assert (grouped["gemm_depth"], grouped["gemm_rows"]) == (36, 8)
    assert grouped["im2col_elems"] == 36 * 64 * 4
    assert "gemm_depth" not in op_features(fc_op("fc", 1, 512, 10))


def test_an_op_outside_a_graph_lacks_the_context_feature():
    bare = conv_op("conv", 3, 8, 3, 1, 8)
    assert "net_weight_bytes" not in op_features(bare)
    assert np.isnan(feature_columns(bare)["feat_net_weight_bytes"])
    # the op given to the graph is not changed (ops are shared between graphs)
    ModelGraph("one", [bare], [])
    assert FOOTPRINT_KEY not in bare.attrs


def test_a_transformed_graph_is_restamped_and_the_original_keeps_its_value():
    graph = build_zoo_model("resnet18", "fp32")
    pruned = prune_channels(graph, 0.5)
    assert pruned.weight_bytes < graph.weight_bytes
    assert {op.attrs[FOOTPRINT_KEY] for op in pruned} == {pruned.weight_bytes}
    assert {op.attrs[FOOTPRINT_KEY] for op in graph} == {graph.weight_bytes}


def test_every_kind_trains_on_the_context_feature_by_default():
    for kind in ("conv", "dwconv", "fc", "pool", "concat"):
        assert kind_features(kind)[-len(CONTEXT_FEATURES) :] == CONTEXT_FEATURES
    assert kind_features("concat") == (*GENERIC_FEATURES, "input_age_bytes", "net_weight_bytes")
    assert kind_features("pool") == (
        *GENERIC_FEATURES, "pool_taps", "pool_stride", "pool_max", "net_weight_bytes"
    )  # fmt: skip


def test_pool_features_by_hand():
    """Window taps (FLOPs per output), input per output (about stride^2) and max/average,
    for GraphBuilder's pools; the exported ONNX re-imports with the same features."""
    b = GraphBuilder(model="pools")
    x = b.maxpool(b.input((3, 28, 28)), 3, stride=2, padding=1, name="max")  # 3 x 14 x 14
    x = b.avgpool(x, 3, stride=1, padding=1, name="avg")  # 3 x 14 x 14
    b.global_avgpool(x, name="gap")  # 3 x 1 x 1
    graph = b.build("pools")
    features = {op.name: op_features(op) for op in graph}
    assert features["max"]["pool_taps"] == 9 and features["avg"]["pool_taps"] == 9
    assert features["max"]["pool_stride"] == 28 * 28 / (14 * 14)  # 4.0
    assert features["avg"]["pool_stride"] == 1.0
    assert features["gap"]["pool_taps"] == 14 * 14 + 1  # every input summed, one divide
    assert features["gap"]["pool_stride"] == 14 * 14
    assert [features[n]["pool_max"] for n in ("max", "avg", "gap")] == [1.0, 0.0, 0.0]
    # exported as MaxPool / AveragePool / GlobalAveragePool, the importer marks them alike
    back = load_onnx(export_onnx(graph, weights=False), fuse="none")
    types = {node.name: node.op_type for node in export_onnx(graph, weights=False).graph.node}
    assert [types[n] for n in ("max", "avg", "gap")] == [
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
    ]
    for name, mine in features.items():
        assert {k: v for k, v in op_features(back.op(name)).items() if k.startswith("pool_")} == {
            k: v for k, v in mine.items() if k.startswith("pool_")
        }
    assert "pool_taps" not in op_features(conv_op("c", 3, 8, 3, 1, 8))


def test_an_unmarked_pool_lacks_pool_max_only():
    """An inline pool without ``pool: max | average`` has window and stride features but
    no pool_max, so a learned model needing it leaves the op to the roofline."""
    pool = Op("p", "pool", flops=4.0 * 100, input_elems=400, output_elems=100)
    features = op_features(pool)
    assert (features["pool_taps"], features["pool_stride"]) == (4.0, 4.0)
    assert "pool_max" not in features


def _table(footprints: list[float | None]) -> pd.DataFrame:
    """Concat rows whose time doubles in the big network: only the footprint tells."""
    rows = []
    for i, footprint in enumerate(footprints):
        for j in range(30):
            op = conv_op(f"c{j}", 16, 16, 1, 1, 8 + j)  # the features of a small op
            feats = feature_columns(op)
            feats["feat_net_weight_bytes"] = np.nan if footprint is None else footprint
            time_s = (1e-5 + 1e-8 * j) * (2.0 if footprint and footprint > 1e8 else 1.0)
            rows.append(
                {"level": "op", "model": f"m{i}", "node": f"c{j}", "kind": "concat",
                 "dtype": "fp32", "threads": 1, "median_s": time_s, "flops": op.flops,
                 "bytes": float(op.bytes_moved), "boundary": 0, **feats}
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_training_learns_the_footprint_and_skips_it_when_no_row_has_it():
    with_context = train_predictor(_table([1e6, 5e8]), context=False)
    (model,) = with_context["models"]
    assert model["features"][-1] == "net_weight_bytes"
    assert model["training"]["cv_within_10pct"] >= 0.95
    blind = train_predictor(
        _table([1e6, 5e8]), context=False, features={"concat": GENERIC_FEATURES}
    )
    assert blind["models"][0]["training"]["cv_within_10pct"] <= 0.6  # half are 2x off
    without = train_predictor(_table([None, None]), context=False)
    assert "net_weight_bytes" not in without["models"][0]["features"]
    assert "net_weight_bytes" not in without["features"]


def test_views_and_copies_of_an_imported_graph():
    """Reshape / Unsqueeze alias their input in the runtime; Transpose / Split copy."""
    from onnx import helper
    from onnx_util import const, model, node

    from simulator.graph.onnx_import import load_onnx

    nodes = [
        node("Relu", ["x"], "r"),
        node("Reshape", ["r", "shape"], "v", name="reshape"),
        node("Transpose", ["v"], "t", name="transpose", perm=[0, 2, 1]),
        helper.make_node("Split", ["t", "halves"], ["a", "b"], name="split", axis=1),
        node("Unsqueeze", ["a", "axes"], "u", name="unsqueeze"),
        node("Add", ["u", "u"], "y"),
        node("Relu", ["b"], "z"),
    ]
    consts = [const("shape", [1, 4, 6], np.int64), const("halves", [3, 3], np.int64)]
    consts.append(const("axes", [0], np.int64))
    graph = load_onnx(model(nodes, {"x": [1, 24]}, ["y", "z"], consts), fuse="none")
    views = {op.name: op_features(op)["view"] for op in graph if op.kind == "reshape"}
    assert views == {"reshape": 1.0, "transpose": 0.0, "split": 0.0, "unsqueeze": 1.0}
    assert "view" not in op_features(graph.op("y"))  # other kinds lack it
    builder = GraphBuilder(model="built")
    builder.flatten(builder.input((8, 2, 2)), name="flatten")
    assert op_features(builder.build().op("flatten"))["view"] == 1.0  # the zoo's views too


def test_a_non_square_conv_has_its_taps_as_features_by_hand():
    """A 1 x 7 conv 16 -> 24 on 17 x 17: kernel side sqrt(7) (a 3 x 3 has 9 taps, a
    1 x 7 7), GEMM depth 16 x 7, rows 24, im2col 112 x 289."""
    from calibration.onnxbuild import Builder
    from simulator.graph.onnx_import import load_onnx

    b = Builder(seed=1)
    b.conv(b.input([1, 16, 17, 17]), 16, 24, (1, 7))
    (op,) = load_onnx(b.model("one_by_seven"), fuse="none")
    features = op_features(op)
    assert features["kernel"] == pytest.approx(7**0.5)
    assert (features["gemm_depth"], features["gemm_rows"]) == (112, 24)
    assert features["im2col_elems"] == 112 * 289
    assert (features["out_spatial"], features["stride_area"]) == (289, 1.0)
    assert set(kind_features("conv")) <= set(features)  # the predictor costs it
