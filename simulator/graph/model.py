"""Operators and the model DAG.

A model is a directed acyclic graph of :class:`Op` over a :class:`networkx.DiGraph`.
Ops carry the work (FLOPs, MACs), the data (element counts, turned into bytes by the
op's dtype) and, for scheduling-theory graphs, explicit per-unit execution times.
Edges carry the bytes of the tensor they move and, optionally, an explicit
communication time paid when both ends sit on different units.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from simulator.errors import ModelError
from simulator.frozen import FrozenMap
from simulator.graph.context import stamp_context
from simulator.graph.sparse import stored_weight_bytes

#: Bytes per element of each supported dtype.
_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "int8": 1}  # read on every byte count
DTYPE_BYTES: Mapping[str, int] = FrozenMap(_DTYPE_BYTES)  # a copy, for everyone else

#: Operator kinds the cost model and the unit `supports` lists speak of.
OP_KINDS: tuple[str, ...] = (
    "conv",
    "dwconv",
    "fc",
    "matmul",
    "pool",
    "elementwise",
    "activation",
    "norm",
    "concat",
    "softmax",
    "attention",
    "embedding",
    "reshape",
    "lrn",
    "custom",
)


def _empty_times() -> Mapping[str, float]:
    return FrozenMap()


@dataclass(frozen=True)
class Op:
    """One operator of a model.

    Attributes
    ----------
    name : str
        Unique within its model.
    kind : str
        One of :data:`OP_KINDS`.
    flops : float
        Floating-point (or integer) operations, counting a multiply-add as 2.
    macs : float
        Multiply-accumulates (0 for ops that do none); ``flops >= 2 * macs``.
    params : int
        Learned parameters (weights and biases) resident on the unit that runs the op.
    input_elems : int
        Elements read from activations (all inputs together).
    output_elems : int
        Elements of the output tensor.
    dtype : str
        Element type of activations and weights, one of :data:`DTYPE_BYTES`.
    parallel_fraction : float
        Amdahl parallel fraction ``p`` in [0, 1] of the op on a multi-core unit.
    time_s : Mapping[str, float]
        Explicit execution time in seconds per unit name; when non-empty it overrides
        the roofline and the op can run only on the units it names.
    attrs : Mapping[str, Any]
        Shape and technique annotations (empty by default). Shape keys, set by the
        layer builder: ``in_channels``, ``out_channels``, ``kernel``, ``groups``,
        ``bias`` (convs), ``in_features``, ``out_features``, ``bias`` (fc) and
        ``flatten`` (a reshape flattening all but the batch; also set by the ONNX
        importer and declared by inline ops, docs/techniques.md). Technique
        keys (:mod:`simulator.graph.techniques`): ``fused`` (names of the ops a fused op
        absorbed, its own first), ``sparsity`` (fraction of zero weights) and
        ``weight_format`` (``csr`` or ``bitmask``). Context keys, set by
        :class:`ModelGraph` on every op it holds (:mod:`simulator.graph.context`):
        ``net_weight_bytes`` (the whole network's weight bytes) and ``input_age_bytes``
        (bytes touched since the op's oldest input was written), learned-predictor
        features.
    """

    name: str
    kind: str
    flops: float = 0.0
    macs: float = 0.0
    params: int = 0
    input_elems: int = 0
    output_elems: int = 0
    dtype: str = "fp32"
    parallel_fraction: float = 1.0
    time_s: Mapping[str, float] = field(default_factory=_empty_times)
    attrs: Mapping[str, Any] = field(default_factory=_empty_times)

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("an op needs a non-empty name")
        if self.kind not in OP_KINDS:
            raise ModelError(f"op '{self.name}': unknown kind '{self.kind}'; valid: {OP_KINDS}")
        if self.dtype not in DTYPE_BYTES:
            raise ModelError(
                f"op '{self.name}': unknown dtype '{self.dtype}'; valid: {tuple(DTYPE_BYTES)}"
            )
        for label in ("flops", "macs", "params", "input_elems", "output_elems"):
            value = getattr(self, label)
            if not (math.isfinite(value) and value >= 0):
                raise ModelError(f"op '{self.name}': {label} must be finite and >= 0, got {value}")
        if self.flops < 2 * self.macs:
            raise ModelError(
                f"op '{self.name}': flops ({self.flops}) < 2 x macs ({self.macs}); "
                "a multiply-add counts as 2 FLOPs"
            )
        if not 0.0 <= self.parallel_fraction <= 1.0:
            raise ModelError(
                f"op '{self.name}': parallel_fraction must be in [0, 1], "
                f"got {self.parallel_fraction}"
            )
        for unit, seconds in self.time_s.items():
            if not (math.isfinite(seconds) and seconds >= 0):
                raise ModelError(f"op '{self.name}': time on '{unit}' must be >= 0, got {seconds}")
        object.__setattr__(self, "time_s", FrozenMap(self.time_s))
        object.__setattr__(self, "attrs", FrozenMap(self.attrs))
        sparsity = self.attrs.get("sparsity", 0.0)
        if not 0.0 <= sparsity < 1.0:
            raise ModelError(f"op '{self.name}': sparsity must be in [0, 1), got {sparsity}")

    @property
    def element_bytes(self) -> int:
        return _DTYPE_BYTES[self.dtype]

    @property
    def sparsity(self) -> float:
        """Fraction of the op's weights that are zero (0 unless weight-pruned)."""
        return float(self.attrs.get("sparsity", 0.0)) if self.attrs else 0.0

    @property
    def fused(self) -> tuple[str, ...]:
        """Names of the ops this fused op absorbed (its own first); () if not fused."""
        return tuple(self.attrs.get("fused", ()))

    @property
    def dense_weight_bytes(self) -> int:
        """Bytes of the weights stored dense: ``params x element bytes``."""
        return self.params * self.element_bytes

    @property
    def weight_bytes(self) -> int:
        """Resident bytes of the weights: dense, or the compressed sparse format's size
        when that is smaller (see :func:`simulator.graph.sparse.stored_weight_bytes`).
        """
        if not self.sparsity:
            return self.dense_weight_bytes
        # below a format's break-even sparsity the weights are kept dense
        return min(self.dense_weight_bytes, self._sparse_weight_bytes())

    def _sparse_weight_bytes(self) -> int:
        return stored_weight_bytes(
            self.params,
            self.element_bytes,
            self.sparsity,
            self.attrs.get("weight_format", "bitmask"),
            int(self.attrs.get("out_channels", self.attrs.get("out_features", 1))),
        )

    @property
    def input_bytes(self) -> int:
        return self.input_elems * self.element_bytes

    @property
    def output_bytes(self) -> int:
        return self.output_elems * self.element_bytes

    @property
    def is_view(self) -> bool:
        """True for a ``reshape`` that aliases its input instead of copying it: one marked
        ``attrs['view']`` (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout at
        inference, as the ONNX importer and GraphBuilder mark them) or ``attrs['flatten']``.
        Runtimes copy nothing for it, so the cost model charges it no memory time and no
        DRAM traffic (:func:`simulator.hardware.cost.moves_bytes`); a Transpose, Split or
        Slice (also kind ``reshape``) copies and is not a view."""
        return self.kind == "reshape" and bool(self.attrs.get("view") or self.attrs.get("flatten"))

    @property
    def bytes_moved(self) -> int:
        """Bytes of the op's tensors: inputs, weights and output (the roofline's traffic,
        except for a view, which moves none: :attr:`is_view`)."""
        return self.input_bytes + self.weight_bytes + self.output_bytes


@dataclass(frozen=True)
class Edge:
    """A tensor flowing from ``src`` to ``dst``.

    Attributes
    ----------
    src, dst : str
        Op names.
    bytes : int
        Size of the tensor moved.
    comm_s : float or None
        Explicit communication time (seconds) paid when ``src`` and ``dst`` run on
        different units; overrides the transfer model. ``None`` means "use the model".
    """

    src: str
    dst: str
    bytes: int
    comm_s: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.bytes) and self.bytes >= 0):
            raise ModelError(f"edge {self.src}->{self.dst}: bytes must be >= 0, got {self.bytes}")
        if self.comm_s is not None and not (math.isfinite(self.comm_s) and self.comm_s >= 0):
            raise ModelError(f"edge {self.src}->{self.dst}: comm_s must be >= 0, got {self.comm_s}")


