"""onnxruntime sessions as calibration pins them, and the optimised graph they run.

Sessions are pinned (:func:`session_options`): ``intra_op_num_threads`` as asked, one
inter-op thread, sequential execution, ``ORT_ENABLE_EXTENDED`` graph optimisation (the
fusions ORT applies on CPU). The graph ORT runs after those fusions is saved once per
model file (:func:`save_optimized_graph`) so that socsim's importer can cost its nodes one
by one under the names the profiler reports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: What the saved graph keeps of a weight that ORT wrote to external data: its shape and
#: type, no values (part of the key, so a graph saved with its weights is saved again).
WEIGHTS = "shape only"
#: ORT writes initializers of at least this many bytes to the external-data file; smaller
#: ones (shape constants, indices, a BatchNorm's per-channel vectors) stay in the graph.
EXTERNAL_MIN_BYTES = 4096


def session_options(threads: int, optimized_path: Path | None = None, profile_prefix: str = ""):
    """The pinned :class:`onnxruntime.SessionOptions` (see the module docstring).

    ``optimized_path``: ORT writes the optimised graph there, initializers of
    :data:`EXTERNAL_MIN_BYTES` or more to ``<optimized_path>.data`` beside it (VGG-class
    graphs pass protobuf's 2 GB limit). ``profile_prefix``: profile every kernel.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    if optimized_path is not None:
        options.optimized_model_filepath = str(optimized_path)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name",
            f"{Path(optimized_path).name}.data",
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes",
            str(EXTERNAL_MIN_BYTES),
        )
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return options


def save_optimized_graph(path: Path, optimized_path: Path, threads: int) -> None:
    """Have ORT write the graph it runs (its fusions applied) to ``optimized_path``, from a
    session of its own that is dropped at once, and keep only the shapes of its large
    weights (:func:`drop_external_weights`); nothing when the file there was saved from
    this same model file by this same onnxruntime (:func:`graph_key`).

    A session that saves its optimised graph keeps every initializer besides the packed
    weights it runs on: ``sweep_fc_0`` (618 MB of weights) held 1.24 GB resident with the
    save and 0.70 GB without (2026-12-07), and :func:`calibration.ortrun.run_models`
    keeps every model open. This session never runs, so it packs nothing.

    The graph does not depend on the thread count: the 72 corpus models' graphs saved at
    1 and at 2 threads had the same nodes, inputs, outputs and attributes (2026-12-07),
    so the second thread count of ``calibrate all`` reuses the first's (27 s of saving
    on this host).
    """
    import onnxruntime as ort

    key_path = optimized_path.with_name(optimized_path.name + ".key.json")
    key = graph_key(path)
    if optimized_path.exists() and key_path.exists():
        try:
            if json.loads(key_path.read_text()) == key:
                return
        except (OSError, ValueError):
            pass  # unreadable: saved again below
    key_path.unlink(missing_ok=True)  # a save cut short leaves no key behind
    options = session_options(threads, optimized_path)
    options.add_session_config_entry("session.disable_prepacking", "1")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    drop_external_weights(optimized_path)
    key_path.write_text(json.dumps(key))


def drop_external_weights(optimized_path: Path) -> None:
    """Rewrite the graph at ``optimized_path`` with its external-data initializers as
    shapes without values, and delete the external-data file.

    Why: socsim's importer costs an op from its tensors' shapes and reads values only of
    shape-like constants, which are far below :data:`EXTERNAL_MIN_BYTES` and stay in the
    graph; the weights are the model file's, which the sessions run. Keeping ORT's copy
    cost ``calibrate all`` 3.7 GB of disk and, on the Intel guest of 2026-12-08, 21 s of
    saving the 72 corpus graphs against 14-16 s without it (the copy's writing is dropped
    with the file). The saved graph is for costing only: onnxruntime cannot run it.
    """
    import onnx
    from onnx import external_data_helper

    model = onnx.load(str(optimized_path), load_external_data=False)
    files = set()
    for tensor in external_data_helper._get_all_tensors(model):
        if external_data_helper.uses_external_data(tensor):
            files.add(external_data_helper.ExternalDataInfo(tensor).location)
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
    if not files:
        return
    partial = optimized_path.with_name(optimized_path.name + ".partial")
    try:
        partial.write_bytes(model.SerializeToString())
        os.replace(partial, optimized_path)
    except OSError:
        partial.unlink(missing_ok=True)  # a full disk leaves no half-written graph behind
        raise
    for name in files:  # ORT's own file name (session_options), beside the graph
        (optimized_path.parent / Path(name).name).unlink(missing_ok=True)


def graph_key(path: Path) -> dict[str, Any]:
    """What an optimised graph was saved from: the model file (resolved path, size,
    modification time), onnxruntime's version, the optimisation level, and what the saved
    graph keeps of the weights (:data:`WEIGHTS`)."""
    import onnxruntime as ort

    stat = Path(path).stat()
    return {
        "model": str(Path(path).resolve()),
        "bytes": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "onnxruntime": ort.__version__,
        "level": str(session_options(1).graph_optimization_level),
        "weights": WEIGHTS,
    }
