"""Learned kernel predictors in the cost model: hand-computed trees, malformed artifacts,
roofline fallback, extrapolation warnings, Amdahl scaling and DVFS parts."""

from __future__ import annotations

import copy
import gzip
import json
import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibration.predictor_synth import conv_op, fc_op
from simulator.graph.model import Op
from simulator.hardware.cost import cost_model, op_time_parts_s, op_time_s
from simulator.hardware.predictor import (
    KernelPredictor,
    PredictorFormatError,
    PredictorRangeWarning,
    load_predictor,
)
from simulator.hardware.units import ComputeUnit

LOG_1MS, LOG_2MS = math.log(1e-3), math.log(2e-3)


def tiny_artifact(target: str = "log_time", threads: int = 1) -> dict:
    """One conv model, one tree: flops <= 1e6 -> leaf 1 (log 1 ms), else leaf 2 (log 2 ms)."""
    return {
        "format": "socsim-kernel-predictor",
        "version": 1,
        "features": {"flops": "FLOPs", "kernel": "kernel size"},
        "provenance": {"host": "hand-made"},
        "overhead_s": 1e-5,
        "models": [
            {
                "kind": "conv",
                "dtype": "fp32",
                "threads": threads,
                "features": ["flops", "kernel"],
                "target": target,
                "baseline": {"fixed_s": 1e-6, "flop_rate_per_s": 1e9, "byte_rate_per_s": 1e9},
                "ensemble": {"combine": "sum", "offset": 0.0, "scale": 1.0},
                "trees": [
                    {
                        "feature": [0, -1, -1],
                        "threshold": [1e6, 0.0, 0.0],
                        "left": [1, -1, -1],
                        "right": [2, -1, -1],
                        "value": [0.0, LOG_1MS, LOG_2MS],
                    }
                ],
                "range": {"flops": [1e4, 1e8], "kernel": [1, 7]},
                "training": {"rows": 3},
            }
        ],
    }


def unit_with(predictor: KernelPredictor | None, **extra) -> ComputeUnit:
    fields = {"peak_flops": {"fp32": 1e10}, "memory_bandwidth_bytes_per_s": 1e10}
    return ComputeUnit("cpu", "cpu", dispatch_s=5e-6, predictor=predictor, **{**fields, **extra})


SMALL = conv_op("small", 8, 8, 3, 1, 8)  # 2 x 8 x 64 x 72 = 73,728 FLOPs
LARGE = conv_op("large", 16, 32, 3, 1, 28)  # 7.2 MFLOPs


def test_hand_built_tree_gives_hand_computed_times():
    unit = unit_with(KernelPredictor(tiny_artifact()))
    assert SMALL.flops == 73_728 and LARGE.flops == 7_225_344
    assert op_time_s(SMALL, unit) == pytest.approx(1e-5 + 1e-3, rel=1e-12)
    assert op_time_s(LARGE, unit) == pytest.approx(1e-5 + 2e-3, rel=1e-12)


def test_log_ratio_target_multiplies_the_baseline():
    data = tiny_artifact("log_ratio")
    data["models"][0]["trees"][0]["value"] = [0.0, math.log(2.0), math.log(3.0)]
    unit = unit_with(KernelPredictor(data))
    # baseline = 1 µs + max(flops / 1 GFLOP/s, bytes / 1 GB/s); SMALL moves 4,672 B
    assert SMALL.bytes_moved == 4 * (512 + 584 + 512)
    expected = 1e-5 + 2.0 * (1e-6 + max(73_728 / 1e9, 6_432 / 1e9))
    assert op_time_s(SMALL, unit) == pytest.approx(expected, rel=1e-12)


def test_which_model_costs_an_op_and_roofline_fallback():
    unit = unit_with(KernelPredictor(tiny_artifact()))
    plain = unit_with(None)
    fc = fc_op("fc", 1, 256, 128)
    shapeless = Op("conv_x", "conv", flops=1e5, input_elems=100, output_elems=100)
    tabled = Op("t", "conv", flops=1e5, time_s={"cpu": 0.25})
    assert cost_model(SMALL, unit) == "predictor"
    for op in (fc, shapeless):  # no fc model; a conv without shape attrs lacks `kernel`
        assert cost_model(op, unit) == "roofline"
        assert op_time_s(op, unit) == op_time_s(op, plain)
    assert cost_model(tabled, unit) == "table" and op_time_s(tabled, unit) == 0.25
    assert cost_model(SMALL, plain) == "roofline"


