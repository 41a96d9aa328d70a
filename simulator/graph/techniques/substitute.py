"""Lightweight substitution: a standard convolution becomes depthwise-separable.

A ``conv`` with ``groups == 1`` and a ``k x k`` kernel, ``k >= 2``, from ``C_in`` to
``C_out = N`` channels on an ``H_o x W_o`` output becomes (Howard et al. 2017,
"MobileNets", arXiv:1704.04861, section 3.1):

* ``<name>_dw``: depthwise ``k x k`` on ``C_in`` channels (kind ``dwconv``, same
  stride): MACs ``C_in x H_o x W_o x k²``, params ``C_in x k²`` (+ ``C_in`` bias if
  the conv had one), reading the conv's input;
* ``<name>``: pointwise ``1 x 1``, ``C_in -> C_out`` (kind ``conv``, keeps the name,
  so edges out of it and placement rules still apply): MACs ``C_out x H_o x W_o x
  C_in``, params ``C_out x C_in`` (+ ``C_out`` bias).

A fused conv (:mod:`.fusion`) is left alone: its kernel is a library's fused one, so
substitute first and fuse after — the order of the two matters. The cost ratio is
exactly ``(C_in H_o W_o k² + C_out H_o W_o C_in) / (C_out H_o W_o C_in k²) = 1/N +
1/k²`` (the paper's equation 5). The new edge ``<name>_dw -> <name>``
carries the depthwise output. The accuracy change is an input (``accuracy_delta``):
the paper's Table 4 reports a 1.1 pp loss for MobileNet built separable (70.6 %)
versus with full convolutions (71.7 %), but that is a network trained so, not a
substituted one. When no selected conv can be substituted the technique raises
ModelError saying why for each candidate (depthwise, 1 x 1, grouped, fused, no shape).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.errors import ModelError
from simulator.graph.kind_figures import DEFAULT_PARALLEL_FRACTION
from simulator.graph.model import Edge, ModelGraph, Op
from simulator.graph.techniques.base import (
    ACCURACY_DELTA,
    OPS_GLOB,
    TECHNIQUES,
    Technique,
    given_delta,
    nothing_to_do,
    rebuild,
    select,
    why_not,
)
from simulator.schema import Record

#: Suffix of the depthwise half's name.
DW_SUFFIX = "_dw"


def substitutable(op: Op) -> bool:
    """A standard (groups 1), unfused conv with a kernel of at least 2 and known shape."""
    return op.kind == "conv" and _unsubstitutable(op) is None


def _unsubstitutable(op: Op) -> str | None:
    """Why the conv / dwconv ``op`` cannot become depthwise + pointwise, None if it can."""
    a = op.attrs
    if op.kind == "dwconv":
        return "depthwise convs (already separable)"
    if op.time_s:
        return "convs with an explicit time table"
    if "kernel_h" in a:
        return "convs with a non-square kernel (kh x kw)"
    if "groups" not in a or "kernel" not in a:
        return (
            "convs without shape attributes (an inline op declares in_channels, "
            "out_channels, kernel; an ONNX conv needs a 2-D constant kernel)"
        )
    if op.fused:
        return (
            "fused convs (substitute before fusing; for an ONNX model import with "
            "fuse: none and apply the fuse technique after)"
        )
    if a["groups"] != 1:
        return "grouped convs (groups > 1)"
    if a["kernel"] < 2:
        return "1 x 1 convs (already pointwise)"
    return None


def separable_pair(op: Op) -> tuple[Op, Op]:
    """(depthwise, pointwise) ops replacing the standard conv ``op``."""
    a = op.attrs
    c_in, c_out, k, bias = a["in_channels"], a["out_channels"], a["kernel"], a.get("bias", 0)
    spatial = op.output_elems // c_out  # H_o x W_o
    dw_macs = c_in * spatial * k * k
    pw_macs = c_out * spatial * c_in
    dw = Op(
        name=op.name + DW_SUFFIX,
        kind="dwconv",
        flops=float(2 * dw_macs),
        macs=float(dw_macs),
        params=c_in * k * k + (c_in if bias else 0),
        input_elems=op.input_elems,
        output_elems=c_in * spatial,
        dtype=op.dtype,
        parallel_fraction=DEFAULT_PARALLEL_FRACTION["dwconv"],
        attrs={**a, "out_channels": c_in, "groups": c_in},
    )
    pw = replace(
        op,
        flops=float(2 * pw_macs),
        macs=float(pw_macs),
        params=c_out * c_in + (c_out if bias else 0),
        input_elems=c_in * spatial,
        attrs={**a, "kernel": 1},
    )
    return dw, pw


def depthwise_separable(graph: ModelGraph, ops: str = "*") -> ModelGraph:
    """Replace every substitutable conv matching ``ops`` by depthwise + pointwise.

    Parameters
    ----------
    graph : ModelGraph
    ops : str
        Glob over op names.

    Returns
    -------
    ModelGraph
        One more op per substituted conv (see the module docstring).

    Raises
    ------
    ModelError
        When a ``<name>_dw`` name is already taken, or no selected op is substitutable
        (the message lists why each conv is not).
    """
    chosen: set[str] = set()
    reasons: dict[str, list[str]] = {}
    for op in select(graph, ops, "depthwise_separable"):
        why = _unsubstitutable(op) if op.kind in ("conv", "dwconv") else None
        if why is not None:
            why_not(reasons, why, op.name)
        elif op.kind == "conv":
            chosen.add(op.name)
    if not chosen:
        raise nothing_to_do("depthwise_separable", ops, graph, reasons)
    new_ops, edges, done = [], [], set()
    for op in graph:
        if op.name in chosen:
            dw, pw = separable_pair(op)
            if dw.name in graph:
                raise ModelError(f"substitute: op name '{dw.name}' already exists", graph.name)
            new_ops += [dw, pw]
            edges.append(Edge(dw.name, pw.name, dw.output_bytes))
            done.add(op.name)
        else:
            new_ops.append(op)
    for e in graph.edges():
        edges.append(replace(e, dst=e.dst + DW_SUFFIX) if e.dst in done else e)
    return rebuild(graph, new_ops, edges)


TECHNIQUES.register(
    "depthwise_separable",
    Record(
        {"ops": OPS_GLOB, "accuracy_delta": ACCURACY_DELTA},
        name="depthwise_separable options",
    ),
    doc="standard k x k conv -> depthwise k x k + pointwise 1 x 1 (cost 1/N + 1/k²)",
)(Technique(lambda g, o: depthwise_separable(g, o.get("ops", "*")), given_delta))
