"""Validation of compute units and nodes (simulator.hardware.units)."""

from __future__ import annotations

import math
import pickle

import pytest

from simulator.errors import SocsimError
from simulator.hardware.units import ComputeUnit, Node


def test_defaults():
    unit = ComputeUnit("cpu", "cpu")
    assert unit.cores == 1
    assert dict(unit.peak_flops) == {}
    assert dict(unit.efficiency) == {"default": 1.0}
    assert unit.memory_bandwidth_bytes_per_s == math.inf
    assert unit.memory_bytes == math.inf
    assert unit.supports is None
    assert unit.runs_kind("attention")


def test_supports_is_frozen_and_checked():
    unit = ComputeUnit("npu", "npu", supports={"conv", "fc"})
    assert unit.supports == frozenset({"conv", "fc"})
    assert unit.runs_kind("conv")
    assert not unit.runs_kind("attention")
    with pytest.raises(SocsimError, match=r"unknown op kinds in supports: \['convv'\]"):
        ComputeUnit("npu", "npu", supports={"convv"})


def test_unit_pickles_and_is_immutable():
    unit = ComputeUnit("gpu", "gpu", peak_flops={"fp16": 2e12}, efficiency={"default": 0.5})
    assert pickle.loads(pickle.dumps(unit)) == unit
    with pytest.raises(TypeError):
        unit.peak_flops["fp32"] = 1.0  # FrozenMap


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"kind": "tpu"}, "kind must be one of"),
        ({"peak_flops": {"fp64": 1e9}}, "peak for 'fp64'"),
        ({"peak_flops": {"fp32": 0.0}}, "peak for 'fp32'"),
        ({"peak_flops": {"fp32": math.nan}}, "peak for 'fp32'"),
        ({"efficiency": {"conv": 0.5}}, "efficiency needs a 'default' entry"),
        ({"efficiency": {"default": 1.5}}, r"efficiency\['default'\] must be in \(0, 1\]"),
        ({"efficiency": {"default": 0.0}}, r"efficiency\['default'\]"),
        ({"efficiency": {"default": 1.0, "fc": math.nan}}, r"efficiency\['fc'\]"),
        ({"cores": 0}, "cores must be >= 1"),
        ({"memory_bandwidth_bytes_per_s": 0.0}, "memory bandwidth and capacity must be > 0"),
        ({"memory_bytes": -1.0}, "memory bandwidth and capacity must be > 0"),
        ({"dispatch_s": -1e-6}, "dispatch_s must be >= 0"),
        ({"idle_w": math.nan}, "idle_w must be >= 0"),
        ({"active_w": -2.0}, "active_w must be >= 0"),
    ],
)
def test_unit_rejects(changes, needle):
    fields = {"name": "u", "kind": "cpu", **changes}
    with pytest.raises(SocsimError, match=needle) as info:
        ComputeUnit(**fields)
    assert "unit 'u'" in str(info.value)


def test_node_lookup_and_checks():
    a, b = ComputeUnit("a", "cpu"), ComputeUnit("b", "gpu")
    node = Node("phone", "device", (a, b), sync_s=1e-4, shared_memory_bandwidth_bytes_per_s=1e9)
    assert node.unit("b") is b
    with pytest.raises(SocsimError, match="node 'phone' has no unit 'c'"):
        node.unit("c")
    with pytest.raises(SocsimError, match="role must be one of"):
        Node("x", "server", (a,))
    with pytest.raises(SocsimError, match="has no compute units"):
        Node("x", "device", ())
    with pytest.raises(SocsimError, match="duplicate unit names"):
        Node("x", "device", (a, ComputeUnit("a", "gpu")))
    with pytest.raises(SocsimError, match="sync_s must be >= 0"):
        Node("x", "device", (a,), sync_s=-1.0)
    with pytest.raises(SocsimError, match="shared memory bandwidth must be > 0"):
        Node("x", "device", (a,), shared_memory_bandwidth_bytes_per_s=0.0)
