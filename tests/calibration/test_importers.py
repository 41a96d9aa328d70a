"""Importing per-op times measured elsewhere: generic CSV and TFLite benchmark_model text."""

from __future__ import annotations

import math

import pytest

from calibration.importers import (
    import_generic_csv,
    import_tflite,
    parse_tflite_profile,
    tflite_kind,
)
from calibration.table import MeasurementError, read_table, write_table

# benchmark_model --enable_op_profiling=true, older builds: tab-separated, with [start]
TFLITE_WITH_START = (
    "Operator-wise Profiling Info for Regular Benchmark Runs:\n"
    "============================== Run Order ==============================\n"
    "\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]"
    "\t  [mem KB]\t[times called]\t[Name]\n"
    "\t                 CONV_2D\t            0.066\t   87.754\t   60.957\t  2.066%\t  2.066%"
    "\t     0.000\t        1\t[MobilenetV1/MobilenetV1/Conv2d_0/Relu6]:0\n"
    "\t       DEPTHWISE_CONV_2D\t           61.033\t   53.628\t   49.870\t  1.691%\t  3.757%"
    "\t     0.000\t        1\t[MobilenetV1/MobilenetV1/Conv2d_1_depthwise/Relu6]:1\n"
    "\n"
    "============================== Top by Computation Time ==============================\n"
    "Inference timings in us: Init: 2000, First inference: 130000, Warmup (avg): 120000, "
    "Inference (avg): 110827.5\n"
)

# newer builds: space-aligned, no [start], XNNPACK delegate kernels called several times
TFLITE_XNNPACK = (
    "INFO: Operator-wise Profiling Info for Regular Benchmark Runs:\n"
    "============================== Run Order ==============================\n"
    "                 [node type]          [first]        [avg ms]            [%]"
    "          [cdf%]          [mem KB]        [times called]  [Name]\n"
    "                    QUANTIZE            0.199           0.203         1.328%"
    "          1.328%             0.000                1       [tfl.quantize]:0\n"
    "   Convolution (NHWC, QC8) DWConv            0.428           0.051         4.317%"
    "          8.304%             0.000               13       "
    "Delegate/Convolution (NHWC, QC8) DWConv:1\n"
    "\n"
)

WORK_CSV = (
    "node,flops,bytes,dtype\n"
    "MobilenetV1/MobilenetV1/Conv2d_0/Relu6,21676032,1000000,int8\n"
    "MobilenetV1/MobilenetV1/Conv2d_1_depthwise/Relu6,7225344,2000000,int8\n"
)


def test_tflite_old_format_exact(tmp_path):
    (tmp_path / "p.txt").write_text(TFLITE_WITH_START)
    (tmp_path / "w.csv").write_text(WORK_CSV)
    table = import_tflite(tmp_path / "p.txt", tmp_path / "w.csv", "mobilenet_v1")
    ops = table[table["level"] == "op"]
    assert list(ops["node"]) == [
        "MobilenetV1/MobilenetV1/Conv2d_0/Relu6",
        "MobilenetV1/MobilenetV1/Conv2d_1_depthwise/Relu6",
    ]
    assert list(ops["kind"]) == ["conv", "dwconv"]
    assert list(ops["median_s"]) == pytest.approx([60.957e-3, 49.870e-3], rel=1e-12)
    assert list(ops["flops"]) == [21676032.0, 7225344.0]
    assert list(ops["dtype"]) == ["int8", "int8"]
    whole = table[table["level"] == "model"].iloc[0]
    assert whole["median_s"] == pytest.approx(0.1108275, rel=1e-12)
    assert whole["flops"] == 21676032.0 + 7225344.0


def test_tflite_xnnpack_format_multiplies_calls():
    rows = parse_tflite_profile(TFLITE_XNNPACK)
    assert [r["node_type"] for r in rows] == ["QUANTIZE", "Convolution (NHWC, QC8) DWConv"]
    assert [r["name"] for r in rows] == ["tfl.quantize", "Delegate/Convolution (NHWC, QC8) DWConv"]
    assert [r["times_called"] for r in rows] == [1, 13]
    assert rows[1]["avg_ms"] == 0.051
    assert tflite_kind(rows[1]["node_type"]) == "dwconv"
    assert tflite_kind("QUANTIZE") == "elementwise"


