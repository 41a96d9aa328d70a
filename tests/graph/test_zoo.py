"""The zoo against published totals, plus structural checks.

The published figures are written out here on purpose (not only read from the
registry), so a wrong registry entry cannot make its own test pass.
"""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest

from simulator.errors import ModelError
from simulator.graph.model import DTYPE_BYTES, ModelGraph
from simulator.graph.zoo import (
    ZOO,
    build_zoo_model,
    zoo_names,
    zoo_options,
    zoo_table,
)
from simulator.graph.zoo_transformer import encoder_layer_params

# torchvision docs: num_params and the GFLOPS column (which counts multiply-adds).
TORCHVISION = {
    "alexnet": (61_100_840, 0.71e9),
    "vgg16": (138_357_544, 15.47e9),
    "resnet18": (11_689_512, 1.81e9),
    "resnet50": (25_557_032, 4.09e9),
    "mobilenet_v2": (3_504_872, 0.30e9),
}

# Howard et al. 2017, Table 6 (width at 224) and Table 7 (resolution at width 1.0):
# (options, million mult-adds, million params rounded to 0.1 M).
MOBILENET_V1_ROWS = [
    ({"width_multiplier": 1.0}, 569, 4.2),
    ({"width_multiplier": 0.75}, 325, 2.6),
    ({"width_multiplier": 0.5}, 149, 1.3),
    ({"width_multiplier": 0.25}, 41, 0.5),
    ({"resolution": 192}, 418, 4.2),
    ({"resolution": 160}, 290, 4.2),
    ({"resolution": 128}, 186, 4.2),
]


@pytest.fixture(scope="module")
def models() -> dict[str, ModelGraph]:
    return {name: build_zoo_model(name) for name in zoo_names()}


@pytest.mark.parametrize("name", sorted(TORCHVISION))
def test_torchvision_params_exact_and_macs_within_1pct(models, name):
    params, macs = TORCHVISION[name]
    graph = models[name]
    assert graph.total_params == params
    assert graph.total_macs == pytest.approx(macs, rel=0.01)


@pytest.mark.parametrize(("options", "mmacs", "mparams"), MOBILENET_V1_ROWS)
def test_mobilenet_v1_paper_rows(options, mmacs, mparams):
    graph = build_zoo_model("mobilenet_v1", **options)
    assert graph.total_macs == pytest.approx(mmacs * 1e6, rel=0.02)
    assert round(graph.total_params / 1e6, 1) == mparams  # the paper rounds to 0.1 M


def test_mobilenet_v1_structure(models):
    graph = models["mobilenet_v1"]
    kinds = [op.kind for op in graph]
    assert kinds.count("dwconv") == 13
    assert kinds.count("conv") == 14  # conv1 + 13 pointwise
    assert kinds.count("norm") == 27  # BN after every conv
    assert graph.op("fc").params == 1024 * 1000 + 1000
    assert build_zoo_model("mobilenet_v1", width_multiplier=0.5).op("fc").macs == 512 * 1000
    assert graph.is_chain()


@pytest.mark.parametrize("name", sorted(ZOO))
def test_registry_published_figures(name):
    for row in ZOO[name].published:
        graph = build_zoo_model(name, **dict(row.options))
        assert row.citation
        if row.params is not None:
            assert abs(graph.total_params - row.params) <= row.params_tolerance
        if row.macs is not None:
            assert graph.total_macs == pytest.approx(row.macs, rel=row.macs_rtol)


def test_transformer_params_follow_the_formula():
    for layers, d, heads, d_ff in [(1, 64, 4, 256), (4, 256, 4, 1024), (3, 96, 8, 200)]:
        graph = build_zoo_model(
            "transformer_encoder", layers=layers, d_model=d, heads=heads, d_ff=d_ff, seq_len=10
        )
        per_layer = 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 4 * d
        assert encoder_layer_params(d, d_ff) == per_layer
        assert graph.total_params == layers * per_layer


