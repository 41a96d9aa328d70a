"""The real-architecture hold-out, the kernel sweeps, the zoo's ONNX export, Amdahl fits.

Architectures are checked against published parameter and MAC counts; the export
against the zoo's own counts after a round trip through the ONNX importer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.corpus import FIT, HOLDOUT, QUICK, graph_digest
from calibration.fitnets import FIT_NETS, build_fit_net
from calibration.fitnets import PUBLISHED as FIT_PUBLISHED
from calibration.nets import NETS, PUBLISHED, build_net
from calibration.ortrun import RunSettings
from calibration.run_budget import BUDGET_S, MIN_RUNS
from calibration.sweeps import FAMILIES, KERNELS_PER_MODEL, build_sweep, sweep_names
from calibration.threads import kernel_fractions, parallel_fractions, weighted_median
from simulator.cli import main
from simulator.exitcodes import EXIT_INVALID
from simulator.graph.onnx_export import export_onnx, write_onnx
from simulator.graph.onnx_import import load_onnx
from simulator.graph.zoo import build_zoo_model


def _import(model, tmp_path, name):
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return load_onnx(path, fuse="none", name=name)


@pytest.mark.parametrize("name", list(NETS))
def test_holdout_architectures_match_published_counts(name):
    """Shape-only weights: the importer counts from shapes (the values do not matter)."""
    graph = load_onnx(build_net(name, seed=1, weights=False), fuse="none", name=name)
    params, gmacs = PUBLISHED[name]
    assert graph.total_params == params  # torchvision's exact count
    # torchvision prints GMACs to 2 decimals
    assert graph.total_macs / 1e9 == pytest.approx(gmacs, abs=0.006)


@pytest.mark.parametrize("name", list(FIT_NETS))
def test_fit_architectures_match_published_counts(name):
    """torchvision's exact parameter counts; PeleeNet's paper prints 2.8 M and 508 M;
    DPN-68's table counts BN, activations and adds into its 2.34 G, so the convolutions'
    2.326 G are compared within 0.015 G."""
    graph = load_onnx(build_fit_net(name, seed=1, weights=False), fuse="none", name=name)
    params, gmacs, decimals = FIT_PUBLISHED[name]
    if name == "peleenet":
        assert round(graph.total_params / 1e6, 1) == params / 1e6
    else:
        assert graph.total_params == params
    if name == "dpn68":
        assert graph.total_macs / 1e9 == pytest.approx(gmacs, abs=0.015)
    else:
        assert round(graph.total_macs / 1e9, decimals) == gmacs


def test_fit_architectures_run_and_differ_from_every_holdout_architecture():
    """No published fit network is a hold-out architecture (by graph digest), and one
    runs in onnxruntime at 64 px with the classifier's 1000 outputs."""
    ort = pytest.importorskip("onnxruntime")
    held = {graph_digest(build_net(n, seed=1, weights=False)) for n in NETS}
    fit = {graph_digest(build_fit_net(n, seed=1, weights=False)) for n in FIT_NETS}
    assert len(fit) == len(FIT_NETS) and not fit & held
    real = {r.args["arch"] for r in FIT if r.family == "fitnet"}
    assert real == set(FIT_NETS) and not real & set(NETS)
    model = build_fit_net("regnet_x_400mf", seed=1, res=64)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"input": np.ones((1, 3, 64, 64), np.float32)})
    assert out.shape == (1, 1000) and np.isfinite(out).all()


def test_weighted_net_equals_shape_only_and_low_resolution_vgg19(tmp_path):
    """The runnable model counts as its shape-only twin; at 32 px VGG-19's classifier
    sees 512 x 1 x 1: published params minus 48 x 512 x 4096."""
    full = _import(build_net("squeezenet1_1", seed=1), tmp_path, "sq")
    light = load_onnx(build_net("squeezenet1_1", seed=1, weights=False), fuse="none")
    assert (full.total_params, full.total_flops) == (light.total_params, light.total_flops)
    graph = load_onnx(build_net("vgg19", seed=1, res=32, weights=False), fuse="none")
    assert graph.total_params == PUBLISHED["vgg19"][0] - 48 * 512 * 4096
    convs = sum(op.macs for op in graph if op.kind == "conv")
    # conv MACs scale with the pixels: (19.63 G - FC MACs at 224) x (32 / 224)^2
    fc_224 = 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    assert convs == pytest.approx((19.632e9 - fc_224) / 49, rel=1e-3)


