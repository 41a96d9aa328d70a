"""Graph transforms: pure functions from a :class:`ModelGraph` to a rewritten one.

:func:`split_op` cuts one operator into ``k`` parts that can run on ``k`` units at once
(intra-layer co-execution: CoDL, μLayer on one SoC; MoDNN across phones), followed by a
merge op that gathers the parts' outputs. :func:`split_ops` does several at once.

Two ways to cut an op (``axis``):

``channels`` (default; μLayer's channel-wise split, CoDL's OC partition)
    Each part computes a share of the output channels (for ``fc`` / ``matmul`` and any
    other op: a share of the output elements). Every part reads the op's **full** input:
    an edge from every predecessor to every part, with the original edge's bytes. FLOPs,
    MACs, parameters (each part holds the weights of its own output channels) and output
    elements are scaled by the part's ratio; ``input_elems`` stays the original.

``rows`` (MoDNN's one-dimensional spatial partition, CoDL's OH partition)
    Each part computes a band of output rows of a spatial op (``conv``, ``dwconv``,
    ``pool``, ``elementwise``, ``activation``, ``norm``, ``lrn``) and reads the matching
    band of its input: the bytes of every input edge and ``input_elems`` are scaled by the
    ratio. Every part needs **all** the weights, so ``params`` is not scaled. The halo
    (the ``k - 1`` extra input rows a ``k x k`` window needs at each internal band
    boundary) is not counted: an :class:`~simulator.graph.model.Op` has no shape. The
    bands together really read ``(k - 1) x (bands - 1)`` rows more than the map has: for
    a 3x3 conv cut into 4 bands, 2.7 % more on a 224-row map, 43 % more on a 14-row map.

Figures of part ``i`` (ratio ``r_i``, ratios normalised to sum exactly 1):

* ``flops_i = r_i * flops`` and ``macs_i = r_i * macs`` (floats; they sum to the
  original within float rounding, and ``flops_i >= 2 * macs_i`` still holds because
  scaling by ``r_i`` rounds monotonically and scaling by 2 is exact);
* integer counts (``output_elems``, and ``params`` / ``input_elems`` / edge bytes where
  they are scaled) are apportioned by the largest-remainder (Hamilton) method: part
  ``i`` gets ``floor(r_i * N)`` and the ``N - Σ floor`` units left go, one each, to the
  parts with the largest fractional remainders (ties: the lower index), computed in
  exact rational arithmetic, so the parts sum **exactly** to ``N``.

The merge op ``<name><suffix>merge`` is kind ``concat`` with zero FLOPs; it reads every
part (edge ``part_i -> merge`` carries part ``i``'s output bytes) and outputs the
original ``output_elems``; every consumer of the original op reads the merge (edges
``merge -> consumer`` keep the original bytes and ``comm_s``). Because it copies the
output once, the merge costs its unit the roofline memory time of ``2 x output bytes``
plus a dispatch. Part and merge ops take the original op's place in declaration order,
so topological tie-breaks are unchanged elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction

from simulator.errors import ModelError
from simulator.graph.kind_figures import DEFAULT_PARALLEL_FRACTION
from simulator.graph.model import Edge, ModelGraph, Op

#: Ways to cut an op (see the module docstring).
AXES: tuple[str, ...] = ("channels", "rows")

#: Op kinds a ``rows`` split applies to (ops whose output rows need only a band of input).
SPATIAL_KINDS: frozenset[str] = frozenset(
    {"conv", "dwconv", "pool", "elementwise", "activation", "norm", "lrn"}
)

#: Tolerance on ``Σ ratios == 1``.
RATIO_SUM_TOLERANCE = 1e-9


def part_name(op: str, index: int, suffix: str = "#") -> str:
    """Name of part ``index`` of op ``op``: ``conv1#0``."""
    return f"{op}{suffix}{index}"


def merge_name(op: str, suffix: str = "#") -> str:
    """Name of the merge op of a split op: ``conv1#merge``."""
    return f"{op}{suffix}merge"


