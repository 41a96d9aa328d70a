"""What a model DAG tells each op about its surroundings: the context features
:class:`~simulator.graph.model.ModelGraph` stamps on every op it holds.

A kernel's time depends on more than its own shapes: on where its inputs sit in the
cache hierarchy when it starts. Two numbers of the network say how far down they have
been pushed, and the learned kernel predictor sees them as features
(:mod:`simulator.hardware.kernel_features`):

* ``net_weight_bytes`` (:data:`FOOTPRINT_KEY`): the whole network's weight bytes, what
  streams through the caches between two runs of the op (docs/calibration.md,
  "Network footprint");
* ``input_age_bytes`` (:data:`INPUT_AGE_KEY`): for the op's oldest input, the bytes the
  ops run between that input's producer and the op have touched (their inputs, weights
  and outputs; a view touches none), in the graph's deterministic topological order. An
  input its producer has just written is still in the cache (0); a DenseNet block's
  first layer output, read again by the block's last concat, has had megabytes pass
  through the cache since (docs/calibration.md, "Input age"). An op that reads no
  other op (the request's input) gets the whole network's touched bytes: its input was
  written before the run;
* ``input_count`` (:data:`INPUT_COUNT_KEY`): how many ops the op reads (its
  predecessors; 1 for an op that reads only the request). A concat copies each input
  in a block of its own: at the same total bytes, each extra input added 0.3-0.6 µs on
  this host (docs/calibration.md, "Concat inputs (tried, not taken)"). Two inputs from
  one producer (two outputs of a Split) count once: the graph has one edge between
  two ops.

The order is the one ``ModelGraph.order`` gives, which for an ONNX model is the file's
node order and, for graphs onnxruntime has optimised and saved, its execution order.
Placement across several units changes what runs between two ops; the stamp stays the
sequential one (a limit, documented in docs/predictors.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import networkx as nx

#: ``Op.attrs`` key: the bytes of all of the network's weights.
FOOTPRINT_KEY = "net_weight_bytes"
#: ``Op.attrs`` key: bytes touched since the op's oldest input was written.
INPUT_AGE_KEY = "input_age_bytes"
#: ``Op.attrs`` key: how many ops the op reads (at least 1).
INPUT_COUNT_KEY = "input_count"
#: Every key :func:`stamp_context` sets (leave them out to compare an op across graphs).
CONTEXT_KEYS: tuple[str, ...] = (FOOTPRINT_KEY, INPUT_AGE_KEY, INPUT_COUNT_KEY)


def input_ages(graph: nx.DiGraph, order: Sequence[str]) -> dict[str, int]:
    """Each op's input age in bytes (see the module docstring).

    Parameters
    ----------
    graph : networkx.DiGraph
        Nodes carry their :class:`~simulator.graph.model.Op` under ``"op"``.
    order : sequence of str
        Every node, in a topological order: the order the ops run in.

    Returns
    -------
    dict of str to int
        Op name to bytes touched (>= 0) since its oldest input was written.
    """
    position = {name: i for i, name in enumerate(order)}
    # touched[i]: bytes the first i ops touched; a view aliases its input, touching none
    touched = [0]
    for name in order:
        op = graph.nodes[name]["op"]
        touched.append(touched[-1] + (0 if op.is_view else op.bytes_moved))
    ages = {}
    for name in order:
        start = position[name]
        ages[name] = max(
            (touched[start] - touched[position[p] + 1] for p in graph.predecessors(name)),
            default=touched[-1],
        )
    return ages


def stamp_context(graph: nx.DiGraph, order: Sequence[str]) -> None:
    """Give every op of ``graph`` its context keys (:data:`CONTEXT_KEYS`), in place.

    Ops are frozen and may be shared with another graph, so a stamped copy replaces each
    op, unless it already carries this graph's values (e.g. after ``with_ops``).
    """
    nodes = graph.nodes
    footprint = int(sum(data["op"].weight_bytes for _, data in nodes(data=True)))
    ages = input_ages(graph, order)
    for name in order:
        op = nodes[name]["op"]
        context = {
            FOOTPRINT_KEY: footprint,
            INPUT_AGE_KEY: ages[name],
            INPUT_COUNT_KEY: max(graph.in_degree(name), 1),
        }
        if any(op.attrs.get(key) != value for key, value in context.items()):
            nodes[name]["op"] = replace(op, attrs={**op.attrs, **context})
