"""A real measure -> fit -> validate round trip on tiny ONNX models (onnxruntime on this host).

The models keep their node names through ORT's extended optimisation (no fusable
pattern), so their socsim graphs are written here by hand: FLOPs and bytes counted
from the shapes. Timings on a shared CI machine are noisy, so accuracy bounds are loose;
the exact parts (rows, names, kinds, counts, provenance) are checked exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from calibration.device import load_platform, read_calibration_comments
from calibration.measure import measure_models, provenance
from calibration.microbench import run_suite, suite
from calibration.ortrun import RunSettings
from calibration.pipeline import fit_file
from calibration.table import make_table, read_table, write_table
from calibration.validate import summary, validation_table
from simulator.graph.model import Edge, ModelGraph, Op

SETTINGS = RunSettings(threads=1, warmup=2, runs=7)


def _mk(nodes, inits, in_shape):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _w(name, shape, seed=0):
    from onnx import numpy_helper

    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.05
    return numpy_helper.from_array(values, name)


def mlp_case(name: str, m: int, k: int, n1: int, n2: int):
    """MatMul -> Sigmoid -> MatMul, and its hand-counted graph."""
    from onnx import helper

    model = _mk(
        [
            helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
            helper.make_node("Sigmoid", ["a"], ["b"], name="sig1"),
            helper.make_node("MatMul", ["b", "w2"], ["y"], name="mm2"),
        ],
        [_w("w1", (k, n1)), _w("w2", (n1, n2))],
        [m, k],
    )
    ops = [
        Op("mm1", "matmul", 2.0 * m * k * n1, m * k * n1, k * n1, m * k, m * n1),
        Op("sig1", "activation", 4.0 * m * n1, 0, 0, m * n1, m * n1),
        Op("mm2", "matmul", 2.0 * m * n1 * n2, m * n1 * n2, n1 * n2, m * n1, m * n2),
    ]
    edges = [Edge("mm1", "sig1", 4 * m * n1), Edge("sig1", "mm2", 4 * m * n1)]
    return model, ModelGraph(name, ops, edges)


def conv_case(name: str, c_in: int, c_out: int, hw: int):
    """3x3 Conv -> 2x2 MaxPool, and its hand-counted graph."""
    from onnx import helper

    model = _mk(
        [
            helper.make_node(
                "Conv", ["x", "w"], ["a"], name="conv1", pads=[1] * 4, kernel_shape=[3, 3]
            ),
            helper.make_node(
                "MaxPool", ["a"], ["y"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]
            ),
        ],
        [_w("w", (c_out, c_in, 3, 3))],
        [1, c_in, hw, hw],
    )
    out = c_out * hw * hw
    macs = out * c_in * 9
    ops = [
        Op("conv1", "conv", 2.0 * macs, macs, c_out * c_in * 9, c_in * hw * hw, out),
        Op("pool1", "pool", 3.0 * out / 4, 0, 0, out, out // 4),
    ]
    return model, ModelGraph(name, ops, [Edge("conv1", "pool1", 4 * out)])


FIT_CASES = {
    "fit_mlp_a": lambda n: mlp_case(n, 64, 256, 256, 64),
    "fit_mlp_b": lambda n: mlp_case(n, 32, 512, 512, 128),
    "fit_conv_a": lambda n: conv_case(n, 8, 16, 32),
    "fit_conv_b": lambda n: conv_case(n, 16, 32, 24),
}
HOLD_CASES = {
    "hold_mlp": lambda n: mlp_case(n, 48, 384, 256, 96),
    "hold_conv": lambda n: conv_case(n, 12, 24, 28),
}


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    root = tmp_path_factory.mktemp("calib")
    graphs, paths = {}, {}
    for cases in (FIT_CASES, HOLD_CASES):
        for name, case in cases.items():
            model, graph = case(name)
            paths[name] = root / f"{name}.onnx"
            paths[name].write_bytes(model.SerializeToString())
            graphs[name] = graph

    def loader(path, fuse):  # the optimised file is named after the model's file stem
        assert fuse in ("none", "ort")
        stem = path.name.split(".")[0]
        return graphs[stem]

    micro = run_suite(suite(quick=True), SETTINGS, root / "micro")
    fit_rows = measure_models({n: paths[n] for n in FIT_CASES}, SETTINGS, root, loader)
    write_table(make_table(micro + fit_rows), root / "fit.csv", provenance(1))
    hold_rows = measure_models({n: paths[n] for n in HOLD_CASES}, SETTINGS, root, loader)
    write_table(make_table(hold_rows), root / "holdout.csv", provenance(1))
    device = root / "host_cpu.yaml"
    result, prov = fit_file(root / "fit.csv", device)
    held = read_table(root / "holdout.csv")
    table = validation_table(held, device, {n: {"original": graphs[n]} for n in HOLD_CASES})
    return root, result, prov, table, device


def test_measured_rows_are_exact_in_structure(round_trip):
    root = round_trip[0]
    table = read_table(root / "fit.csv")
    ops = table[table["level"] == "op"]
    assert sorted(ops["node"].unique()) == ["conv1", "mm1", "mm2", "pool1", "sig1"]
    assert len(ops) == 3 + 3 + 2 + 2
    assert set(table.loc[table["level"] == "model", "model"]) == set(FIT_CASES)
    conv = ops[(ops["model"] == "fit_conv_a") & (ops["node"] == "conv1")].iloc[0]
    assert conv["flops"] == 2.0 * 16 * 32 * 32 * 8 * 9
    assert conv["bytes"] == 4 * (8 * 32 * 32 + 16 * 8 * 9 + 16 * 32 * 32)
    assert conv["op_type"] == "Conv" and conv["shapes"].startswith("1x8x32x32;16x8x3x3->")
    assert (ops["runs"] == SETTINGS.runs).all() and (ops["median_s"] > 0).all()
    assert len(table[table["level"] == "micro"]) == len(suite(quick=True))


def test_fit_and_device_preset(round_trip):
    _, result, prov, _, device = round_trip
    assert result.op_stats["n"] == 10 and result.model_stats["n"] == 4
    assert 0 < result.efficiency["matmul"] <= 1 and 0 < result.efficiency["conv"] <= 1
    unit = load_platform(device).unit("host_cpu.cpu")
    assert unit.dispatch_s == pytest.approx(result.dispatch_s, rel=1e-5)
    comments = read_calibration_comments(device)
    assert comments["threads"] == "1" and comments["runtime"].startswith("onnxruntime")
    assert comments["fit_models"] == "fit_conv_a, fit_conv_b, fit_mlp_a, fit_mlp_b"
    assert comments["date"] == prov.date


def test_validation_on_held_out(round_trip):
    table = round_trip[3]
    assert list(table["model"]) == ["hold_mlp", "hold_conv"]
    assert (table["predicted_s_original"] > 0).all()
    # real timings of 0.1 ms models, 7 runs each, while the suite's other worker runs:
    # 3-9 % MAPE alone on the Intel guest of 2026-12-08, 63.5 % once in a full run (fit
    # and hold-out timed at different moments of the other worker's load). So each
    # prediction within a factor of 4 of its measurement: a units slip (x1000) fails
    ratio = table["predicted_s_original"] / table["measured_s"]
    assert ratio.between(0.25, 4.0).all(), ratio.tolist()
    assert summary(table)["n"] == 2
