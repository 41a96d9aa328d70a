"""The claims docs/techniques.md makes about the shipped scorecards (scenarios/score/).

Each scenario is scored once per module (about 1-3 s each); the figures asserted here
are the ones the doc's five-indicator tables quote.
"""

from __future__ import annotations

from functools import cache

import pandas as pd
import pytest

from simulator.score import score_scenario
from simulator.spec import load_scenario


@cache
def card(name: str) -> pd.DataFrame:
    frame = score_scenario(load_scenario(f"scenarios/score/{name}.yaml"))
    return frame.set_index(["combination", "placement"])


def test_int8_lowers_latency_and_energy_for_a_small_accuracy_loss():
    c = card("quantization")
    fp32, int8 = c.loc[("fp32", "cpu")], c.loc[("int8_ptq", "cpu")]
    assert fp32.latency_p50_s / int8.latency_p50_s == pytest.approx(3.72, abs=0.01)
    assert int8.device_inferences_per_j / fp32.device_inferences_per_j > 3.5
    assert fp32.accuracy_top1 - int8.accuracy_top1 == pytest.approx(0.1)  # Krishnamoorthi
    assert fp32.accuracy_top1 - c.loc[("int8_qat", "cpu")].accuracy_top1 == pytest.approx(0.2)
    assert int8.peak_memory_bytes * 4 == fp32.peak_memory_bytes
    # the NPU has no fp32: everything falls back (flexibility 0); int8 makes it usable
    assert c.loc[("fp32", "npu")].flexibility == 0.0
    assert c.loc[("fp32", "npu")].latency_p50_s == fp32.latency_p50_s
    npu = c.loc[("int8_ptq", "npu")]
    assert npu.flexibility == 1.0 and npu.latency_p50_s < int8.latency_p50_s
    assert bool(npu.pareto) and not bool(fp32.pareto)


def test_weight_pruning_without_sparse_kernels_saves_memory_not_time():
    c = card("weight_pruning")
    dense, bitmask, csr = (
        c.loc[(k, "cpu_dense_kernels")] for k in ("dense", "sparse75_bitmask", "sparse75_csr")
    )
    assert bitmask.latency_p50_s == dense.latency_p50_s == csr.latency_p50_s
    assert bitmask.device_inferences_per_j == dense.device_inferences_per_j
    assert bitmask.peak_memory_bytes / dense.peak_memory_bytes == pytest.approx(0.3686, abs=1e-3)
    assert bitmask.weight_bytes < csr.weight_bytes < dense.weight_bytes
    gpu_dense = c.loc[("dense", "gpu_sparse_kernels")]
    gpu_sparse = c.loc[("sparse75_bitmask", "gpu_sparse_kernels")]
    assert gpu_sparse.latency_p50_s / gpu_dense.latency_p50_s == pytest.approx(0.774, abs=2e-3)


def test_channel_pruning_saves_time_roughly_in_proportion():
    c = card("channel_pruning")
    full = c.loc[("full", "cpu")]
    for name, macs_share in (("prune25", 0.5636), ("prune50", 0.2515)):
        row = c.loc[(name, "cpu")]
        assert row.macs / full.macs == pytest.approx(macs_share, abs=1e-3)
        time_share = row.latency_p50_s / full.latency_p50_s
        assert time_share == pytest.approx(macs_share, rel=0.05)
    assert c.loc[("prune50", "cpu")].accuracy_top1 == pytest.approx(70.092)


def test_fusion_helps_most_on_dispatch_bound_small_models():
    c = card("fusion")

    def saving(model):
        before = c.loc[(model, "gpu")].latency_p50_s
        return 1 - c.loc[(f"{model}_fused", "gpu")].latency_p50_s / before

    assert saving("small") == pytest.approx(0.636, abs=0.005)
    assert saving("big") == pytest.approx(0.289, abs=0.005)
    assert c.loc[("small_fused", "gpu")].ops == 30 and c.loc[("small", "gpu")].ops == 84
    assert c.loc[("small_fused", "gpu")].custom_ops == 27
    assert c.loc[("small_fused", "gpu")].accuracy_top1 == c.loc[("small", "gpu")].accuracy_top1


