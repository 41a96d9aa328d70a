"""The features a learned kernel predictor sees of an op: ONE definition for training and
prediction (:func:`op_features`).

Calibration computes them from the op socsim's ONNX importer makes of every profiled
node and writes them into the measurement table; the simulator computes them from the
op it is about to cost. Both call :func:`op_features`, so a feature cannot mean one
thing when a model is fitted and another when it predicts.

Every feature is a number >= 0. Generic features come from the op's own fields and
always exist; shape features come from the shape attributes (``Op.attrs``) that the
zoo's layer builder, the ONNX importer and inline ops with shape keys fill, and are
missing when the op has none (a 1-D or 3-D ONNX conv, an inline op without shape
keys): a model needing a missing feature does not predict that op, and
the roofline does. Context features describe the op's network, not the op
(``net_weight_bytes``, stamped by :class:`~simulator.graph.model.ModelGraph`): an op
costed outside a graph lacks them; ``input_age_bytes`` (stamped too: how long ago the
op's oldest input was written, :mod:`simulator.graph.context`) is a concat feature;
``inputs`` (how many ops it reads) is stamped too and trained on only when asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from simulator.frozen import FrozenMap
from simulator.graph.context import FOOTPRINT_KEY, INPUT_AGE_KEY, INPUT_COUNT_KEY
from simulator.graph.model import Op
from simulator.graph.shape_attrs import kernel_area

_CONV_KINDS = ("conv", "dwconv")


def _attr(op: Op, key: str) -> float | None:
    value = op.attrs.get(key)
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _conv_only(op: Op, key: str) -> float | None:
    return _attr(op, key) if op.kind in _CONV_KINDS else None


def _out_spatial(op: Op) -> float | None:
    channels = _conv_only(op, "out_channels")
    return op.output_elems / channels if channels else None


def _in_spatial(op: Op) -> float | None:
    channels = _conv_only(op, "in_channels")
    return op.input_elems / channels if channels else None


def _stride_area(op: Op) -> float | None:
    inside, out = _in_spatial(op), _out_spatial(op)
    return inside / out if inside and out else None


def _taps(op: Op) -> float | None:
    """Kernel taps of a conv / dwconv: k^2, or kh x kw for a non-square kernel."""
    area = kernel_area(op.attrs) if op.kind in _CONV_KINDS else None
    return float(area) if area else None


def _kernel_side(op: Op) -> float | None:
    """k of a k x k kernel; sqrt(kh x kw) of a non-square one (a 1 x 7 conv has about
    the taps of a 3 x 3, and trees only read the order of a feature)."""
    taps = _taps(op)
    return math.sqrt(taps) if taps else None


def _gemm_depth(op: Op) -> float | None:
    """The reduction depth of the conv's GEMM per group: (in_channels / groups) x taps."""
    channels, taps = _conv_only(op, "in_channels"), _taps(op)
    if not channels or not taps:
        return None
    return channels / (_conv_only(op, "groups") or 1.0) * taps


def _gemm_rows(op: Op) -> float | None:
    """The conv's GEMM rows per group: out_channels / groups."""
    channels = _conv_only(op, "out_channels")
    return channels / (_conv_only(op, "groups") or 1.0) if channels else None


def _im2col_elems(op: Op) -> float | None:
    """Elements an im2col lowering writes (gemm depth x output pixels x groups); 0 for a
    1x1 stride-1 conv, which a GEMM reads in place."""
    depth, pixels, taps = _gemm_depth(op), _out_spatial(op), _taps(op)
    if depth is None or pixels is None or taps is None:
        return None
    if taps == 1 and (_stride_area(op) or 1.0) <= 1.0:
        return 0.0
    return depth * pixels * (_conv_only(op, "groups") or 1.0)


def _tokens(op: Op) -> float | None:
    features = _attr(op, "out_features") if op.kind == "fc" else None
    return op.output_elems / features if features else None


def _footprint(op: Op) -> float | None:
    """The network's weight bytes ModelGraph stamped on the op (0 is a real value: a
    network without weights); None for an op costed outside a graph."""
    value = op.attrs.get(FOOTPRINT_KEY)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def _input_age(op: Op) -> float | None:
    """Bytes touched since the op's oldest input was written, as ModelGraph stamped it
    (:mod:`simulator.graph.context`); None for an op costed outside a graph."""
    value = op.attrs.get(INPUT_AGE_KEY)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def _input_count(op: Op) -> float | None:
    """How many ops the op reads, as ModelGraph stamped it; None outside a graph."""
    value = op.attrs.get(INPUT_COUNT_KEY)
    return float(value) if isinstance(value, int | float) and value >= 1 else None