def test_tflite_unknown_node_type_names_line(tmp_path):
    text = TFLITE_WITH_START.replace("DEPTHWISE_CONV_2D", "TfLiteGpuDelegateV2")
    (tmp_path / "p.txt").write_text(text)
    (tmp_path / "w.csv").write_text(WORK_CSV)
    with pytest.raises(MeasurementError) as info:
        import_tflite(tmp_path / "p.txt", tmp_path / "w.csv", "m")
    assert info.value.line == 5 and info.value.column == "node type"
    assert "TfLiteGpuDelegateV2" in str(info.value) and "p.txt:5" in str(info.value)
    table = import_tflite(
        tmp_path / "p.txt", tmp_path / "w.csv", "m", {"TfLiteGpuDelegateV2": "custom"}
    )
    assert list(table["kind"])[:2] == ["conv", "custom"]
    with pytest.raises(MeasurementError, match="unknown op kind 'gpu'"):
        import_tflite(tmp_path / "p.txt", tmp_path / "w.csv", "m", {"TfLiteGpuDelegateV2": "gpu"})


def test_tflite_without_section_or_work_row(tmp_path):
    (tmp_path / "p.txt").write_text("Inference (avg): 5\n")
    (tmp_path / "w.csv").write_text(WORK_CSV)
    with pytest.raises(MeasurementError, match="no 'Operator-wise"):
        import_tflite(tmp_path / "p.txt", tmp_path / "w.csv", "m")
    (tmp_path / "p.txt").write_text(TFLITE_WITH_START)
    (tmp_path / "w.csv").write_text("node,flops,bytes\nother,1,1\n")
    with pytest.raises(MeasurementError, match="Conv2d_0/Relu6"):
        import_tflite(tmp_path / "p.txt", tmp_path / "w.csv", "m")


GENERIC = (
    "model,node,kind,flops,bytes,time_ms\n"
    "net,conv1,conv,2000000,40000,0.125\n"
    "net,relu1,activation,0,8000,0.01\n"
    "net,,model,2000000,48000,0.2\n"
)


def test_generic_csv_exact_and_round_trip(tmp_path):
    (tmp_path / "m.csv").write_text(GENERIC)
    table = import_generic_csv(tmp_path / "m.csv")
    assert list(table["level"]) == ["op", "op", "model"]
    assert list(table["median_s"]) == pytest.approx([125e-6, 10e-6, 200e-6], rel=1e-12)
    assert list(table["kind"]) == ["conv", "activation", ""]
    assert table["dtype"].tolist() == ["fp32"] * 3
    assert table["parallel_fraction"].tolist() == [1.0] * 3
    write_table(table, tmp_path / "out.csv")
    back = read_table(tmp_path / "out.csv")
    assert back["median_s"].tolist() == pytest.approx(table["median_s"].tolist(), rel=1e-8)
    assert math.isnan(back["iqr_s"].iloc[0])


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ("model,node,kind,flops,time_ms\nnet,a,conv,1,1\n", 1, "bytes", "missing column"),
        ("model,node,kind,flops,bytes,time_ms\nnet,a,conv,1,1,-0.5\n", 2, "time_ms", ">"),
        (
            "model,node,kind,flops,bytes,time_ms\nnet,a,conv,1,1,1\nnet,b,convv,1,1,1\n",
            3,
            "kind",
            "did you mean 'conv'",
        ),
        ("model,node,kind,flops,bytes,time_ms\nnet,a,conv,x,1,1\n", 2, "flops", "number"),
        ("model,node,kind,flops,bytes,time_ms\n", None, None, "no rows"),
        (
            "model,node,kind,flops,bytes,time_ms,parallel_fraction\nnet,a,conv,1,1,1,1.5\n",
            2,
            "parallel_fraction",
            "[0, 1]",
        ),
    ],
)
def test_generic_csv_bad_input(tmp_path, text, line, column, words):
    (tmp_path / "m.csv").write_text(text)
    with pytest.raises(MeasurementError) as info:
        import_generic_csv(tmp_path / "m.csv")
    assert (info.value.line, info.value.column) == (line, column)
    assert words in str(info.value) and "m.csv" in str(info.value)


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(MeasurementError, match="empty file"):
        import_generic_csv(tmp_path / "e.csv")
    with pytest.raises(MeasurementError, match="file not found"):
        import_generic_csv(tmp_path / "none.csv")
    with pytest.raises(MeasurementError, match="empty file"):
        read_table(tmp_path / "e.csv")


def test_read_table_names_bad_row(tmp_path):
    (tmp_path / "m.csv").write_text(GENERIC)
    table = import_generic_csv(tmp_path / "m.csv")
    table.loc[1, "median_s"] = -1.0
    write_table(table, tmp_path / "t.csv")
    with pytest.raises(MeasurementError) as info:
        read_table(tmp_path / "t.csv")
    assert (info.value.line, info.value.column) == (3, "median_s")
