"""A synthetic kernel-measurement table from a known formula (tests, docs, bench).

Kernel times follow :func:`synthetic_time_s`: a roofline whose efficiency depends on the
shape (few channels or a non-3x3 kernel run slower) and whose bandwidth drops when the
weights exceed a 1 MB "cache", times log-normal noise. A learned predictor should
recover it; the plain roofline (one efficiency per kind, one bandwidth) cannot.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simulator.graph.model import Op
from simulator.hardware.kernel_features import feature_columns

PEAK_FLOPS = 100e9
CACHE_BYTES = 1e6
CACHE_BPS, DRAM_BPS = 40e9, 10e9
FIXED_S = 3e-6


def synthetic_time_s(op: Op) -> float:
    """The formula's noiseless kernel time (s) of ``op``."""
    eff = 0.5
    if op.kind in ("conv", "dwconv"):
        channels = op.attrs["in_channels"] / op.attrs["groups"]
        eff = (0.15 + 0.6 * min(1.0, channels / 64)) * (1.0 if op.attrs["kernel"] == 3 else 0.7)
    elif op.kind == "fc":
        eff = 0.3 + 0.4 * min(1.0, op.output_elems / op.attrs["out_features"] / 16)
    bandwidth = CACHE_BPS if op.weight_bytes <= CACHE_BYTES else DRAM_BPS
    return FIXED_S + max(op.flops / (PEAK_FLOPS * eff), op.bytes_moved / bandwidth)


def conv_op(name: str, c: int, k: int, kernel: int, stride: int, hw: int, groups: int = 1) -> Op:
    """A square 2-D conv (padding ``kernel // 2``) as the layer builder would make it."""
    out = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    macs = k * out * out * (c // groups) * kernel * kernel
    return Op(
        name,
        "dwconv" if groups == c and groups > 1 else "conv",
        flops=2.0 * macs,
        macs=float(macs),
        params=k * (c // groups) * kernel * kernel + k,
        input_elems=c * hw * hw,
        output_elems=k * out * out,
        attrs={"in_channels": c, "out_channels": k, "kernel": kernel, "groups": groups, "bias": 1},
    )


def fc_op(name: str, tokens: int, d_in: int, d_out: int) -> Op:
    macs = tokens * d_in * d_out
    return Op(
        name,
        "fc",
        flops=2.0 * macs,
        macs=float(macs),
        params=d_in * d_out + d_out,
        input_elems=tokens * d_in,
        output_elems=tokens * d_out,
        attrs={"in_features": d_in, "out_features": d_out, "bias": 1},
    )


def elementwise_op(name: str, elems: int) -> Op:
    return Op(name, "elementwise", flops=float(elems), input_elems=2 * elems, output_elems=elems)


def synthetic_ops(n: int, seed: int, scale: float = 1.0) -> list[Op]:
    """``n`` random ops of each kind conv, dwconv, fc and elementwise; ``scale``
    multiplies the spatial sizes and widths (> 1: shapes beyond the usual range)."""
    rng = np.random.default_rng(seed)
    ops = []
    for i in range(n):
        c = int(rng.choice([3, 8, 16, 32, 64, 128, 256]) * scale)
        k = int(rng.choice([8, 16, 32, 64, 128, 256]) * scale)
        hw = int(rng.choice([7, 14, 28, 56]) * scale)
        kernel, stride = int(rng.choice([1, 3, 5])), int(rng.choice([1, 2]))
        ops.append(conv_op(f"conv{i}", c, k, kernel, stride, hw))
        ops.append(conv_op(f"dw{i}", k, k, kernel, stride, hw, groups=k))
        dims = [int(d * scale) for d in rng.choice([64, 128, 256, 512, 1024, 4096], size=2)]
        ops.append(fc_op(f"fc{i}", int(rng.choice([1, 4, 16, 64])), *dims))
        ops.append(elementwise_op(f"add{i}", int(rng.integers(1_000, int(2_000_000 * scale)))))
    return ops


def synthetic_table(
    n: int = 60, seed: int = 0, noise: float = 0.03, threads: int = 1, scale: float = 1.0
) -> pd.DataFrame:
    """A measurement table (op rows with feature columns) of :func:`synthetic_ops`,
    timed by :func:`synthetic_time_s` with log-normal noise of sigma ``noise``."""
    rng = np.random.default_rng(seed + 1)
    rows = []
    for op in synthetic_ops(n, seed, scale):
        rows.append(
            {
                "level": "op",
                "model": "synthetic",
                "node": op.name,
                "kind": op.kind,
                "op_type": op.kind,
                "dtype": op.dtype,
                "shapes": "",
                "flops": op.flops,
                "bytes": float(op.bytes_moved),
                "median_s": synthetic_time_s(op) * math.exp(noise * rng.standard_normal()),
                "iqr_s": 0.0,
                "runs": 10,
                "threads": threads,
                "parallel_fraction": 1.0,
                **feature_columns(op),
            }
        )
    return pd.DataFrame(rows)


def random_artifact(
    kinds: tuple[str, ...] = ("conv", "dwconv", "fc", "elementwise"),
    dtypes: tuple[str, ...] = ("fp32",),
    n_trees: int = 200,
    depth: int = 4,
    seed: int = 0,
    threads: int = 1,
) -> dict:
    """A valid artifact of complete random trees (no training; sizes and speed only).

    Every tree splits on random features at log-uniform thresholds in [1, 1e9]; leaves
    hold small log-ratios, so predictions stay within a few percent of the baseline.
    """
    from simulator.hardware.kernel_features import FEATURES, kind_features
    from simulator.hardware.predictor_format import FORMAT, VERSION

    rng = np.random.default_rng(seed)
    models: list[dict] = []
    used: set[str] = set()
    for kind in kinds:
        names = kind_features(kind)
        used.update(names)
        for dtype in dtypes:
            trees = [_random_tree(rng, depth, len(names)) for _ in range(n_trees)]
            models.append(
                {
                    "kind": kind,
                    "dtype": dtype,
                    "threads": threads,
                    "features": list(names),
                    "target": "log_ratio",
                    "baseline": {
                        "fixed_s": FIXED_S, "flop_rate_per_s": 50e9, "byte_rate_per_s": 20e9
                    },
                    "ensemble": {"combine": "sum", "offset": 0.0, "scale": 0.05},
                    "trees": trees,
                    "range": {n: [0.0, 1e12] for n in names},
                    "training": {"rows": 0, "method": "random (not trained)"},
                }
            )  # fmt: skip
    return {
        "format": FORMAT,
        "version": VERSION,
        "features": {n: FEATURES[n][0] for n in FEATURES if n in used},
        "provenance": {"notes": "random trees for size and speed checks; not a measurement"},
        "overhead_s": 0.0,
        "models": models,
    }


def _random_tree(rng: np.random.Generator, depth: int, n_features: int) -> dict[str, list]:
    """A complete tree of ``depth`` levels in scikit-learn's array layout."""
    internal = 2**depth - 1
    nodes = range(2 ** (depth + 1) - 1)
    return {
        "feature": [int(rng.integers(n_features)) if i < internal else -1 for i in nodes],
        "threshold": [float(10 ** rng.uniform(0, 9)) if i < internal else 0.0 for i in nodes],
        "left": [2 * i + 1 if i < internal else -1 for i in nodes],
        "right": [2 * i + 2 if i < internal else -1 for i in nodes],
        "value": [float(rng.normal(0, 0.01)) if i >= internal else 0.0 for i in nodes],
    }