def test_a_predicted_op_has_no_model_for_another_dtype():
    unit = unit_with(KernelPredictor(tiny_artifact()), peak_flops={"fp32": 1e10, "fp16": 2e10})
    half = Op("half", "conv", flops=SMALL.flops, dtype="fp16", attrs=dict(SMALL.attrs))
    assert cost_model(half, unit) == "roofline"


def test_dvfs_parts_split_the_prediction_like_the_roofline():
    unit = unit_with(KernelPredictor(tiny_artifact()))
    fixed, compute, memory = op_time_parts_s(LARGE, unit)
    assert fixed == 1e-5
    assert fixed + max(compute, memory) == op_time_s(LARGE, unit)
    # roofline: 7.2 MFLOP / 10 GFLOP/s = 722.5 µs vs (bytes / 10 GB/s) -> compute-bound
    roof_compute = LARGE.flops / 1e10
    roof_memory = LARGE.bytes_moved / 1e10
    assert compute == pytest.approx(2e-3, rel=1e-12)
    assert memory == pytest.approx(2e-3 * roof_memory / roof_compute, rel=1e-12)


def test_amdahl_scales_from_the_measured_threads():
    unit = unit_with(KernelPredictor(tiny_artifact(threads=1)), cores=4)
    op = Op("half_parallel", "conv", flops=SMALL.flops, parallel_fraction=0.5, attrs=SMALL.attrs)
    with pytest.warns(PredictorRangeWarning, match="measured at 1 thread"):
        got = op_time_s(op, unit)
    # S(0.5, 4) = 1 / (0.5 + 0.125) = 1.6
    assert got == pytest.approx(1e-5 + 1e-3 / 1.6, rel=1e-12)


def test_extrapolation_warns_once_per_cause():
    predictor = KernelPredictor(tiny_artifact())
    huge = [conv_op(f"h{i}", 64, 64, 3, 1, 64 + i) for i in range(3)]  # > 1e8 FLOPs each
    wide = conv_op("wide", 64, 64, 9, 1, 64)  # kernel 9 > 7 and flops above
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for op in [*huge, wide, *huge]:
            predictor.time_s(op, 1)
    messages = [str(w.message) for w in caught if w.category is PredictorRangeWarning]
    assert len(messages) == 2
    assert "flops" in messages[0] and "above the training range" in messages[0]
    assert "kernel = 9 is above the training range [1, 7]" in messages[1]


def test_predictions_are_memoised_per_op_and_cores():
    predictor = KernelPredictor(tiny_artifact())
    with pytest.warns(PredictorRangeWarning):  # once: measured at 1 thread, run on 2
        for _ in range(3):
            predictor.time_s(SMALL, 1)
            predictor.time_s(SMALL, 2)
    assert sorted(cores for _, cores in predictor._memo) == [1, 2]


def test_equal_content_equal_predictors_and_units_pickle():
    a, b = KernelPredictor(tiny_artifact()), KernelPredictor(tiny_artifact())
    assert a == b and hash(a) == hash(b)
    unit = unit_with(a)
    again = pickle.loads(pickle.dumps(unit))
    assert again == unit and op_time_s(SMALL, again) == op_time_s(SMALL, unit)


# -- malformed artifacts -------------------------------------------------------------------
def _tree(data):
    return data["models"][0]["trees"][0]


