"""``measure``: run models on the host, cost their profiled nodes, tabulate.

Each model runs in two sessions (:func:`calibration.ortrun.run_models`): profiled, for per-node
kernel times, and plain, for end-to-end times. The optimised graph ORT saved is
imported with ``fuse="none"`` (one socsim op per node ORT ran, same names), which gives
every profiled node its kind, FLOPs and bytes.
"""

from __future__ import annotations

import datetime as dt
import platform as host_platform
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from calibration.ortrun import ModelRun, RunSettings, run_models
from calibration.runstats import binned_time_stats, half_stats, time_stats
from calibration.table import Provenance
from simulator.errors import SocsimError
from simulator.graph.model import ModelGraph
from simulator.hardware.kernel_features import feature_columns

GraphLoader = Callable[[Path, str], ModelGraph]


def onnx_graph(path: Path, fuse: str) -> ModelGraph:
    """``simulator.graph.onnx_import.load_onnx(path, fuse=fuse)``, imported lazily."""
    try:
        from simulator.graph.onnx_import import load_onnx
    except ImportError as exc:
        raise SocsimError(
            f"calibration needs the ONNX importer (simulator.graph.onnx_import): {exc}"
        ) from None
    return load_onnx(path, fuse=fuse, name=Path(path).stem)


def host_name() -> str:
    """The CPU model: lscpu's 'Model name', else ``platform.processor()``, else the arch."""
    try:
        text = subprocess.run(
            ["lscpu"], capture_output=True, text=True, check=False, timeout=10
        ).stdout
        for line in text.splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return host_platform.processor() or host_platform.machine() or "unknown"


def provenance(threads: int, notes: str = "") -> Provenance:
    """Now (UTC), this host, this onnxruntime."""
    import onnxruntime as ort

    return Provenance(
        date=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        host=f"{host_name()} ({host_platform.machine()}, {host_platform.system()})",
        runtime=f"onnxruntime {ort.__version__} CPUExecutionProvider",
        threads=threads,
        notes=notes,
    )


def boundary(graph: ModelGraph, name: str) -> bool:
    """True when op ``name`` reads no other op's output or feeds none (a graph-input or
    graph-output kernel: see :func:`calibration.table.network_rows`)."""
    return not graph.predecessors(name) or not graph.successors(name)


def model_rows(model: str, run: ModelRun, graph: ModelGraph, threads: int) -> list[dict]:
    """Rows of one model: each profiled node that the graph has, then the whole model.

    Raises
    ------
    SocsimError
        When no profiled node is in the graph (the names do not match).
    """
    rows = []
    for node in run.nodes:
        if node.node not in graph:
            continue
        if np.median(node.times_s) <= 0:
            continue  # below the profiler's 1 µs resolution in most runs
        op = graph.op(node.node)
        times = binned_time_stats(node.times_s)  # the profiler truncates to whole µs
        rows.append(
            {
                "level": "op",
                "model": model,
                "node": node.node,
                "kind": op.kind,
                "op_type": node.op_type,
                "dtype": op.dtype,
                "shapes": node.shapes,
                "flops": op.flops,
                "bytes": float(op.bytes_moved),
                **times,
                **half_stats(node.times_s, binned_time_stats),
                "runs": len(node.times_s),
                "threads": threads,
                "parallel_fraction": op.parallel_fraction,
                "boundary": int(boundary(graph, node.node)),
                **feature_columns(op),  # what a learned kernel predictor trains on
            }
        )
    if not rows:
        have = ", ".join(list(graph.order)[:5])
        seen = ", ".join(n.node for n in run.nodes[:5])
        raise SocsimError(
            f"model '{model}': no profiled node is in the imported graph "
            f"(profile: {seen} ...; graph: {have} ...)"
        )
    rows.append(
        {
            "level": "model",
            "model": model,
            "node": "",
            "kind": "",
            "op_type": "",
            "dtype": rows[0]["dtype"],
            "shapes": "",
            "flops": graph.total_flops,
            "bytes": float(sum(op.bytes_moved for op in graph)),
            **time_stats(run.e2e_s),
            **half_stats(run.e2e_s),
            "runs": len(run.e2e_s),
            "threads": threads,
        }
    )
    return rows


def measure_models(
    paths: Mapping[str, Path],
    settings: RunSettings,
    workdir: Path,
    loader: GraphLoader = onnx_graph,
    progress: Callable[[str], None] | None = None,
    on_round: Callable[[int], None] | None = None,
) -> list[dict]:
    """Measure every model of ``paths`` (name -> ONNX file), interleaved; the table's rows.

    ``on_round`` is called at the start of every round (:func:`run_models`)."""
    runs = run_models({n: Path(p) for n, p in paths.items()}, settings, workdir, progress, on_round)
    rows: list[dict] = []
    for i, (name, run) in enumerate(runs.items()):
        if progress:
            progress(f"costing {name} ({i + 1} of {len(runs)})")
        graph = loader(run.optimized_path, "none")
        rows.extend(model_rows(name, run, graph, settings.threads))
    return rows
