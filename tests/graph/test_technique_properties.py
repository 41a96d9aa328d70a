"""Deployment techniques: hypothesis properties over zoo models and technique lists."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.errors import ModelError
from simulator.graph.techniques import apply_techniques
from simulator.graph.techniques.fusion import fuse
from simulator.graph.techniques.prune import prune_channels, prune_weights
from simulator.graph.techniques.quantize import quantize
from simulator.graph.techniques.substitute import DW_SUFFIX, depthwise_separable
from simulator.graph.zoo import build_zoo_model

MODELS = ("mobilenet_v1", "resnet18", "alexnet", "mobilenet_v2")


@cache
def model(name: str):
    small = {"mobilenet_v1": {"width_multiplier": 0.25, "resolution": 64}}
    return build_zoo_model(name, **small.get(name, {"resolution": 64}))


def edge_set(graph) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in graph.edges()}


ratios = st.floats(min_value=0.0, max_value=0.95, allow_nan=False)
names = st.sampled_from(MODELS)
technique = st.one_of(
    st.builds(lambda d: {"name": "quantize", "dtype": d}, st.sampled_from(["fp16", "int8"])),
    st.just({"name": "fuse"}),
    st.builds(lambda r: {"name": "prune_channels", "ratio": r}, ratios),
    st.builds(
        lambda s, f: {"name": "prune_weights", "sparsity": s, "format": f},
        ratios,
        st.sampled_from(["csr", "bitmask"]),
    ),
    st.just({"name": "depthwise_separable"}),
)


@settings(max_examples=25, deadline=None)
@given(names, ratios, ratios)
def test_channel_pruning_is_monotonic_in_the_ratio(name, r1, r2):
    low, high = sorted((r1, r2))
    a, b = prune_channels(model(name), low), prune_channels(model(name), high)
    assert b.total_macs <= a.total_macs <= model(name).total_macs
    assert b.total_params <= a.total_params
    assert sum(e.bytes for e in b.edges()) <= sum(e.bytes for e in a.edges())
    assert a.order == model(name).order  # no op added or removed
    assert edge_set(a) == edge_set(model(name))


@settings(max_examples=25, deadline=None)
@given(names, st.lists(st.sampled_from(["fp32", "fp16", "int8"]), min_size=1, max_size=4))
def test_quantize_never_increases_bytes(name, dtypes):
    graph = model(name)
    for dtype in dtypes:
        narrowed = quantize(graph, dtype)
        assert narrowed.weight_bytes <= graph.weight_bytes
        for e in narrowed.edges():
            assert e.bytes <= graph.edge(e.src, e.dst).bytes
        assert narrowed.total_flops == graph.total_flops
        assert narrowed.order == graph.order and edge_set(narrowed) == edge_set(graph)
        graph = narrowed


@settings(max_examples=25, deadline=None)
@given(names, ratios, ratios, st.sampled_from(["csr", "bitmask"]))
def test_weight_pruning_storage_is_monotonic_and_work_unchanged(name, s1, s2, fmt):
    low, high = sorted((s1, s2))
    a, b = prune_weights(model(name), low, fmt), prune_weights(model(name), high, fmt)
    assert b.weight_bytes <= a.weight_bytes
    assert a.total_flops == b.total_flops == model(name).total_flops
    assert a.total_params == model(name).total_params
    assert a.order == model(name).order and edge_set(b) == edge_set(model(name))


@settings(max_examples=20, deadline=None)
@given(names)
def test_fusion_keeps_work_and_every_name_is_accounted_for(name):
    graph = model(name)
    fused = fuse(graph)
    assert fused.total_macs == graph.total_macs
    assert abs(fused.total_flops - graph.total_flops) <= 1e-9 * graph.total_flops
    covered = [n for op in fused for n in (op.fused or (op.name,))]
    assert sorted(covered) == sorted(graph.order)
    assert sum(op.bytes_moved for op in fused) <= sum(op.bytes_moved for op in graph)
    with pytest.raises(ModelError, match="already fused"):  # nothing left: an error, no no-op
        fuse(fused)


@settings(max_examples=20, deadline=None)
@given(names)
def test_substitution_keeps_names_and_adds_one_depthwise_per_conv(name):
    graph = model(name)
    sub = depthwise_separable(graph)
    added = set(sub.order) - set(graph.order)
    assert set(graph.order) <= set(sub.order)
    assert all(n.endswith(DW_SUFFIX) and n.removesuffix(DW_SUFFIX) in graph for n in added)
    assert sub.total_macs <= graph.total_macs


@settings(max_examples=30, deadline=None)
@given(names, st.lists(technique, max_size=4))
def test_any_technique_list_gives_a_valid_dag_with_no_more_work(name, techniques):
    try:
        graph, _ = apply_techniques(model(name), techniques)
    except ModelError as exc:
        # every zoo model has ops each technique can transform: only after a fusion or
        # a substitution (fused convs are not substituted, substituted ones are
        # separable, nothing is left to fuse) can one match none
        assert "matched no op it can transform" in exc.message
        failed = int(exc.message.split("]", 1)[0].removeprefix("techniques["))
        structural = ("fuse", "depthwise_separable")
        assert techniques[failed]["name"] in structural
        assert any(t["name"] in structural for t in techniques[:failed])
        return
    assert graph.total_macs <= model(name).total_macs
    assert graph.weight_bytes <= model(name).weight_bytes
    assert len(graph.entry_ops()) == len(model(name).entry_ops())