def _view(op: Op) -> float | None:
    """1 for a reshape that copies nothing (``view`` or ``flatten`` attribute), 0 for one
    that copies (Transpose, Split, Slice...); None for other kinds."""
    if op.kind != "reshape":
        return None
    return 1.0 if op.is_view else 0.0


def _pool_taps(op: Op) -> float | None:
    """FLOPs per output element of a pool: its window's taps (k^2 for a k x k window),
    the input pixels + 1 for a global pool (the importer's and GraphBuilder's counts)."""
    return op.flops / op.output_elems if op.kind == "pool" and op.output_elems else None


def _pool_stride(op: Op) -> float | None:
    """Input elements per output element of a pool (about stride^2; the input pixels for
    a global pool)."""
    return op.input_elems / op.output_elems if op.kind == "pool" and op.output_elems else None


def _pool_max(op: Op) -> float | None:
    """1 for a pool that compares (max, min), 0 for one that sums (average, sum); None
    for other kinds and for a pool not marked either way (``attrs['max']``)."""
    value = op.attrs.get("max") if op.kind == "pool" else None
    return float(value) if value in (0, 1) else None


def _intensity(op: Op) -> float:
    return op.flops / op.bytes_moved if op.bytes_moved else 0.0


#: Feature name -> (definition, function of the op; None when the op lacks it).
FEATURES: Mapping[str, tuple[str, Callable[[Op], float | None]]] = FrozenMap(
    {
        "flops": ("FLOPs of the op (a multiply-add counts 2)", lambda op: op.flops),
        "bytes": (
            "bytes read and written: inputs + weights + output (Op.bytes_moved)",
            lambda op: float(op.bytes_moved),
        ),
        "weight_bytes": ("bytes of the weights as stored", lambda op: float(op.weight_bytes)),
        "input_bytes": ("bytes of all activation inputs", lambda op: float(op.input_bytes)),
        "output_bytes": ("bytes of the output tensor", lambda op: float(op.output_bytes)),
        "intensity": ("flops / bytes (FLOP/B; 0 when the op moves no bytes)", _intensity),
        "in_channels": ("conv/dwconv input channels", lambda op: _conv_only(op, "in_channels")),
        "out_channels": ("conv/dwconv output channels", lambda op: _conv_only(op, "out_channels")),
        "kernel": (
            "conv/dwconv kernel side: k of a k x k kernel, sqrt(kh x kw) of a non-square one",
            _kernel_side,
        ),
        "groups": ("conv/dwconv groups", lambda op: _conv_only(op, "groups")),
        "out_spatial": ("conv/dwconv output pixels: output_elems / out_channels", _out_spatial),
        "in_spatial": ("conv/dwconv input pixels: input_elems / in_channels", _in_spatial),
        "stride_area": ("conv/dwconv in_spatial / out_spatial (about stride^2)", _stride_area),
        "gemm_depth": (
            "conv/dwconv GEMM reduction depth: in_channels / groups x kernel taps",
            _gemm_depth,
        ),
        "gemm_rows": ("conv/dwconv GEMM rows per group: out_channels / groups", _gemm_rows),
        "im2col_elems": (
            "conv/dwconv elements an im2col lowering writes (0 for 1x1 stride 1)",
            _im2col_elems,
        ),
        "in_features": (
            "fc input features",
            lambda op: _attr(op, "in_features") if op.kind == "fc" else None,
        ),
        "out_features": (
            "fc output features",
            lambda op: _attr(op, "out_features") if op.kind == "fc" else None,
        ),
        "tokens": ("fc rows (tokens): output_elems / out_features", _tokens),
        "view": (
            "reshape only: 1 when it reinterprets its input without copying (Reshape, "
            "Flatten, Squeeze, Unsqueeze), 0 when it copies (Transpose, Split, Slice...)",
            _view,
        ),
        "pool_taps": (
            "pool only: FLOPs per output element (window taps; input pixels + 1 for a global pool)",
            _pool_taps,
        ),
        "pool_stride": (
            "pool only: input elements per output element (about stride^2)",
            _pool_stride,
        ),
        "pool_max": (
            "pool only: 1 for a max (or min) pool, 0 for an average (or sum) pool",
            _pool_max,
        ),
        "net_weight_bytes": (
            "bytes of all weights of the op's network (ModelGraph.weight_bytes): how much "
            "data streams through the caches between two runs of the op",
            _footprint,
        ),
        "input_age_bytes": (
            "bytes the ops run between the op's oldest input's producer and the op "
            "touched (ModelGraph's order): how far down the caches that input was pushed",
            _input_age,
        ),
        "inputs": (
            "how many ops the op reads (ModelGraph's edges into it; at least 1): a concat "
            "copies one block per input",
            _input_count,
        ),
    }
)

