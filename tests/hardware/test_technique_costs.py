"""Cost of weight-pruned and fused ops on units with and without the matching kernels."""

from __future__ import annotations

import pytest

from simulator.errors import SocsimError
from simulator.graph.model import Op
from simulator.hardware.cost import compute_time_s, memory_time_s, op_time_s, unsupported_reason
from simulator.hardware.units import ComputeUnit

SPARSE = {"sparsity": 0.75, "weight_format": "bitmask"}
OP = Op(
    "fc", "fc", flops=8e6, macs=4e6, params=1000, input_elems=100, output_elems=10, attrs=SPARSE
)


def unit(**fields) -> ComputeUnit:
    return ComputeUnit(
        "u", "cpu", peak_flops={"fp32": 1e9}, memory_bandwidth_bytes_per_s=1e6, **fields
    )


def test_dense_kernels_run_a_pruned_op_at_dense_cost():
    dense_op = Op("fc", "fc", flops=8e6, macs=4e6, params=1000, input_elems=100, output_elems=10)
    plain = unit()
    assert op_time_s(OP, plain) == op_time_s(dense_op, plain)
    assert OP.weight_bytes == 250 * 4 + 125 < dense_op.weight_bytes == 4000


def test_sparse_kernels_skip_their_share_of_zeros_and_read_compressed():
    sparse = unit(sparse_efficiency=0.5)
    assert compute_time_s(OP, sparse) == pytest.approx(8e6 * (1 - 0.5 * 0.75) / 1e9, rel=1e-12)
    assert memory_time_s(OP, sparse) == pytest.approx((400 + 1125 + 40) / 1e6, rel=1e-12)
    assert memory_time_s(OP, unit()) == pytest.approx((400 + 4000 + 40) / 1e6, rel=1e-12)


def test_fused_ops_need_fused_kernels():
    fused = Op("conv1", "conv", flops=10, attrs={"fused": ("conv1", "bn1", "relu1")})
    assert unsupported_reason(fused, unit(), "u") is None
    reason = unsupported_reason(fused, unit(fused_kernels=False), "u")
    assert reason == "unit has no fused kernel for conv1+bn1+relu1"


def test_sparse_efficiency_outside_unit_interval_is_rejected():
    with pytest.raises(SocsimError, match=r"sparse_efficiency must be in \[0, 1\]"):
        unit(sparse_efficiency=1.5)
