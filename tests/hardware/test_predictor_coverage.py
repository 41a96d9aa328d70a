"""A unit's predictor that does not cover an op says so once per cause (issue 21 item
4): no model for the op's (kind, dtype), or a model needing a feature the op lacks; an
op it covers, or one with a time table, warns nothing."""

from __future__ import annotations

import warnings

from calibration.predictor_synth import conv_op, fc_op
from simulator.graph.model import Op
from simulator.hardware.cost import op_time_s
from simulator.hardware.predictor import KernelPredictor, PredictorCoverageWarning
from simulator.hardware.units import ComputeUnit
from tests.hardware.test_predictor import tiny_artifact

FIX = "give the ops a time table (time_ms) or calibrate a model for them"


def _costs(ops) -> list[str]:
    """The PredictorCoverageWarning messages of costing ``ops`` on one predictor unit."""
    predictor = KernelPredictor(tiny_artifact(), source="tiny.json")
    unit = ComputeUnit("cpu", "cpu", peak_flops={"fp32": 1e10, "fp16": 2e10}, predictor=predictor)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for op in ops:
            op_time_s(op, unit)
    return [str(w.message) for w in caught if w.category is PredictorCoverageWarning]


def test_an_uncovered_kind_and_dtype_warn_once_each():
    fcs = [fc_op(f"fc{i}", 1, 256, 128 + i) for i in range(3)]
    half = Op("half", "conv", flops=1e5, dtype="fp16")
    assert _costs([*fcs, half, half]) == [
        "predictor tiny.json: no model for fc ops in fp32 (e.g. op 'fc0'; it has models "
        f"for conv fp32): the unit's roofline costs them; {FIX}",
        "predictor tiny.json: no model for conv ops in fp16 (e.g. op 'half'; it has models "
        f"for conv fp32): the unit's roofline costs them; {FIX}",
    ]


def test_a_missing_feature_warns_once():
    shapeless = [Op(f"conv{i}", "conv", flops=1e5 + i) for i in range(2)]
    assert _costs(shapeless) == [
        "predictor tiny.json: conv fp32 model needs feature(s) kernel that op 'conv0' "
        f"lacks: the unit's roofline costs such ops; {FIX}"
    ]


def test_covered_and_tabled_ops_do_not_warn():
    covered = conv_op("small", 8, 8, 3, 1, 8)
    tabled = Op("t", "fc", flops=1e5, time_s={"cpu": 0.25})
    assert _costs([covered, tabled]) == []
