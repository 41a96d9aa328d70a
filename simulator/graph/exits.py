"""Early-exit models (BranchyNet, Teerapittayanon et al. 2016; Edgent, Li et al. 2018/2020).

A model may declare *exits*: an op of its trunk after which a request may finish, each
with the exit branch's own ops (its small classifier head, chained after that op), the
top-1 accuracy of the requests that leave there and the share of requests that do. The
model's own output is the last exit, ``final``, with the model's accuracy and the share
the early exits leave.

Which ops a request runs (pure functions of the graph, read by the engine and the
policies):

* :func:`cascade_ops`: a request that leaves at exit ``k`` ran the trunk up to exit
  ``k``'s op, the head of ``k`` and the heads of every exit before it (it was judged
  there and went on); nothing after: no compute, no transfer;
* :func:`right_sized_ops`: the model cut at exit ``k`` (Edgent's right-sizing): the trunk
  up to ``k``'s op and ``k``'s head only, as when a policy fixes the exit beforehand.

Which exit a request takes is :func:`choose_exit` of one uniform draw per request from the
app's own seeded stream: the first exit whose cumulative share exceeds it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from simulator.errors import ModelError
from simulator.graph.model import Edge, ModelGraph, Op

#: The name of the last exit: the model's own output.
FINAL = "final"


@dataclass(frozen=True)
class Exit:
    """One early exit of a model.

    Attributes
    ----------
    name : str
        Unique among the model's exits (never ``final``).
    after : str
        The trunk op after which a request may finish.
    head : tuple of str
        The exit branch's own ops, chained after ``after`` (empty: the exit reads
        ``after``'s output as it is).
    accuracy_top1 : float or None
        Top-1 (%) of the requests that leave here; None when unknown.
    probability : float
        Share of all requests that leave here, in [0, 1].
    threshold : float or None
        Instead of ``probability``: a request's confidence at this exit is uniform in
        [0, 1), independent of the other exits'; it leaves here when the confidence is at
        least ``threshold`` (so ``1 - threshold`` of the requests reaching it leave).
    """

    name: str
    after: str
    head: tuple[str, ...] = ()
    accuracy_top1: float | None = None
    probability: float = 0.0
    threshold: float | None = None

    @property
    def output(self) -> str:
        """The op whose output is this exit's answer."""
        return self.head[-1] if self.head else self.after


class ExitModel(ModelGraph):
    """A :class:`ModelGraph` with early exits (their head ops are ops of the graph).

    Parameters
    ----------
    name, ops, edges
        As :class:`ModelGraph`.
    exits : sequence of Exit
        In the order a request meets them.
    final_accuracy_top1 : float or None
        Top-1 (%) of the model's own output.
    """

    def __init__(
        self,
        name: str,
        ops: Iterable[Op],
        edges: Iterable[Edge],
        exits: Sequence[Exit],
        final_accuracy_top1: float | None = None,
    ):
        super().__init__(name, ops, edges)
        self.exits = tuple(exits)
        self.final_accuracy_top1 = final_accuracy_top1
        heads = [h for e in self.exits for h in e.head]
        self.head_ops = frozenset(heads)
        for e in self.exits:
            for op in (e.after, *e.head):
                if op not in self:
                    raise ModelError(f"exit '{e.name}' names unknown op '{op}'", name)

    @property
    def exit_names(self) -> tuple[str, ...]:
        """Every exit's name, ``final`` last."""
        return (*(e.name for e in self.exits), FINAL)

    @property
    def accuracies(self) -> tuple[float | None, ...]:
        """Top-1 (%) per exit, ``final`` last (None: unknown)."""
        return (*(e.accuracy_top1 for e in self.exits), self.final_accuracy_top1)

    @property
    def shares(self) -> tuple[float, ...]:
        """Share of requests per exit, ``final`` last (what the early ones leave): the
        exits' probabilities, or from their confidence thresholds
        ``(1 - t_k) × Π_{j<k} t_j`` (:func:`threshold_shares`)."""
        if any(e.threshold is not None for e in self.exits):
            return threshold_shares([e.threshold or 0.0 for e in self.exits])
        early = tuple(e.probability for e in self.exits)
        return (*early, max(0.0, 1.0 - math.fsum(early)))

    def with_ops(self, ops: Iterable[Op], name: str | None = None) -> ModelGraph:
        """A copy with ops replaced by name (same edges, same exits)."""
        replaced = {op.name: op for op in ops}
        new_ops = [replaced.get(op.name, op) for op in self]
        return ExitModel(
            name or self.name, new_ops, self.edges(), self.exits, self.final_accuracy_top1
        )