class ModelGraph:
    """A model DAG: ops as nodes, tensors as edges.

    Parameters
    ----------
    name : str
        Model name, used in results and errors.
    ops : iterable of Op
        Operators; their order is the deterministic tie-break for topological order.
    edges : iterable of Edge
        Tensors between ops. An op without predecessors reads the request's input
        (``op.input_bytes``) from the source node; an op without successors sends its
        output back to the source node. The graph holds copies of them stamped with
        their context (``attrs['net_weight_bytes']``, ``attrs['input_age_bytes']``:
        :mod:`simulator.graph.context`).

    Raises
    ------
    ModelError
        On duplicate op names, edges naming unknown ops, self-loops or cycles.
    """

    def __init__(self, name: str, ops: Iterable[Op], edges: Iterable[Edge]):
        self.name = name
        graph = nx.DiGraph(name=name)
        for index, op in enumerate(ops):
            if op.name in graph:
                raise ModelError(f"duplicate op name '{op.name}'", name)
            graph.add_node(op.name, op=op, index=index)
        if graph.number_of_nodes() == 0:
            raise ModelError("a model needs at least one op", name)
        for edge in edges:
            for end in (edge.src, edge.dst):
                if end not in graph:
                    raise ModelError(f"edge {edge.src}->{edge.dst} names unknown op '{end}'", name)
            if edge.src == edge.dst:
                raise ModelError(f"self-loop on op '{edge.src}'", name)
            if graph.has_edge(edge.src, edge.dst):
                raise ModelError(f"duplicate edge {edge.src}->{edge.dst}", name)
            graph.add_edge(edge.src, edge.dst, edge=edge)
        if not nx.is_directed_acyclic_graph(graph):
            cycle = nx.find_cycle(graph)
            path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
            raise ModelError(f"the graph has a cycle: {path}", name)
        self._graph = graph
        # plain dicts of what the DiGraph's node views hold: read on every planning step
        self._index: dict[str, int] = {n: data["index"] for n, data in graph.nodes(data=True)}
        self._order = tuple(
            nx.lexicographical_topological_sort(graph, key=lambda n: graph.nodes[n]["index"])
        )
        # after the order: an op's input age counts the ops run before it
        stamp_context(graph, self._order)
        self._ops: dict[str, Op] = {n: data["op"] for n, data in graph.nodes(data=True)}

    # -- structure -------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """The underlying DiGraph (treat as read-only)."""
        return self._graph

    @property
    def order(self) -> tuple[str, ...]:
        """Op names in deterministic topological order (ties by declaration order)."""
        return self._order

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Op]:
        ops = self._ops
        return (ops[n] for n in self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._graph

    def op(self, name: str) -> Op:
        try:
            return self._ops[name]
        except KeyError:
            raise ModelError(f"no op named '{name}'", self.name) from None

    def edge(self, src: str, dst: str) -> Edge:
        return self._graph.edges[src, dst]["edge"]

    def edges(self) -> Iterator[Edge]:
        for name in self._order:
            for dst in self.successors(name):
                yield self._graph.edges[name, dst]["edge"]

    def index(self, name: str) -> int:
        """Declaration index of op ``name``."""
        return self._index[name]

    def predecessors(self, name: str) -> list[str]:
        """Ops whose output ``name`` reads, in declaration order."""
        return self._declared(self._graph.pred[name])

    def successors(self, name: str) -> list[str]:
        """Ops that read the output of ``name``, in declaration order."""
        return self._declared(self._graph.succ[name])

    def _declared(self, names) -> list[str]:
        return sorted(names, key=self._index.__getitem__) if len(names) > 1 else list(names)

    def entry_ops(self) -> list[str]:
        """Ops with no predecessor: they read the request input from the source node."""
        pred = self._graph.pred
        return [n for n in self._order if not pred[n]]

    @property
    def request_input_bytes(self) -> int:
        """Size of a request's input: the largest input any entry op reads.

        The input is one tensor at the source node; every unit that runs an entry op
        receives all of it once.
        """
        return max(self.op(n).input_bytes for n in self.entry_ops())

    def exit_ops(self) -> list[str]:
        """Ops with no successor: their output returns to the source node."""
        succ = self._graph.succ
        return [n for n in self._order if not succ[n]]

    def is_chain(self) -> bool:
        """True when every op has at most one predecessor and one successor."""
        g = self._graph
        return (
            all(g.in_degree(n) <= 1 and g.out_degree(n) <= 1 for n in g)
            and len(self.entry_ops()) == 1
        )

    # -- totals ----------------------------------------------------------------------
    @property
    def total_flops(self) -> float:
        return float(sum(op.flops for op in self))

    @property
    def total_macs(self) -> float:
        return float(sum(op.macs for op in self))

    @property
    def total_params(self) -> int:
        return int(sum(op.params for op in self))

    @property
    def weight_bytes(self) -> int:
        return int(sum(op.weight_bytes for op in self))

    def with_ops(self, ops: Iterable[Op], name: str | None = None) -> ModelGraph:
        """A copy with ops replaced by name (same edges); used by graph transforms."""
        replaced = {op.name: op for op in ops}
        new_ops = [replaced.get(op.name, op) for op in self]
        return ModelGraph(name or self.name, new_ops, self.edges())

    def layer_table(self):
        """Per-op table (pandas DataFrame) of kind, FLOPs, MACs, params and bytes."""
        import pandas as pd

        rows = [
            {
                "op": op.name,
                "kind": op.kind,
                "dtype": op.dtype,
                "macs": op.macs,
                "flops": op.flops,
                "params": op.params,
                "input_bytes": op.input_bytes,
                "output_bytes": op.output_bytes,
                "weight_bytes": op.weight_bytes,
                "parallel_fraction": op.parallel_fraction,
            }
            for op in self
        ]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return (
            f"ModelGraph({self.name!r}, ops={len(self)}, "
            f"macs={self.total_macs:.4g}, params={self.total_params})"
        )