def test_lightweight_mobilenet_dwarfs_every_other_technique():
    c = card("lightweight")
    base = c.loc[("vgg16", "cpu")].latency_p50_s
    speedups = {k: base / c.loc[(k, "cpu")].latency_p50_s for k, _ in c.index}
    assert speedups["mobilenet_v1"] == pytest.approx(23.9, abs=0.1)
    others = {k: v for k, v in speedups.items() if k not in ("vgg16", "mobilenet_v1")}
    assert max(others.values()) == pytest.approx(5.61, abs=0.02)  # substitution
    assert speedups["mobilenet_v1"] > 3 * max(others.values())
    mobilenet = c.loc[("mobilenet_v1", "cpu")]
    assert mobilenet.peak_memory_bytes < min(c.peak_memory_bytes.drop(("mobilenet_v1", "cpu")))
    assert mobilenet.accuracy_top1 == 70.6 and bool(mobilenet.pareto)


def test_unsupported_op_fallback_makes_the_accelerator_slower_than_cpu():
    c = card("fallback")
    cpu, npu = c.loc[("int8", "cpu_only")], c.loc[("int8", "npu_with_fallback")]
    assert npu.latency_p50_s / cpu.latency_p50_s == pytest.approx(1.701, abs=0.005)
    assert npu.unsupported_ops == 4  # one softmax per encoder layer
    assert npu.flexibility == pytest.approx(53 / 57)
    assert npu.device_inferences_per_j > cpu.device_inferences_per_j  # still the thriftier


def test_full_offload_raises_device_efficiency_when_the_uplink_is_good():
    c = card("offload")
    local, gpu = c.loc[("fp32", "phone_cpu")], c.loc[("fp32", "phone_gpu")]
    wifi, lte = c.loc[("fp32", "edge_over_wifi")], c.loc[("fp32", "cloud_over_lte")]
    assert wifi.device_inferences_per_j / local.device_inferences_per_j == pytest.approx(
        22.9, abs=0.1
    )
    assert wifi.device_inferences_per_j > 3 * gpu.device_inferences_per_j
    assert lte.device_inferences_per_j < local.device_inferences_per_j  # a poor uplink loses
    assert bool(wifi.pareto)


def test_techniques_act_on_the_imported_onnx_model():
    """scenarios/score/onnx_techniques.yaml: small_cnn.onnx (508224 MACs: conv1 110592,
    dw1 36864, pw1 65536, conv2 294912, fc 320) under fuse: ort."""
    c = card("onnx_techniques")
    ort = c.loc[("ort", "cpu")]
    assert ort.macs == 508224
    # only conv2 is prunable (conv1 / pw1 feed the residual add; fc is the answer):
    # 32 -> 16 channels halves its 32 x 8 x 8 x 144 MACs, and the fc reads 16 inputs
    pruned = c.loc[("ort_pruned50", "cpu")]
    assert ort.macs - pruned.macs == 294912 // 2 + 320 // 2
    # weights: conv2 16 x 144 + 16 (folded BatchNorm bias) and fc 16 x 10 of 4 bytes gone
    assert ort.weight_bytes - pruned.weight_bytes == 4 * (16 * 144 + 16 + 16 * 10)
    assert pruned.latency_p50_s < ort.latency_p50_s
    assert c.loc[("ort_int8", "cpu")].weight_bytes * 4 == ort.weight_bytes
    # conv1 and conv2 (3 x 3, groups 1) become depthwise + pointwise before fusing:
    # 3*256*9 + 16*256*3 replace 110592; 16*64*9 + 32*64*16 replace 294912
    separable = c.loc[("separable_then_fused", "cpu")]
    assert separable.macs == 508224 - 110592 - 294912 + 6912 + 12288 + 9216 + 32768
    assert separable.accuracy_top1 == 79.0