#: Features every op has (the rest need shape attributes).
GENERIC_FEATURES: tuple[str, ...] = (
    "flops",
    "bytes",
    "weight_bytes",
    "input_bytes",
    "output_bytes",
    "intensity",
)

#: Features of the op's network rather than of the op (ModelGraph stamps them): every
#: kind trains on them by default. Chosen on the fit set's leave-one-network-out
#: cross-validation (docs/calibration.md, "Network footprint").
CONTEXT_FEATURES: tuple[str, ...] = ("net_weight_bytes",)
#: Features ModelGraph stamps (:mod:`simulator.graph.context`): an op measured or costed
#: outside a graph lacks them, so training leaves out one that no row of a kind has.
GRAPH_FEATURES: tuple[str, ...] = ("net_weight_bytes", "input_age_bytes", "inputs")

#: The op's own features training uses by default, per op kind (other kinds: the
#: generic ones); :func:`kind_features` adds :data:`CONTEXT_FEATURES`.
KIND_FEATURES: Mapping[str, tuple[str, ...]] = FrozenMap(
    {
        "conv": (
            *GENERIC_FEATURES,
            "in_channels",
            "out_channels",
            "kernel",
            "groups",
            "out_spatial",
            "stride_area",
            # the GEMM a conv lowers to: chosen on the fit-set cross-validation of runs S
            # and T (docs/calibration.md, "Factorised convolutions, Inception v3, GEMM
            # features")
            "gemm_depth",
            "gemm_rows",
            "im2col_elems",
        ),
        "dwconv": (
            *GENERIC_FEATURES,
            "in_channels",
            "kernel",
            "out_spatial",
            "stride_area",
            "gemm_depth",
            "im2col_elems",
        ),
        "fc": (*GENERIC_FEATURES, "in_features", "out_features", "tokens"),
        "reshape": (*GENERIC_FEATURES, "view"),
        # a DenseNet concat reads layer outputs written megabytes ago, a sweep's what
        # was just written: chosen on the fit set's leave-one-network-out CV of runs G
        # and H (docs/calibration.md, "Input age"); ``inputs`` was tried and not taken
        # (docs/calibration.md, "Concat inputs (tried, not taken)")
        "concat": (*GENERIC_FEATURES, "input_age_bytes"),
        # window, stride and max/average: chosen on the fit set's 5-fold CV of runs C-F
        # of 2026-12-06 (docs/calibration.md, "Pool features, the constant from
        # networks")
        "pool": (*GENERIC_FEATURES, "pool_taps", "pool_stride", "pool_max"),
    }
)


def kind_features(kind: str) -> tuple[str, ...]:
    """The default feature names of op kind ``kind``: its own (:data:`KIND_FEATURES`,
    else the generic ones), then :data:`CONTEXT_FEATURES`."""
    return (*KIND_FEATURES.get(kind, GENERIC_FEATURES), *CONTEXT_FEATURES)


def op_features(op: Op) -> dict[str, float]:
    """Every feature of :data:`FEATURES` that ``op`` has, by name (finite, >= 0).

    Parameters
    ----------
    op : Op

    Returns
    -------
    dict of str to float
        A feature the op lacks (no shape attributes) is absent.
    """
    out = {}
    for name, (_, function) in FEATURES.items():
        value = function(op)
        if value is not None and math.isfinite(value):
            out[name] = float(value)
    return out


def feature_column(name: str) -> str:
    """The measurement-table column that holds feature ``name`` (``feat_<name>``)."""
    return f"feat_{name}"


def feature_columns(op: Op) -> dict[str, float]:
    """:func:`op_features` keyed by table column; a feature the op lacks is NaN."""
    have = op_features(op)
    return {feature_column(name): have.get(name, math.nan) for name in FEATURES}
