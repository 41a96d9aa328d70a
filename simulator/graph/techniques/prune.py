"""Pruning: whole output channels (structured) or single weights (unstructured).

``prune_channels(ratio)``
    Every *prunable* op loses ``removed = floor(ratio x C)`` of its ``C`` output
    channels (``ratio`` read as its shortest decimal, so ``0.3 x 10`` is exactly 3),
    keeping ``kept = C - removed >= 1``. Prunable: a ``conv`` with ``groups == 1`` or an
    ``fc``, with its shape in ``attrs``, that is not an exit op (its output is the
    model's answer) and whose channels reach only ``conv`` / ``fc`` consumers, through
    channel-preserving ops (``norm``, ``activation``, ``pool``, ``lrn``, ``dwconv``, a
    ``reshape`` with ``attrs['flatten']``) that have that one input: an ``elementwise``
    add (a residual), a ``concat`` or any other consumer would need its other inputs
    pruned alike, so such ops are skipped. When no selected op is prunable the
    technique raises ModelError listing each candidate under its reason.

    With ``f = kept / C``: the op's output elements, MACs, FLOPs and parameters scale by
    ``f`` (output channels); the channel-preserving ops after it scale all their
    figures by ``f``; the consumer's input elements, MACs and FLOPs scale by ``f``
    (input channels) and its weights are recounted from its new shape (its bias does
    not shrink with its inputs); the tensors (edges) between them scale by ``f``. A conv
    both pruned and consuming a pruned op scales by ``f_out x f_in`` — quadratic in
    ``1 - ratio``. Integers are ``N x kept // C`` (exact for builder-made ops, whose
    counts are multiples of the channel count); FLOPs are scaled exactly and rounded
    once. No op is added or removed.

``prune_weights(sparsity, format)``
    Every ``conv``, ``dwconv``, ``fc`` and ``matmul`` op with parameters has a share
    ``sparsity`` of its weights set to zero and stored compressed (``csr`` or
    ``bitmask``; sizes in :mod:`simulator.graph.sparse`). Resident weight memory
    shrinks on every unit. Time and energy change only on units with sparse kernels
    (``sparse_efficiency > 0``: FLOPs x ``(1 - sparse_efficiency x sparsity)``, weights
    read compressed); elsewhere the op runs dense. Pruning an already pruned op
    composes: ``1 - (1 - s1)(1 - s2)``. No selected op with weights: ModelError.

Accuracy: neither has a table (the change depends on the fine-tuning budget);
``accuracy_delta`` gives it, else it is unknown.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from simulator.errors import ModelError
from simulator.graph.model import ModelGraph, Op
from simulator.graph.shape_attrs import kernel_area
from simulator.graph.sparse import WEIGHT_FORMATS
from simulator.graph.techniques.base import (
    ACCURACY_DELTA,
    OPS_GLOB,
    TECHNIQUES,
    Technique,
    check_ratio,
    given_delta,
    nothing_to_do,
    rebuild,
    scale_float,
    scale_int,
    select,
    why_not,
)
from simulator.schema import Field, Number, Record, Text

#: Ops a channel count passes through unchanged (one input, one channel axis).
CHANNEL_PRESERVING: frozenset[str] = frozenset({"norm", "activation", "pool", "lrn", "dwconv"})
#: Ops that consume channels (their input channels shrink, their output stays).
CHANNEL_CONSUMERS: frozenset[str] = frozenset({"conv", "fc"})
#: Shape attrs of a dwconv that scale with its channels.
DW_SHAPE: tuple[str, ...] = ("in_channels", "out_channels", "groups")
#: Ops whose weights ``prune_weights`` prunes.
WEIGHTED_KINDS: frozenset[str] = frozenset({"conv", "dwconv", "fc", "matmul"})


def out_channels(op: Op) -> int | None:
    """Output channels (features) of a conv / fc from its shape attrs, else None."""
    value = op.attrs.get("out_channels", op.attrs.get("out_features"))
    return int(value) if value is not None else None


def _standard(op: Op) -> bool:
    """A conv with groups 1 or an fc, shapes known: channels can be cut or fed."""
    if op.kind == "fc":
        return "out_features" in op.attrs
    return op.kind == "conv" and op.attrs.get("groups") == 1 and kernel_area(op.attrs) is not None


def _passes_channels(op: Op) -> bool:
    """A channel-preserving op (a dwconv of known shape), or a flatten to an fc."""
    if op.kind == "reshape":
        return bool(op.attrs.get("flatten"))
    return op.kind in CHANNEL_PRESERVING and (op.kind != "dwconv" or "groups" in op.attrs)


def _reach(graph: ModelGraph, name: str) -> tuple[list[str], list[str]] | str:
    """(channel-preserving ops, consumers) the channels of ``name`` flow to, or why
    they cannot be cut."""
    passing, consumers, frontier = [], [], list(graph.successors(name))
    if not frontier:
        return "exit ops (their output is the model's answer)"
    while frontier:
        nxt = frontier.pop(0)
        op = graph.op(nxt)
        if len(graph.predecessors(nxt)) != 1:
            return "ops whose channels reach an op with other inputs (a residual add, a concat)"
        if op.time_s:
            return "ops whose channels reach an op with an explicit time table"
        if _standard(op):
            consumers.append(nxt)
        elif _passes_channels(op):
            passing.append(nxt)
            frontier += graph.successors(nxt)
            if not graph.successors(nxt):  # the pruned channels would be the model's output
                return "ops whose channels reach the model's output"
        else:
            return (
                "ops whose channels reach an op that cannot shrink with them (neither a "
                "conv / fc of known shape nor a channel-wise op)"
            )
    return passing, consumers


#: Why a conv / fc lacks what channel pruning needs; see :func:`_unprunable`.
NO_SHAPE = (
    "conv / fc ops without shape attributes (an inline op declares in_channels, "
    "out_channels, kernel / in_features, out_features; an ONNX conv needs a 2-D "
    "constant kernel, an fc a constant 2-D weight)"
)


def _unprunable(op: Op) -> str | None:
    """Why ``op`` (a candidate: a conv, dwconv or fc) cannot lose output channels."""
    if op.time_s:
        return "ops with an explicit time table (no figures to scale)"
    if op.kind == "dwconv":
        return "depthwise convs (their channels follow their input's)"
    if out_channels(op) is None or (op.kind == "conv" and "groups" not in op.attrs):
        return NO_SHAPE
    if not _standard(op):
        return "grouped convs (groups > 1)"
    return None


def shape_params(op: Op) -> int:
    """Parameters of a conv (groups 1) or fc from its shape attrs, bias included."""
    a = op.attrs
    if op.kind == "fc":
        return a["in_features"] * a["out_features"] + a.get("bias", 0) * a["out_features"]
    taps = kernel_area(a)
    if taps is None:  # _standard admits no such conv
        raise ValueError(f"op '{op.name}': conv without kernel shape attrs")
    per_out = a["in_channels"] // a["groups"] * taps
    return a["out_channels"] * (per_out + a.get("bias", 0))


def _scaled(op: Op, kept: int, total: int, **attrs: int) -> Op:
    """``op`` with every count scaled by ``kept / total`` and ``attrs`` updated."""
    return replace(
        op,
        flops=scale_float(op.flops, Fraction(kept, total)),
        macs=float(scale_int(int(op.macs), kept, total)),
        params=scale_int(op.params, kept, total),
        input_elems=op.input_elems,
        output_elems=op.output_elems,
        attrs={**op.attrs, **attrs},
    )


def prune_channels(graph: ModelGraph, ratio: float, ops: str = "*") -> ModelGraph:
    """Remove ``floor(ratio x C)`` output channels of every prunable op matching ``ops``.

    Parameters
    ----------
    graph : ModelGraph
    ratio : float
        Share of channels removed, in [0, 1).
    ops : str
        Glob over the names of the ops to prune (their consumers follow).

    Returns
    -------
    ModelGraph
        Same ops and edges, smaller figures (see the module docstring).

    Raises
    ------
    ModelError
        When ``ratio`` is outside [0, 1), no op matches ``ops``, or none of those that
        do is prunable (the message gives each candidate's reason).
    """
    r = check_ratio(ratio, "prune_channels: ratio", graph.name)
    new = {op.name: op for op in graph}
    edge_scale: dict[tuple[str, str], Fraction] = {}
    reasons: dict[str, list[str]] = {}
    prunable = 0
    for op in select(graph, ops, "prune_channels"):
        if op.kind not in ("conv", "dwconv", "fc"):
            continue
        reach = _unprunable(op) or _reach(graph, op.name)
        if len(graph.predecessors(op.name)) > 1:  # e.g. a FusedConv adding a residual
            reach = "ops reading several tensors (their other inputs would shrink alike)"
        if isinstance(reach, str):
            why_not(reasons, reach, op.name)
            continue
        prunable += 1
        channels = out_channels(op) or 0
        kept = channels - math.floor(r * channels)
        if kept == channels:
            continue
        f = Fraction(kept, channels)
        passing, consumers = reach
        key = "out_channels" if op.kind == "conv" else "out_features"
        cur = new[op.name]
        cur = _scaled(cur, kept, channels, **{key: kept})
        new[op.name] = replace(cur, output_elems=scale_int(op.output_elems, kept, channels))
        for name in passing:
            p = new[name]
            extra = {}
            if p.kind == "dwconv":  # one group per channel: all three shrink alike
                extra = {k: scale_int(p.attrs[k], kept, channels) for k in DW_SHAPE}
            p = _scaled(p, kept, channels, **extra)
            new[name] = replace(
                p,
                input_elems=scale_int(p.input_elems, kept, channels),
                output_elems=scale_int(p.output_elems, kept, channels),
            )
        for name in consumers:
            c = new[name]
            shape_key = "in_channels" if c.kind == "conv" else "in_features"
            width = int(c.attrs[shape_key])
            c = replace(c, attrs={**c.attrs, shape_key: scale_int(width, kept, channels)})
            c = replace(
                c,
                flops=scale_float(c.flops, f),
                macs=float(scale_int(int(c.macs), kept, channels)),
            )
            new[name] = replace(
                c,
                # recount the weights from the shape: the bias does not shrink with the inputs
                params=new[name].params - shape_params(new[name]) + shape_params(c),
                input_elems=scale_int(c.input_elems, kept, channels),
            )
        for src in (op.name, *passing):
            for dst in graph.successors(src):
                edge_scale[src, dst] = edge_scale.get((src, dst), Fraction(1)) * f
    if not prunable:
        raise nothing_to_do("prune_channels", ops, graph, reasons)
    edges = []
    for e in graph.edges():
        scale = edge_scale.get((e.src, e.dst))
        edges.append(
            e
            if scale is None
            else replace(e, bytes=scale_int(e.bytes, scale.numerator, scale.denominator))
        )
    return rebuild(graph, [new[name] for name in graph.order], edges)


def prune_weights(
    graph: ModelGraph, sparsity: float, weight_format: str = "bitmask", ops: str = "*"
) -> ModelGraph:
    """Zero a share ``sparsity`` of the weights of conv / dwconv / fc / matmul ops.

    Parameters
    ----------
    graph : ModelGraph
    sparsity : float
        Share of weights set to zero, in [0, 1).
    weight_format : str
        Compressed storage, one of :data:`~simulator.graph.sparse.WEIGHT_FORMATS`.
    ops : str
        Glob over op names.

    Returns
    -------
    ModelGraph
        Same ops, names and edges; pruned ops carry ``attrs['sparsity']`` and
        ``attrs['weight_format']`` (their ``weight_bytes`` is the compressed size).

    Raises
    ------
    ModelError
        When ``sparsity`` is outside [0, 1), the format is unknown, or no selected op
        has weights.
    """
    s = check_ratio(sparsity, "prune_weights: sparsity", graph.name)
    if weight_format not in WEIGHT_FORMATS:
        raise ModelError(
            f"prune_weights: unknown format '{weight_format}'; valid: {', '.join(WEIGHT_FORMATS)}",
            graph.name,
        )
    chosen = {op.name for op in select(graph, ops, "prune_weights")}
    weighted = [n for n in chosen if graph.op(n).kind in WEIGHTED_KINDS and graph.op(n).params]
    if not weighted:
        kinds = [n for n in graph.order if n in chosen and graph.op(n).kind in WEIGHTED_KINDS]
        no_weights = {"conv / dwconv / fc / matmul ops without parameters": kinds} if kinds else {}
        raise nothing_to_do("prune_weights", ops, graph, no_weights)
    new_ops = []
    for op in graph:
        if op.name in weighted and s:
            combined = 1 - (1 - Fraction(repr(op.sparsity))) * (1 - s)
            attrs = {**op.attrs, "sparsity": float(combined), "weight_format": weight_format}
            op = replace(op, attrs=attrs)
        new_ops.append(op)
    return rebuild(graph, new_ops, graph.edges())


_RATIO = Number(ge=0)  # the upper bound (< 1) is checked by the transform

TECHNIQUES.register(
    "prune_channels",
    Record(
        {
            "ratio": Field(_RATIO, doc="share of output channels removed, in [0, 1)"),
            "ops": OPS_GLOB,
            "accuracy_delta": ACCURACY_DELTA,
        },
        name="prune_channels options",
    ),
    doc="remove a share of conv / fc output channels (structured pruning)",
)(Technique(lambda g, o: prune_channels(g, o["ratio"], o.get("ops", "*")), given_delta))

TECHNIQUES.register(
    "prune_weights",
    Record(
        {
            "sparsity": Field(_RATIO, doc="share of weights set to zero, in [0, 1)"),
            "format": Field(
                Text(choices=tuple(WEIGHT_FORMATS), what="weight format"), default="csr"
            ),
            "ops": OPS_GLOB,
            "accuracy_delta": ACCURACY_DELTA,
        },
        name="prune_weights options",
    ),
    doc="zero a share of the weights, stored compressed (unstructured pruning)",
)(
    Technique(
        lambda g, o: prune_weights(g, o["sparsity"], o.get("format", "csr"), o.get("ops", "*")),
        given_delta,
    )
)