def test_bert_base_encoder(models):
    graph = models["bert_base_encoder"]
    assert graph.total_params == 85_054_464
    assert 12 * encoder_layer_params(768, 3072) == 85_054_464
    s, d = 128, 768
    assert graph.op("layer0.scores").macs == 12 * s * s * (d // 12)
    assert graph.op("layer0.context").macs == s * s * d
    expected = [
        "q_proj", "k_proj", "v_proj", "scores", "softmax", "context", "out_proj",
        "add1", "ln1", "ffn1", "gelu", "ffn2", "add2", "ln2",
    ]  # fmt: skip
    assert list(graph.order) == ["input"] + [f"layer{i}.{o}" for i in range(12) for o in expected]
    assert graph.predecessors("layer0.add1") == ["input", "layer0.out_proj"]
    assert build_zoo_model("bert_base_encoder", seq_len=64).total_params == 85_054_464


@pytest.mark.parametrize("name", ["resnet18", "resnet50", "mobilenet_v2"])
def test_residual_adds(models, name):
    graph = models[name]
    adds = [op.name for op in graph if op.kind == "elementwise"]
    assert adds and all(len(graph.predecessors(a)) == 2 for a in adds)
    assert not graph.is_chain()


def test_resnet_downsample_branches(models):
    graph = models["resnet18"]
    downsamples = [op.name for op in graph if "downsample.0" in op.name]
    assert downsamples == [f"layer{i}.0.downsample.0" for i in (2, 3, 4)]
    assert graph.predecessors("layer2.0.add") == ["layer2.0.bn2", "layer2.0.downsample.1"]
    assert len([op for op in models["resnet50"] if "downsample.0" in op.name]) == 4
    assert len([op for op in models["resnet50"] if op.kind == "elementwise"]) == 16


def test_alexnet_names_for_chain_splits(models):
    graph = models["alexnet"]
    assert graph.is_chain()
    assert graph.successors("pool5") == ["fc6"]
    assert list(graph.order)[-5:] == ["fc6", "relu6", "fc7", "relu7", "fc8"]
    assert graph.op("fc6").macs == 256 * 6 * 6 * 4096


@pytest.mark.parametrize("name", sorted(ZOO))
def test_graphs_are_dags_with_consistent_edges(models, name):
    graph = models[name]
    assert nx.is_directed_acyclic_graph(graph.graph)
    assert len(graph.entry_ops()) == 1
    for edge in graph.edges():
        assert edge.bytes == graph.op(edge.src).output_bytes
    for op in graph:
        assert op.flops >= 2 * op.macs
        assert op.dtype == "fp32"


@pytest.mark.parametrize("name", ["resnet18", "bert_base_encoder"])
def test_int8_quarters_bytes_keeps_flops(models, name):
    fp32, int8 = models[name], build_zoo_model(name, dtype="int8")
    assert int8.total_flops == fp32.total_flops and int8.total_macs == fp32.total_macs
    assert int8.total_params == fp32.total_params
    assert 4 * int8.weight_bytes == fp32.weight_bytes
    for e32, e8 in zip(fp32.edges(), int8.edges(), strict=True):
        assert 4 * e8.bytes == e32.bytes
    assert {op.dtype for op in int8} == {"int8"}
    assert DTYPE_BYTES["int8"] * 4 == DTYPE_BYTES["fp32"]


def test_unknown_model_names_nearest():
    with pytest.raises(ModelError, match="did you mean 'resnet50'") as info:
        build_zoo_model("resnet5O")
    assert "mobilenet_v1" in str(info.value)  # lists the valid names
    with pytest.raises(ModelError, match="did you mean 'mobilenet_v2'"):
        zoo_options("mobilenetv2")


def test_unknown_option_lists_valid_options():
    with pytest.raises(ModelError, match="width_multiplier, resolution, num_classes") as info:
        build_zoo_model("mobilenet_v1", width=0.5)
    assert "did you mean 'width_multiplier'" in str(info.value)
    with pytest.raises(ModelError, match="did you mean 'resolution'"):
        build_zoo_model("resnet18", resolutoin=160)


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("mobilenet_v1", {"width_multiplier": "half"}, "must be float"),
        ("mobilenet_v1", {"width_multiplier": 0.0}, r"\(0, 4\]"),
        ("resnet18", {"resolution": 224.5}, "must be int"),
        ("resnet18", {"resolution": True}, "must be int"),
        ("alexnet", {"resolution": 32}, ">= 63"),
        ("transformer_encoder", {"d_model": 100, "heads": 3}, "divisible"),
        ("vgg16", {"num_classes": 0}, ">= 1"),
    ],
)
def test_invalid_option_values(name, options, match):
    with pytest.raises(ModelError, match=match):
        build_zoo_model(name, **options)


def test_invalid_dtype():
    with pytest.raises(ModelError, match="dtype"):
        build_zoo_model("alexnet", dtype="fp64")


def test_zoo_options_from_signature():
    assert zoo_options("mobilenet_v1") == {
        "width_multiplier": (float, 1.0),
        "resolution": (int, 224),
        "num_classes": (int, 1000),
    }
    assert set(zoo_options("transformer_encoder")) == {
        "layers", "d_model", "heads", "d_ff", "seq_len",
    }  # fmt: skip
    assert zoo_options("bert_base_encoder") == {"seq_len": (int, 128)}
    # an int given for a float option (as YAML writes 1) is accepted
    assert build_zoo_model("mobilenet_v1", width_multiplier=1).total_params == 4_231_976


def test_options_change_the_graph():
    small = build_zoo_model("resnet18", resolution=112, num_classes=10)
    assert small.op("fc").params == 512 * 10 + 10
    assert small.total_macs < build_zoo_model("resnet18").total_macs / 3.5
    # AlexNet at another resolution keeps torchvision's adaptive pool to 6x6
    wide = build_zoo_model("alexnet", resolution=256)
    assert "avgpool" in wide and wide.op("fc6").params == 256 * 36 * 4096 + 4096


def test_zoo_table(models):
    table = zoo_table()
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["name", "ops", "params", "macs", "description"]
    assert list(table["name"]) == zoo_names()
    row = table.set_index("name").loc["resnet50"]
    assert row["params"] == 25_557_032 and row["ops"] == len(models["resnet50"])