MALFORMED = {
    "wrong format": (lambda d: d.update(format="other"), "format: expected 'socsim-kernel"),
    "future version": (lambda d: d.update(version=2), "version: this socsim reads version 1"),
    "no models": (lambda d: d.pop("models"), "missing key 'models'"),
    "unknown feature": (
        lambda d: d["features"].update(shoe_size="?"),
        "features.shoe_size: unknown feature",
    ),
    "undefined model feature": (
        lambda d: d["models"][0]["features"].append("bytes"),
        "models[0].features[2]: 'bytes' is not defined",
    ),
    "child out of range": (
        lambda d: _tree(d)["right"].__setitem__(0, 7),
        "models[0].trees[0].right[0]: expected -1 (leaf, with the other child -1) or a node",
    ),
    "cycle": (
        lambda d: _tree(d)["left"].__setitem__(0, 0),
        "trees[0].left[0]: expected -1 (leaf",
    ),
    "shared child": (
        lambda d: _tree(d)["right"].__setitem__(0, 1),
        "node 1 has 2 parents",
    ),
    "feature index": (
        lambda d: _tree(d)["feature"].__setitem__(0, 5),
        "trees[0].feature[0]: expected a feature index in [0, 2), got 5",
    ),
    "ragged arrays": (
        lambda d: _tree(d)["value"].pop(),
        "expected arrays of one non-zero length",
    ),
    "text threshold": (
        lambda d: _tree(d)["threshold"].__setitem__(0, "1e6"),
        "trees[0].threshold[0]: expected a number, got '1e6'",
    ),
    "bool child": (
        lambda d: _tree(d)["left"].__setitem__(1, True),
        "trees[0].left[1]: expected an integer, got True",
    ),
    "missing range": (
        lambda d: d["models"][0]["range"].pop("kernel"),
        "models[0].range: missing key 'kernel'",
    ),
    "bad target": (
        lambda d: d["models"][0].update(target="time"),
        "models[0].target: expected one of log_time, log_ratio",
    ),
    "repeated model": (
        lambda d: d["models"].append(copy.deepcopy(d["models"][0])),
        "models[1]: a second model for kind/dtype/threads ('conv', 'fp32', 1)",
    ),
    "negative overhead": (lambda d: d.update(overhead_s=-1), "overhead_s: expected a finite"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_artifacts_are_clear_errors(case, tmp_path):
    mutate, expected = MALFORMED[case]
    data = tiny_artifact()
    mutate(data)
    path = tmp_path / "bad.predictor.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PredictorFormatError) as info:
        load_predictor(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'{"format": 1, "format": 2}', "duplicate key 'format'"),
        (json.dumps(tiny_artifact()).replace("1e-05", "NaN").encode(), "NaN is not a number"),
        (b"\x1f\x8b\x08garbage", "cannot read"),
    ],
)
def test_unreadable_artifacts_are_clear_errors(content, expected, tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(content)
    with pytest.raises(PredictorFormatError, match=r"predictor .*p\.json") as info:
        load_predictor(path)
    assert expected in str(info.value)


class _Payload:
    def __reduce__(self):
        import os

        return (os.system, ("touch EXECUTED",))


def test_loading_executes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, blob in (
        ("pickle.json", pickle.dumps(_Payload())),
        ("pickle.json.gz", gzip.compress(pickle.dumps(_Payload()))),
    ):
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(PredictorFormatError, match="not valid JSON"):
            load_predictor(tmp_path / name)
    assert not (tmp_path / "EXECUTED").exists()


def test_gzip_and_plain_json_load_the_same(tmp_path):
    text = json.dumps(tiny_artifact()).encode()
    (tmp_path / "a.json").write_bytes(text)
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(text))
    assert load_predictor(tmp_path / "a.json") == load_predictor(tmp_path / "a.json.gz")


def test_the_docs_define_every_feature_and_artifact_field():
    from pathlib import Path

    from simulator.hardware.kernel_features import FEATURES

    text = (Path(__file__).resolve().parents[2] / "docs/predictors.md").read_text()
    for name, (definition, _) in FEATURES.items():
        assert f"| `{name}` | {definition} |" in text
    for field in ("format", "version", "features", "provenance", "overhead_s", "models"):
        assert f"| `{field}` |" in text
    model = tiny_artifact()["models"][0]
    for field in model:
        assert f"| `models[i].{field}` |" in text


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), rows=st.integers(1, 12), depth=st.integers(1, 5))
def test_batch_and_single_row_walks_agree(seed, rows, depth):
    import numpy as np

    from calibration.predictor_synth import random_artifact
    from simulator.hardware.predictor import predict_raw

    predictor = KernelPredictor(random_artifact(("fc",), n_trees=7, depth=depth, seed=seed))
    (model,) = predictor._models["fc", "fp32"]
    x = 10 ** np.random.default_rng(seed).uniform(0, 9, size=(rows, len(model.features)))
    batch = predict_raw(model.forest, model.combine, model.offset, model.scale, x)
    single = [
        predict_raw(model.forest, model.combine, model.offset, model.scale, row[None, :])[0]
        for row in x
    ]
    assert batch.tolist() == single
    assert np.isfinite(batch).all()


def test_a_feature_at_its_rounded_training_bound_is_inside():
    """Training ranges come from tables of 9 significant digits: a kernel size of
    7.000000001 (1.4e-10 above the stored bound 7) is the layer the model saw and does
    not warn; 7.0001 is outside and does."""
    predictor = KernelPredictor(tiny_artifact())
    model = predictor._models[("conv", "fp32")][0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predictor._check_range(model, np.array([1e5, 7.000000001]))
        assert not caught
        predictor._check_range(model, np.array([1e5, 7.0001]))
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "conv kernel = 7.0001 is above the training range [1, 7]: the prediction is extrapolated"
    ]