def check_ratios(ratios: Sequence[float], what: str = "split") -> tuple[float, ...]:
    """The ratios as floats normalised to sum 1.

    Raises
    ------
    ModelError
        When there are none, one is not a finite number > 0, or they do not sum to 1
        (within :data:`RATIO_SUM_TOLERANCE`).
    """
    values = tuple(float(r) for r in ratios)
    if not values:
        raise ModelError(f"{what}: needs at least one ratio")
    for r in values:
        if not (math.isfinite(r) and r > 0):
            raise ModelError(f"{what}: ratios must be finite and > 0, got {list(values)}")
    total = math.fsum(values)
    if abs(total - 1.0) > RATIO_SUM_TOLERANCE:
        raise ModelError(f"{what}: ratios must sum to 1, got {list(values)} (sum {total:.12g})")
    return tuple(r / total for r in values)


def apportion(total: int, ratios: Sequence[float]) -> list[int]:
    """Split the integer ``total`` into parts proportional to ``ratios`` that sum to it.

    Largest-remainder (Hamilton) method in exact rational arithmetic: part ``i`` gets
    ``floor(total * r_i / Σr)``; the units left over go one each to the parts with the
    largest fractional remainders, ties to the lower index.

    >>> apportion(10, [0.25, 0.75])
    [3, 7]
    >>> apportion(7, [1 / 3, 1 / 3, 1 / 3])
    [3, 2, 2]
    """
    total = int(total)
    exact = [Fraction(r) for r in ratios]
    denominator = sum(exact)
    shares = [total * r / denominator for r in exact]
    parts = [math.floor(s) for s in shares]
    left = total - sum(parts)
    by_remainder = sorted(range(len(parts)), key=lambda i: (-(shares[i] - parts[i]), i))
    for i in by_remainder[:left]:
        parts[i] += 1
    return parts


def part_ops(
    op: Op, ratios: Sequence[float], axis: str = "channels", suffix: str = "#"
) -> list[Op]:
    """The part ops :func:`split_op` makes of ``op`` (ratios already checked)."""
    outputs = apportion(op.output_elems, ratios)
    if axis == "channels":
        params = apportion(op.params, ratios)
        inputs = [op.input_elems] * len(ratios)
    else:
        params = [op.params] * len(ratios)
        inputs = apportion(op.input_elems, ratios)
    return [
        replace(
            op,
            name=part_name(op.name, i, suffix),
            flops=r * op.flops,
            macs=r * op.macs,
            params=params[i],
            input_elems=inputs[i],
            output_elems=outputs[i],
        )
        for i, r in enumerate(ratios)
    ]


def merge_op(op: Op, suffix: str = "#") -> Op:
    """The merge op :func:`split_op` appends after the parts of ``op``."""
    return Op(
        name=merge_name(op.name, suffix),
        kind="concat",
        flops=0.0,
        macs=0.0,
        params=0,
        input_elems=op.output_elems,
        output_elems=op.output_elems,
        dtype=op.dtype,
        parallel_fraction=DEFAULT_PARALLEL_FRACTION["concat"],
    )