def test_fit_and_holdout_are_different_architectures():
    assert {r.family for r in HOLDOUT} == {"net"}
    zoo = {r.args["arch"] for r in FIT if r.family == "zoo"}
    assert not zoo & {r.args["arch"] for r in HOLDOUT}
    a, b = build_net("squeezenet1_1", seed=1), build_net("squeezenet1_1", seed=2)
    assert graph_digest(a) == graph_digest(b)  # the digest ignores weight values
    assert graph_digest(a) != graph_digest(build_net("shufflenet_v2_x1_0", seed=1))
    assert set(QUICK["holdout"]) <= {r.name for r in HOLDOUT}


def test_sweeps_are_deterministic_and_cover_every_family(tmp_path):
    names = sweep_names()
    assert {n.split("_")[1] for n in names} == set(FAMILIES)
    one = build_sweep("sweep_conv_3", seed=7, kernels=3)
    assert (
        one.SerializeToString()
        == build_sweep("sweep_conv_3", seed=7, kernels=3).SerializeToString()
    )
    assert len(one.graph.output) == 3 and len(one.graph.input) == 3
    graph = _import(build_sweep("sweep_dwconv_0", seed=7), tmp_path, "dw")
    assert sum(op.kind == "dwconv" for op in graph) == KERNELS_PER_MODEL


def test_narrow_and_same_size_pool_sweeps_have_their_shapes():
    """``narrow``: every convolution's output is narrower than its input (stride 1, 1 x 1
    or 3 x 3); ``poolsame``: 3 x 3 stride-1 pools that keep the feature map."""
    narrow = build_sweep("sweep_narrow_0", seed=7)
    weights = {t.name: list(t.dims) for t in narrow.graph.initializer}
    convs = [n for n in narrow.graph.node if n.op_type == "Conv"]
    assert len(convs) == KERNELS_PER_MODEL
    for node in convs:
        c_out, c_in, k, _ = weights[node.input[1]]
        strides = next(a.ints for a in node.attribute if a.name == "strides")
        assert c_out < c_in and k in (1, 3) and list(strides) == [1, 1]
    pools = [n for n in build_sweep("sweep_poolsame_0", seed=7).graph.node if "Pool" in n.op_type]
    assert len(pools) == KERNELS_PER_MODEL
    for node in pools:
        attrs = {a.name: list(a.ints) for a in node.attribute if a.ints}
        assert attrs["kernel_shape"] == [3, 3] and attrs["strides"] == [1, 1]
        assert attrs["pads"] == [1, 1, 1, 1]  # (side + 2 - 3) / 1 + 1 = side


@pytest.mark.parametrize(
    "name", ["alexnet", "vgg16", "resnet18", "resnet50", "mobilenet_v1", "mobilenet_v2"]
)
def test_zoo_export_round_trip(name):
    """Re-importing the export gives the zoo graph's FLOPs and parameters exactly
    (shape-only weights: quick; the runnable export is checked below and by every
    `calibrate all`, which measures these exports)."""
    graph = build_zoo_model(name)
    back = load_onnx(export_onnx(graph, weights=False), fuse="none")
    assert back.total_flops == graph.total_flops
    assert back.total_params == graph.total_params


def test_runnable_zoo_export_is_deterministic(tmp_path):
    graph = build_zoo_model("mobilenet_v2", resolution=64)
    path = write_onnx(graph, tmp_path / "m.onnx", seed=3)
    assert path.read_bytes() == export_onnx(graph, 3).SerializeToString(deterministic=True)
    assert load_onnx(path, fuse="none").total_params == graph.total_params