def carry_exits(source: ModelGraph, graph: ModelGraph, top1: float | None) -> ModelGraph:
    """``graph`` (``source`` transformed, e.g. by techniques) with ``source``'s exits, and
    ``top1`` as the top-1 of ``final``; ``graph`` as it is when ``source`` has none.

    Raises
    ------
    ModelError
        When the transform removed or renamed an op an exit names (a fusion, say).
    """
    if not isinstance(source, ExitModel):
        return graph
    for e in source.exits:
        missing = [op for op in (e.after, *e.head) if op not in graph]
        if missing:
            raise ModelError(
                f"exit '{e.name}' names op '{missing[0]}', which the model's techniques "
                "removed or renamed (a fusion?): apply them without it or move the exit",
                graph.name,
            )
    return ExitModel(graph.name, list(graph), list(graph.edges()), source.exits, top1)


def exits_of(graph: ModelGraph) -> tuple[Exit, ...]:
    """The early exits of ``graph`` (none for a plain model)."""
    return graph.exits if isinstance(graph, ExitModel) else ()


def attach_exits(
    graph: ModelGraph,
    exits: Sequence[Exit],
    heads: Sequence[Sequence[Op]],
    final_accuracy_top1: float | None = None,
) -> ExitModel:
    """``graph`` with ``exits`` added: each exit's head ops (``heads[i]`` for ``exits[i]``)
    chained after
    its ``after`` op (declared right after it), each edge carrying its producer's output
    bytes.

    Raises
    ------
    ModelError
        When an exit names an unknown op, a head op's name is taken, or the exits are not
        in trunk order (:func:`exit_problems` says which, for the loader).
    """
    problems = exit_problems(graph, exits, heads)
    if problems:
        index, _, message, _ = problems[0]
        raise ModelError(f"exits[{index}]: {message}", graph.name)
    # each head is declared right after its exit's op: the deterministic topological
    # order (and so the policies' op order) runs a head before the trunk goes on
    after: dict[str, list[Op]] = {}
    edges = list(graph.edges())
    for e, head in zip(exits, heads, strict=True):
        prev = graph.op(e.after)
        for op in head:
            after.setdefault(e.after, []).append(op)
            edges.append(Edge(prev.name, op.name, prev.output_bytes))
            prev = op
    ops = [x for op in graph for x in (op, *after.get(op.name, ()))]
    return ExitModel(graph.name, ops, edges, exits, final_accuracy_top1)


def fused_into(graph: ModelGraph, name: str) -> str:
    """The op of ``graph`` whose output is op ``name``'s: ``name`` itself, or the fused op
    whose last member it was (a fusion keeps its head's name and its tail's output);
    ``name`` when neither (:func:`exit_problems` reports it)."""
    fused = None if name in graph else _merged(graph, name)
    return fused.name if fused is not None and fused.fused[-1] == name else name


def _merged(graph: ModelGraph, name: str) -> Op | None:
    """The fused op that absorbed op ``name`` (None: no fusion did)."""
    return next((op for op in graph if name in op.fused), None)


def exit_problems(
    graph: ModelGraph, exits: Sequence[Exit], heads: Sequence[Sequence[Op]]
) -> list[tuple[int, str, str, str | None]]:
    """What is wrong with ``exits`` on ``graph``: ``(exit index, key, message,
    nearest valid name or None)`` per problem (empty: they are valid).

    Rules: names unique and not ``final``; ``after`` an op of the model that is not one
    of its outputs (the full model is the last exit already); head op names new; each
    exit's op an ancestor of the next one's (exits in the order a request meets them);
    probabilities in [0, 1] summing to at most 1; a threshold on every exit or none.
    """
    from simulator.schema import nearest

    out: list[tuple[int, str, str, str | None]] = []
    names: set[str] = set()
    taken = set(graph.order)
    sinks = set(graph.exit_ops())
    for i, (e, head) in enumerate(zip(exits, heads, strict=True)):
        if e.name == FINAL or e.name in names:
            why = "is the model's own output" if e.name == FINAL else "is used twice"
            out.append((i, "name", f"exit name '{e.name}' {why}; give another", None))
        names.add(e.name)
        if e.after not in graph and (fused := _merged(graph, e.after)) is not None:
            why = (
                f"exit '{e.name}' names op '{e.after}', which a fusion merged into "
                f"'{fused.name}' ({' + '.join(fused.fused)}): its output no longer exists; "
                f"name '{fused.fused[-1]}', whose output the fused op gives"
            )
            out.append((i, "after", why, None))
        elif e.after not in graph:
            hint = nearest(e.after, graph.order)
            out.append((i, "after", f"exit '{e.name}' names unknown op '{e.after}'", hint))
        elif e.after in sinks and not head:
            out.append(
                (i, "after", f"'{e.after}' is an output of the model: the last exit already", None)
            )
        for op in head:
            if op.name in taken:
                out.append((i, "head", f"head op name '{op.name}' is taken; rename it", None))
            taken.add(op.name)
        if not 0.0 <= e.probability <= 1.0:
            out.append((i, "probability", f"probability {e.probability} is not in [0, 1]", None))
    with_threshold = [e.name for e in exits if e.threshold is not None]
    if with_threshold:  # confidence thresholds: every exit has one
        for i, e in enumerate(exits):
            if e.threshold is None:
                why = f"give a threshold here too: exit '{with_threshold[0]}' has one"
                out.append((i, "name", why, None))
    total = math.fsum(e.probability for e in exits)
    if total > 1.0 + 1e-12:
        why = f"the probabilities sum to {total:.6g} > 1"
        out.append((len(exits) - 1, "probability", why, None))
    if not out:
        g = graph.graph
        for i in range(1, len(exits)):
            prev, here = exits[i - 1].after, exits[i].after
            if prev != here and prev not in nx.ancestors(g, here):
                out.append(
                    (
                        i,
                        "after",
                        f"exit '{exits[i].name}' (after '{here}') does not follow exit "
                        f"'{exits[i - 1].name}' (after '{prev}'): list the exits in the "
                        "order a request meets them",
                        None,
                    )
                )
    return out


