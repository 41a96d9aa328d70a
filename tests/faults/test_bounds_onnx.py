"""ONNX files within stated bounds (issue 16, items 6, 14, 17): external data is checked
against its dims before anything is read and large weights are never read; dims of 0 or
below are errors, not "dynamic"; a tensor of more than 2^48 elements is refused."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from simulator.errors import ModelError
from simulator.graph.onnx_import import load_onnx
from tests.onnx_util import model, node


def _external_gemm(tmp_path, rows: int, length: int | None, file_bytes: int):
    """A Gemm whose (rows x 64) fp32 weight lives in a sparse ``w.bin`` of ``file_bytes``."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[rows, 64])
    w.data_location = TensorProto.EXTERNAL
    entries = {"location": "w.bin", "offset": "0"}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        w.external_data.add(key=key, value=value)
    m = model([node("Gemm", ["x", "w"], "y", transB=1)], {"x": [1, 64]}, ["y"], [w])
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    with open(tmp_path / "w.bin", "wb") as handle:
        handle.truncate(file_bytes)
    return path


def test_external_weights_without_length_are_not_read(tmp_path):
    """No length, a sparse 256 MiB file: onnx.load read all of it (8 GB -> 16.9 GB RSS)."""
    rows = 2**20  # 256 MiB of fp32 weights
    path = _external_gemm(tmp_path, rows, None, rows * 64 * 4)
    tracemalloc.start()
    try:
        graph = load_onnx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert graph.op("y").params == rows * 64
    assert peak < 32 * 2**20  # not the 256 MiB of weights


def test_external_length_must_match_the_dims(tmp_path):
    path = _external_gemm(tmp_path, 32, 10, 32 * 64 * 4)
    with pytest.raises(ModelError, match=r"length 10 disagrees with its shape \[32, 64\]"):
        load_onnx(path)


def test_external_file_too_short_is_an_error(tmp_path):
    path = _external_gemm(tmp_path, 2**14, None, 100)  # 4 MiB wanted, 100 bytes there
    with pytest.raises(ModelError, match="of a 100-byte file"):
        load_onnx(path)


@pytest.mark.parametrize("dim", [0, -5])
def test_zero_or_negative_dims_are_not_dynamic(dim):
    m = model([node("Relu", ["x"], "y")], {"x": [1, dim]}, ["y"])
    with pytest.raises(ModelError, match=f"dimension 1 = {dim}; a dimension must be >= 1"):
        load_onnx(m)


def test_symbolic_dims_stay_dynamic():
    m = model([node("Relu", ["x"], "y")], {"x": ["N", 4]}, ["y"])
    assert load_onnx(m, batch=3).op("y").output_elems == 12


def test_a_huge_input_is_refused_with_the_limit_named():
    """[1, 1e9, 1e9, 1e9] passed and crashed Parquet writing with an int64 overflow."""
    m = model([node("Relu", ["x"], "y")], {"x": [1, 10**9, 10**9, 10**9]}, ["y"])
    with pytest.raises(ModelError, match="MAX_TENSOR_ELEMENTS"):
        load_onnx(m)


def test_an_oversized_model_file_is_refused_before_reading(tmp_path):
    from simulator.graph.onnx_files import MAX_ONNX_FILE_BYTES

    path = tmp_path / "big.onnx"
    with open(path, "wb") as handle:
        handle.truncate(MAX_ONNX_FILE_BYTES + 1)
    with pytest.raises(ModelError, match="larger than"):
        load_onnx(path)


def test_small_external_constants_are_read_for_shape_inference(tmp_path):
    """A Reshape target kept as external data still drives shape inference."""
    shape = onnx.numpy_helper.from_array(np.array([1, 8, 2], dtype=np.int64), "shape")
    m = model([node("Reshape", ["x", "shape"], "y")], {"x": [1, 16]}, ["y"], [shape])
    path = tmp_path / "r.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, location="r.bin", size_threshold=0)
    assert load_onnx(path).op("y").output_elems == 16