def split_ops(
    graph: ModelGraph,
    splits: Mapping[str, Sequence[float]],
    suffix: str = "#",
    axis: str | Mapping[str, str] = "channels",
) -> ModelGraph:
    """Split several ops at once; see :func:`split_op` for what one split does.

    Parameters
    ----------
    graph : ModelGraph
    splits : mapping of op name to ratios
        The ops to split and the ratios of their parts (each > 0, summing to 1).
    suffix : str
        Separator of part and merge names (``conv1#0``, ``conv1#merge``).
    axis : str or mapping of op name to str
        ``channels`` or ``rows`` (see the module docstring), for all ops or per op
        (ops the mapping does not name use ``channels``).

    Returns
    -------
    ModelGraph
        A new graph of the same name; ``graph`` is not changed.

    Raises
    ------
    ModelError
        On an unknown op, bad ratios, an unknown axis, a ``rows`` split of a non-spatial
        op, an op with an explicit time table (part times are unknown), or a part /
        merge name that is already taken.
    """
    plan: dict[str, tuple[tuple[float, ...], str]] = {}
    for name, ratios in splits.items():
        op = graph.op(name)  # raises on unknown names
        how = axis if isinstance(axis, str) else axis.get(name, "channels")
        if how not in AXES:
            raise ModelError(f"split of '{name}': unknown axis '{how}'; valid: {AXES}", graph.name)
        if how == "rows" and op.kind not in SPATIAL_KINDS:
            raise ModelError(
                f"split of '{name}': a rows split needs a spatial op "
                f"({', '.join(sorted(SPATIAL_KINDS))}), not '{op.kind}'; use axis 'channels'",
                graph.name,
            )
        if op.time_s:
            raise ModelError(
                f"split of '{name}': the op has an explicit time table, so its parts' times "
                "are unknown; give each part its own op instead",
                graph.name,
            )
        try:
            plan[name] = (check_ratios(ratios, f"split of '{name}'"), how)
        except ModelError as exc:
            raise ModelError(exc.message, graph.name) from None

    new_ops: list[Op] = []
    replaced: dict[str, list[Op]] = {}
    for op in graph:
        if op.name not in plan:
            new_ops.append(op)
            continue
        ratios, how = plan[op.name]
        parts = part_ops(op, ratios, how, suffix)
        replaced[op.name] = parts
        new_ops += [*parts, merge_op(op, suffix)]
    taken = set(graph.order) - set(plan)
    new_names = {o.name for parts in replaced.values() for o in parts}
    new_names |= {merge_name(n, suffix) for n in plan}
    clashes = sorted(taken & new_names)
    if clashes:
        raise ModelError(f"split would reuse existing op names {clashes[:5]}", graph.name)

    new_edges: list[Edge] = []
    for edge in graph.edges():
        src = merge_name(edge.src, suffix) if edge.src in plan else edge.src
        if edge.dst not in plan:
            new_edges.append(replace(edge, src=src))
            continue
        ratios, how = plan[edge.dst]
        shares = apportion(edge.bytes, ratios) if how == "rows" else [edge.bytes] * len(ratios)
        for part, nbytes in zip(replaced[edge.dst], shares, strict=True):
            new_edges.append(replace(edge, src=src, dst=part.name, bytes=nbytes))
    for name, parts in replaced.items():
        merge = merge_name(name, suffix)
        new_edges += [Edge(part.name, merge, part.output_bytes) for part in parts]
    return ModelGraph(graph.name, new_ops, new_edges)


def split_op(
    graph: ModelGraph,
    op_name: str,
    ratios: Sequence[float],
    suffix: str = "#",
    axis: str = "channels",
) -> ModelGraph:
    """Split op ``op_name`` into ``len(ratios)`` parts plus a merge op.

    Parts ``<op>#0 .. <op>#k-1`` carry the op's work scaled by their ratios (see the
    module docstring for exactly what is scaled and how integers are rounded); the merge
    op ``<op>#merge`` (kind ``concat``, zero FLOPs, the original output) gathers them and
    feeds every consumer of the original op.

    Parameters
    ----------
    graph : ModelGraph
    op_name : str
    ratios : sequence of float
        Each > 0, summing to 1 (within 1e-9; normalised exactly).
    suffix : str
        Separator of the new names.
    axis : str
        ``channels`` (every part reads the full input) or ``rows`` (every part reads a
        band of it and holds all the weights).

    Returns
    -------
    ModelGraph
        A new graph; ``graph`` is not changed.

    Raises
    ------
    ModelError
        See :func:`split_ops`.
    """
    return split_ops(graph, {op_name: ratios}, suffix=suffix, axis=axis)


__all__ = [
    "AXES",
    "SPATIAL_KINDS",
    "apportion",
    "check_ratios",
    "merge_name",
    "merge_op",
    "part_name",
    "part_ops",
    "split_op",
    "split_ops",
]