def _upto(graph: ExitModel, k: int) -> set[str]:
    """Exit ``k``'s op with everything it depends on."""
    out = graph.exits[k].output
    return {out, *nx.ancestors(graph.graph, out)}


def cascade_ops(graph: ExitModel, k: int) -> frozenset[str]:
    """The ops a request that leaves at exit ``k`` runs (``k == len(exits)``: ``final``):
    the trunk up to exit ``k``, its head and the heads of the exits it passed."""
    if k == len(graph.exits):
        return frozenset(graph.order)
    ops = _upto(graph, k)
    for e in graph.exits[:k]:
        ops.update(e.head)
    return frozenset(ops)


def right_sized_ops(graph: ExitModel, k: int) -> frozenset[str]:
    """The model cut at exit ``k`` (Edgent): the trunk up to it and its head only
    (``k == len(exits)``: the trunk, no head)."""
    if k == len(graph.exits):
        return frozenset(n for n in graph.order if n not in graph.head_ops)
    return frozenset(_upto(graph, k))


def subgraph(graph: ModelGraph, names: frozenset[str] | set[str]) -> ModelGraph:
    """The plain model of the ops ``names`` of ``graph`` and the edges between them."""
    ops = [op for op in graph if op.name in names]
    edges = [e for e in graph.edges() if e.src in names and e.dst in names]
    return ModelGraph(graph.name, ops, edges)


def threshold_shares(thresholds: Sequence[float]) -> tuple[float, ...]:
    """Shares of the exits (``final`` last) when a request's confidence at each exit is
    uniform in [0, 1), drawn independently, and it leaves at the first exit whose
    threshold its confidence reaches: ``(1 - t_k) × Π_{j<k} t_j``, ``final`` ``Π t_j``."""
    out, reach = [], 1.0
    for t in thresholds:
        out.append(reach * (1.0 - t))
        reach *= t
    return (*out, reach)


def cumulative(shares: Sequence[float]) -> tuple[float, ...]:
    """Running sums of ``shares``, 1 from the last exit of positive share on (every draw
    lands somewhere, and never on an exit of share 0 whatever the sum's rounding)."""
    out, total = [], 0.0
    for share in shares:
        total += share
        out.append(total)
    last = max((k for k, share in enumerate(shares) if share > 0), default=len(shares) - 1)
    return (*out[:last], *([1.0] * (len(out) - last)))


def choose_exit(cum: Sequence[float], u: float) -> int:
    """The exit a request with uniform draw ``u`` in [0, 1) takes: the first whose
    cumulative share exceeds ``u`` (an exit of share 0 is never taken)."""
    for k, edge in enumerate(cum):
        if u < edge:
            return k
    return len(cum) - 1


def expected(values: Sequence[float | None], shares: Sequence[float]) -> float:
    """``Σ shares[k] × values[k]`` over the exits a request may take (share > 0): the
    mean latency of a request mix, or its accuracy (NaN when a value taken is unknown)."""
    total = 0.0
    for value, share in zip(values, shares, strict=True):
        if share > 0:
            if value is None or math.isnan(value):
                return math.nan
            total += share * value
    return total
