"""Operator fusion: a producer and the per-element ops after it become one op.

Two patterns (``patterns`` option), each grown greedily in topological order:

``conv_norm_act``
    A ``conv``, ``dwconv``, ``fc`` or ``matmul`` followed by an optional ``norm`` and
    then an optional ``activation`` (conv + BN + ReLU, fc + ReLU, ...).
``elementwise``
    An ``elementwise`` or ``activation`` op followed by a run of ``elementwise`` /
    ``activation`` ops (a residual add + ReLU).

An op joins the group of the op before it only when it is that op's **only** successor
and that op is its **only** predecessor (the intermediate tensor has no other reader),
and both have the same dtype and no explicit time table. The group's first op (the
head) may have several inputs, its last (the tail) several consumers.

The fused op keeps the head's name, kind, dtype and parallel fraction; the absorbed
ops' names disappear and are listed in ``attrs['fused']`` (head first). Its figures:

* ``flops``, ``macs``, ``params``: the sums over the group (BN is not folded away:
  its 2 x C parameters stay, a slight over-count);
* ``input_elems`` of the head and ``output_elems`` of the tail: the intermediate
  tensors are no longer written and read back, so the roofline traffic drops by
  ``2 x Σ intermediate bytes`` and one dispatch replaces ``len(group)``;
* edges into the head are kept; edges out of the tail leave the fused op, bytes kept.

A unit whose kernel library has no fused kernels (``fused_kernels: false``) cannot run
a fused op; placement falls back and the scorecard counts it against flexibility.
Fusion is exact in arithmetic, so its accuracy change is 0. When no group forms (a
model already fused, e.g. an ONNX model imported with ``fuse="ort"``) it raises
ModelError rather than silently returning the graph unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from simulator.errors import ModelError
from simulator.graph.model import ModelGraph, Op
from simulator.graph.techniques.base import (
    ACCURACY_DELTA,
    TECHNIQUES,
    Technique,
    lossless,
    nothing_to_do,
    rebuild,
)
from simulator.schema import Field, ListOf, Record, Text

#: Kinds that may head a ``conv_norm_act`` group.
PRODUCER_KINDS: frozenset[str] = frozenset({"conv", "dwconv", "fc", "matmul"})
#: Kinds an ``elementwise`` group is made of.
POINTWISE_KINDS: frozenset[str] = frozenset({"elementwise", "activation"})
#: Fusion patterns.
PATTERNS: tuple[str, ...] = ("conv_norm_act", "elementwise")


def _follows(graph: ModelGraph, prev: Op, nxt: str) -> Op | None:
    """The op ``nxt`` if it may join ``prev``'s group (sole reader, sole producer)."""
    if graph.successors(prev.name) != [nxt] or graph.predecessors(nxt) != [prev.name]:
        return None
    op = graph.op(nxt)
    if op.dtype != prev.dtype or op.time_s or prev.time_s:
        return None
    return op


def _grow(graph: ModelGraph, head: Op, patterns: Sequence[str]) -> list[Op]:
    group = [head]
    if "conv_norm_act" in patterns and head.kind in PRODUCER_KINDS and not head.fused:
        for wanted in ("norm", "activation"):
            succ = graph.successors(group[-1].name)
            nxt = _follows(graph, group[-1], succ[0]) if len(succ) == 1 else None
            if nxt is not None and nxt.kind == wanted:
                group.append(nxt)
    elif "elementwise" in patterns and head.kind in POINTWISE_KINDS:
        while True:
            succ = graph.successors(group[-1].name)
            nxt = _follows(graph, group[-1], succ[0]) if len(succ) == 1 else None
            if nxt is None or nxt.kind not in POINTWISE_KINDS:
                break
            group.append(nxt)
    return group


def fused_op(group: Sequence[Op]) -> Op:
    """The one op a fusion group becomes (see the module docstring)."""
    head, tail = group[0], group[-1]
    names = [n for op in group for n in (op.fused or (op.name,))]
    return replace(
        head,
        flops=float(sum(op.flops for op in group)),
        macs=float(sum(op.macs for op in group)),
        params=sum(op.params for op in group),
        output_elems=tail.output_elems,
        attrs={**head.attrs, "fused": tuple(names)},
    )


def _nothing_fuses(graph: ModelGraph, patterns: Sequence[str]) -> ModelError:
    """The error of a fusion that forms no group: what is already fused, what could head one."""
    fused = [op.name for op in graph if op.fused]
    heads = [op.name for op in graph if op.kind in PRODUCER_KINDS | POINTWISE_KINDS]
    reasons = {"ops already fused (an ONNX model imported with fuse: ort is)": fused}
    reasons[
        "conv / fc / matmul / elementwise / activation ops with no sole-reader norm, "
        "activation or elementwise op after them"
    ] = [n for n in heads if n not in fused]
    return nothing_to_do(
        f"fuse ({', '.join(patterns)})", "*", graph, {k: v for k, v in reasons.items() if v}
    )


def fuse(graph: ModelGraph, patterns: Sequence[str] = PATTERNS) -> ModelGraph:
    """Fuse conv/fc/matmul + norm + activation groups and elementwise chains.

    Parameters
    ----------
    graph : ModelGraph
    patterns : sequence of str
        Which of :data:`PATTERNS` to apply.

    Returns
    -------
    ModelGraph
        Fewer ops; every group of two or more ops is one fused op named after its head.

    Raises
    ------
    ModelError
        On an unknown pattern, or when no group of two or more ops forms.
    """
    unknown = sorted(set(patterns) - set(PATTERNS))
    if unknown:
        raise ModelError(f"fuse: unknown pattern(s) {unknown}; valid: {', '.join(PATTERNS)}")
    owner: dict[str, str] = {}  # absorbed op -> the head that absorbed it
    new_ops = []
    for op in graph:
        if op.name in owner:
            continue
        group = _grow(graph, op, patterns)
        for member in group[1:]:
            owner[member.name] = op.name
        new_ops.append(fused_op(group) if len(group) > 1 else op)
    if not owner:
        raise _nothing_fuses(graph, patterns)
    edges = [
        replace(e, src=owner.get(e.src, e.src))
        for e in graph.edges()
        if e.dst not in owner  # edges inside a group vanish with the intermediate tensor
    ]
    return rebuild(graph, new_ops, edges)


TECHNIQUES.register(
    "fuse",
    Record(
        {
            "patterns": Field(
                ListOf(Text(choices=PATTERNS, what="fusion pattern"), min_len=1),
                default=list(PATTERNS),
            ),
            "accuracy_delta": ACCURACY_DELTA,
        },
        name="fuse options",
    ),
    doc="fuse conv/fc + norm + activation and elementwise chains (exact: 0 pp)",
)(Technique(lambda graph, o: fuse(graph, tuple(o.get("patterns", PATTERNS))), lossless))
