"""Single-operator microbenchmarks: the host's achievable FLOP/s and memory bandwidth.

Each benchmark is a one-node ONNX model whose FLOPs and bytes are counted here by hand
(fp32, 4 bytes per element; bytes = inputs + weights + output). The fit takes the best
compute rate as ``peak`` (so efficiencies are relative to the best GEMM-class kernel
the runtime reaches on this host) and the best streaming rate as the bandwidth scale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from calibration.ortrun import RunSettings, run_models
from calibration.runstats import binned_time_stats

if TYPE_CHECKING:  # the builders import onnx when they run
    import onnx

F32 = 4


@dataclass(frozen=True)
class Micro:
    """One microbenchmark: its kind, hand-counted work and a builder of its model."""

    name: str
    kind: str
    flops: float
    bytes: float
    build: Callable[[], onnx.ModelProto]


def _model(name: str, node, inputs: list, inits: list):
    from onnx import helper

    graph = helper.make_graph([node], name, inputs, [], inits)
    out = helper.make_tensor_value_info(node.output[0], 1, None)
    graph.output.append(out)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _tensor(name: str, shape: tuple[int, ...], seed: int):
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _input(name: str, shape: tuple[int, ...]):
    from onnx import helper

    return helper.make_tensor_value_info(name, 1, list(shape))


def gemm(m: int, k: int, n: int) -> Micro:
    """``[m,k] @ [k,n]``: 2mkn FLOPs."""
    from onnx import helper

    name = f"gemm_{m}x{k}x{n}"

    def build():
        node = helper.make_node("MatMul", ["a", "b"], ["y"], name=name)
        return _model(name, node, [_input("a", (m, k))], [_tensor("b", (k, n), 1)])

    return Micro(name, "matmul", 2.0 * m * k * n, F32 * (m * k + k * n + m * n), build)


def conv(c_in: int, c_out: int, hw: int, k: int, group: int = 1) -> Micro:
    """A same-padded k x k convolution on ``hw x hw``: 2 Cout H W (Cin/g) k² FLOPs."""
    from onnx import helper

    kind = "dwconv" if group == c_in == c_out and group > 1 else "conv"
    name = f"{kind}_{c_in}to{c_out}_k{k}_{hw}"
    weights = c_out * (c_in // group) * k * k

    def build():
        node = helper.make_node(
            "Conv",
            ["x", "w"],
            ["y"],
            name=name,
            kernel_shape=[k, k],
            pads=[k // 2] * 4,
            group=group,
        )
        w = _tensor("w", (c_out, c_in // group, k, k), 2)
        return _model(name, node, [_input("x", (1, c_in, hw, hw))], [w])

    flops = 2.0 * c_out * hw * hw * (c_in // group) * k * k
    traffic = F32 * (c_in * hw * hw + weights + c_out * hw * hw)
    return Micro(name, kind, flops, traffic, build)


def add(elems: int) -> Micro:
    """Elementwise ``a + b`` of two ``elems`` tensors: 1 FLOP and 12 bytes per element."""
    from onnx import helper

    name = f"add_{elems}"

    def build():
        node = helper.make_node("Add", ["a", "b"], ["y"], name=name)
        return _model(name, node, [_input("a", (elems,)), _input("b", (elems,))], [])

    return Micro(name, "elementwise", float(elems), 3.0 * F32 * elems, build)


def copy(elems: int) -> Micro:
    """``Identity``: a plain copy, 8 bytes per element, no FLOPs."""
    from onnx import helper

    name = f"copy_{elems}"

    def build():
        node = helper.make_node("Identity", ["a"], ["y"], name=name)
        return _model(name, node, [_input("a", (elems,))], [])

    return Micro(name, "reshape", 0.0, 2.0 * F32 * elems, build)


def suite(quick: bool = False) -> tuple[Micro, ...]:
    """The benchmarks; ``quick`` keeps one small one of each kind (for tests)."""
    if quick:
        return (
            gemm(128, 128, 128),
            conv(16, 16, 16, 3),
            conv(32, 32, 16, 3, 32),
            add(1 << 16),
            copy(1 << 16),
        )
    return (
        gemm(256, 256, 256),
        gemm(512, 512, 512),
        gemm(64, 1024, 1024),
        conv(64, 64, 56, 3),
        conv(128, 128, 28, 1),
        conv(128, 128, 56, 3, 128),
        add(1 << 22),
        copy(1 << 22),
    )


def run_suite(micros: tuple[Micro, ...], settings: RunSettings, workdir: Path) -> list[dict]:
    """Measure each benchmark's kernel; rows of the measurement table (level ``micro``)."""
    paths = {}
    for micro in micros:
        paths[micro.name] = workdir / f"{micro.name}.onnx"
        paths[micro.name].parent.mkdir(parents=True, exist_ok=True)
        paths[micro.name].write_bytes(micro.build().SerializeToString(deterministic=True))
    results = run_models(paths, settings, workdir)
    rows = []
    for micro in micros:
        result = results[micro.name]
        node = next(n for n in result.nodes if n.node == micro.name)
        rows.append(
            {
                "level": "micro",
                "model": micro.name,
                "node": micro.name,
                "kind": micro.kind,
                "op_type": node.op_type,
                "dtype": "fp32",
                "shapes": node.shapes,
                "flops": micro.flops,
                "bytes": micro.bytes,
                **binned_time_stats(node.times_s),
                "runs": len(node.times_s),
                "threads": settings.threads,
            }
        )
    return rows


def host_rates(rows: list[Mapping]) -> tuple[float, float]:
    """(peak FLOP/s, bandwidth B/s): the best compute-bound and memory-bound rates."""
    compute = [r["flops"] / r["median_s"] for r in rows if r["kind"] in ("matmul", "conv")]
    memory = [r["bytes"] / r["median_s"] for r in rows if r["kind"] in ("elementwise", "reshape")]
    if not compute or not memory:
        from simulator.errors import SocsimError

        raise SocsimError("microbenchmarks need at least one GEMM/conv and one add/copy row")
    return max(compute), max(memory)
