"""Views (a reshape that aliases its input) cost dispatch only: hand-computed times.

A Reshape, Flatten, Squeeze or Identity copies nothing in onnxruntime or TFLite, so the
roofline charges it no memory time and the node's DRAM no traffic; a Transpose of the
same bytes (kind ``reshape`` too, no ``view`` attribute) still pays ``bytes / bandwidth``.
"""

from __future__ import annotations

import math

import pytest

from simulator.graph.layers import GraphBuilder
from simulator.graph.model import Op
from simulator.hardware.cost import (
    dram_traffic_bytes,
    memory_time_s,
    memory_traffic,
    moves_bytes,
    op_time_parts_s,
    op_time_s,
)
from simulator.hardware.kernel_features import FEATURES
from simulator.hardware.memory import CacheLevel
from simulator.hardware.predictor import KernelPredictor
from simulator.hardware.units import ComputeUnit

EXACT = 1e-12
N_ELEMS = 250_000  # fp32: 1 MB in, 1 MB out -> N = 2 MB


def unit(**changes) -> ComputeUnit:
    """d = 5 us dispatch, B = 1 GB/s, 4 cores with a 1 us barrier per doubling."""
    fields = {
        "name": "cpu",
        "kind": "cpu",
        "peak_flops": {"fp32": 10e9},
        "efficiency": {"default": 0.5},
        "memory_bandwidth_bytes_per_s": 1e9,
        "dispatch_s": 5e-6,
        "cores": 4,
        "barrier_s": 1e-6,
    }
    fields.update(changes)
    return ComputeUnit(**fields)


def reshape(name: str, **attrs: int) -> Op:
    return Op(name, "reshape", input_elems=N_ELEMS, output_elems=N_ELEMS, attrs=attrs)


VIEWS = [reshape("flat", view=1, flatten=1), reshape("sq", view=1), reshape("old", flatten=1)]
TRANSPOSE = reshape("transpose")


@pytest.mark.parametrize("view", VIEWS, ids=lambda op: op.name)
def test_a_view_takes_its_fixed_costs_only(view):
    # d + barrier(4) = 5 us + 1 us x log2(4) = 7 us; was 7 us + 2 MB / 1 GB/s = 2.007 ms
    assert not moves_bytes(view)
    assert op_time_s(view, unit()) == pytest.approx(7e-6, rel=EXACT)
    assert op_time_parts_s(view, unit()) == (pytest.approx(7e-6, rel=EXACT), 0.0, 0.0)
    assert memory_time_s(view, unit()) == 0.0
    assert dram_traffic_bytes(view, unit()) == 0.0
    # the predictor's features do not change: the op still spans its 2 MB
    assert view.bytes_moved == 2_000_000
    assert FEATURES["bytes"][1](view) == 2e6 and FEATURES["view"][1](view) == 1.0


def test_a_transpose_of_the_same_bytes_still_pays_bytes_over_bandwidth():
    assert moves_bytes(TRANSPOSE)
    assert op_time_s(TRANSPOSE, unit()) == pytest.approx(7e-6 + 2e-3, rel=EXACT)
    assert dram_traffic_bytes(TRANSPOSE, unit()) == 2e6
    assert FEATURES["view"][1](TRANSPOSE) == 0.0


def test_a_view_moves_nothing_at_any_cache_level():
    # a 2 MB working set overflows the 200 KB l2: the copy's bytes all come from DRAM
    cached = unit(caches=(CacheLevel("l2", 2e5, 8e10),))
    assert [t.nbytes for t in memory_traffic(TRANSPOSE, cached)] == [0.0, 2e6]
    assert op_time_s(TRANSPOSE, cached) == pytest.approx(7e-6 + 2e-3, rel=EXACT)
    view = VIEWS[0]
    assert [t.nbytes for t in memory_traffic(view, cached)] == [0.0, 0.0]
    assert dram_traffic_bytes(view, cached) == 0.0
    assert op_time_s(view, cached) == pytest.approx(7e-6, rel=EXACT)


def test_only_a_reshape_can_be_a_view():
    # an elementwise op that happened to carry the attribute still reads and writes
    odd = Op("relu", "elementwise", input_elems=N_ELEMS, output_elems=N_ELEMS, attrs={"view": 1})
    assert moves_bytes(odd)
    assert op_time_s(odd, unit()) == pytest.approx(7e-6 + 2e-3, rel=EXACT)


def test_graph_builder_marks_its_views():
    g = GraphBuilder(model="net")
    x = g.input((8, 16, 16), name="in")
    g.flatten(x, name="flat")
    graph = g.build()
    assert graph.op("in").is_view and graph.op("flat").is_view
    # 2,048 fp32 elements in and out: 16 KB that a copy would move, a view does not
    assert op_time_s(graph.op("flat"), unit()) == pytest.approx(7e-6, rel=EXACT)


def predicted_reshape_unit() -> ComputeUnit:
    """A predictor with one reshape model of one leaf: every reshape's kernel takes 1 ms."""
    artifact = {
        "format": "socsim-kernel-predictor",
        "version": 1,
        "features": {"bytes": "bytes read and written"},
        "provenance": {"host": "hand-made"},
        "overhead_s": 1e-5,
        "models": [
            {
                "kind": "reshape",
                "dtype": "fp32",
                "threads": 4,
                "features": ["bytes"],
                "target": "log_time",
                "baseline": {"fixed_s": 1e-6, "flop_rate_per_s": 1e9, "byte_rate_per_s": 1e9},
                "ensemble": {"combine": "sum", "offset": 0.0, "scale": 1.0},
                "trees": [
                    {
                        "feature": [-1],
                        "threshold": [0.0],
                        "left": [-1],
                        "right": [-1],
                        "value": [math.log(1e-3)],
                    }
                ],
                "range": {"bytes": [0.0, 1e9]},
                "training": {"rows": 2},
            }
        ],
    }
    return unit(predictor=KernelPredictor(artifact))


def test_a_predicted_view_keeps_its_prediction_and_pulls_no_dram():
    predicted = predicted_reshape_unit()
    # overhead 10 us + the leaf's 1 ms, whether the reshape copies or not
    for op in (VIEWS[0], TRANSPOSE):
        assert op_time_s(op, predicted) == pytest.approx(1e-5 + 1e-3, rel=EXACT)
    assert dram_traffic_bytes(VIEWS[0], predicted) == 0.0
    # no roofline term: the kernel time is split as compute (predicted_parts_s's rule)
    assert op_time_parts_s(VIEWS[0], predicted) == pytest.approx((1e-5, 1e-3, 0.0), rel=EXACT)
    # the copy's roofline is all memory: its predicted kernel time is memory time
    assert op_time_parts_s(TRANSPOSE, predicted) == pytest.approx((1e-5, 0.0, 1e-3), rel=EXACT)