@pytest.mark.parametrize("shape", [(3,), (1 << 16,), (2, 1 << 16), (5, 40_000), (0, 4)])
def test_seeded_weights_repeat_one_scaled_block(shape):
    """A tensor larger than WEIGHT_BLOCK repeats the block's values (cut short at the
    end); the values are normal draws times ``std``, as ``np.resize`` of the block would
    give them."""
    from onnx import numpy_helper

    from simulator.graph.onnx_export import WEIGHT_BLOCK, seeded_weight

    tensor = seeded_weight(np.random.default_rng(7), "w", shape, 0.5)
    values = numpy_helper.to_array(tensor)
    assert values.shape == shape and values.dtype == np.float32 and tensor.name == "w"
    size = int(np.prod(shape))
    block = np.random.default_rng(7).standard_normal(min(size, WEIGHT_BLOCK), dtype=np.float32)
    assert np.array_equal(values.ravel(), np.resize(block, size) * np.float32(0.5))


def test_zoo_cli_export_and_transformer_refusal(tmp_path, capsys):
    target = tmp_path / "m.onnx"
    args = ["zoo", "mobilenet_v2", "--option", "resolution=64", "--onnx", str(target)]
    assert main(args) == 0
    assert "-> " in capsys.readouterr().out and target.stat().st_size > 1e6
    assert main(["zoo", "transformer_encoder", "--onnx", str(tmp_path / "t.onnx")]) == EXIT_INVALID
    assert "convolutional" in capsys.readouterr().err


def test_zoo_cli_export_to_a_bad_path_is_an_error_before_building(tmp_path, capsys):
    """--onnx under a file, or naming a folder, used to be an internal error."""
    (tmp_path / "a_file").write_text("x")
    for target, message in (
        (tmp_path / "a_file" / "m.onnx", "a_file is a file; give another path"),
        (tmp_path, "is a folder, not a file"),
    ):
        assert main(["zoo", "alexnet", "--onnx", str(target)]) == EXIT_INVALID
        err = capsys.readouterr().err
        assert f"the ONNX file {target}" in err and message in err
        assert "internal error" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["a_file"]


def test_amdahl_fraction_per_kind_by_hand():
    def table(times):
        return pd.DataFrame(
            [
                {"level": "op", "model": "m", "node": n, "kind": k, "median_s": t}
                for n, k, t in times
            ]
        )

    one = table([("a", "conv", 10.0), ("b", "conv", 2.0), ("c", "pool", 4.0)])
    two = table([("a", "conv", 6.0), ("b", "conv", 2.2), ("c", "pool", 2.0)])
    kernels = kernel_fractions(one, two, 2)
    # 6/10 = 1 - p/2 -> p = 0.8; slower with 2 threads -> 0; 2/4 -> 1
    assert list(kernels["p"]) == pytest.approx([0.8, 0.0, 1.0])
    # the 10 s kernel outweighs the 2 s one
    assert parallel_fractions(one, two, 2) == pytest.approx({"conv": 0.8, "pool": 1.0})
    assert weighted_median(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 5.0])) == 2.0


def test_run_budget():
    settings = RunSettings(runs=50, budget_s=1.0, min_runs=5)
    assert settings.runs_for(0.001) == 50  # capped at runs
    assert settings.runs_for(0.1) == 10
    assert settings.runs_for(2.0) == 5  # at least min_runs
    assert RunSettings(runs=50).runs_for(2.0) == 50  # no budget: always runs


def test_the_default_floor_gives_a_big_network_15_runs():
    """``calibrate``'s defaults: 0.6 s of timed runs, at least 15 (a 60 ms DenseNet-121
    run would get 10 from the budget, a 300 ms VGG-19 run 2)."""
    settings = RunSettings(runs=100, budget_s=BUDGET_S)
    assert (BUDGET_S, MIN_RUNS) == (0.6, 15)
    assert settings.runs_for(0.06) == 15
    assert settings.runs_for(0.3) == 15
    assert settings.runs_for(0.02) == 30  # the budget rules above the floor
    assert RunSettings(runs=3).min_runs == 3  # never above runs
