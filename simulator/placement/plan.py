"""Compile (graph, placement, platform) into an execution plan, and estimate it.

The plan is what both the engine and the pure list-schedule estimate execute, so the
two agree by construction: with one request and no contention the engine's latency
equals :func:`estimate`'s (tested).

Semantics, per request:

* The request's input (``graph.request_input_bytes``: the largest input of the entry
  ops) is at the source node at arrival. Entry ops on the source node read it for free;
  each other unit that runs an entry op receives it once.
* An op waits for every input tensor and for the previous op of the same request on
  its unit (in placement order), then runs for its cost-model time.
* A tensor that crosses units moves once per destination unit (edges to the same
  unit share it; bytes = the largest edge); an edge with an explicit ``comm_s`` moves
  alone at that cost. On chip: sync + bytes / shared-memory bandwidth. Between nodes:
  store-and-forward along the route, each hop serialising at its bandwidth, then
  propagation latency.
* The output of every exit op returns to the source node; the request completes when
  all have arrived.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from simulator.graph.model import ModelGraph
from simulator.hardware.cores import with_cores
from simulator.hardware.cost import (
    cost_model,
    dram_traffic_bytes,
    energy_for_time_j,
    op_time_parts_s,
    op_time_s,
)
from simulator.network.topology import Hop
from simulator.placement.base import Placement
from simulator.platform import CostOracle, Transfer


@dataclass(frozen=True)
class Move:
    """One tensor movement of a request.

    ``src_unit`` is None for the request input (it starts at the source node);
    ``dst_unit`` is None for an output returning to the source node. ``consumers``
    are the op indices it feeds.
    """

    src_op: int | None
    src_unit: str | None
    dst_unit: str | None
    nbytes: int
    transfer: Transfer
    consumers: tuple[int, ...]
    #: the op whose buffer the move reads, when not ``src_op``: a view's input's owner
    #: (:func:`buffer_owners`), held until the copy has left
    buffer_op: int | None = None

    @property
    def holder(self) -> int | None:
        """The op whose output buffer this move holds until it has left (None: the input)."""
        return self.src_op if self.buffer_op is None else self.buffer_op

    @property
    def hops(self) -> tuple[Hop, ...]:
        return self.transfer.hops

    @property
    def fixed_delay_s(self) -> float:
        """Time of the non-network part (local / explicit / on-chip), in seconds."""
        return self.transfer.time_s(self.nbytes) if not self.transfer.hops else 0.0


@dataclass(frozen=True)
class ExecutionPlan:
    """Index-based, precomputed form of a placed model (op index = placement order)."""

    model: str
    source: str
    label: str
    placement: Placement
    ops: tuple[str, ...]
    kinds: tuple[str, ...]
    units: tuple[str, ...]
    duration_s: tuple[float, ...]
    energy_j: tuple[float, ...]
    #: per op, the bytes its output buffer allocates on its unit: 0 for a view that
    #: aliases its input's buffer (:func:`buffer_owners`); not its tensor's size
    output_bytes: tuple[int, ...]
    weight_bytes: tuple[int, ...]
    waits: tuple[int, ...]
    local_next: tuple[tuple[int, ...], ...]
    local_inputs: tuple[tuple[int, ...], ...]
    dvfs_parts: tuple[tuple[float, float, float] | None, ...]
    core_share: tuple[float, ...]
    #: per op, (fixed s, DRAM bytes of its body) when it pulls from its node's shared DRAM
    dram: tuple[tuple[float, float] | None, ...]
    moves_out: tuple[tuple[Move, ...], ...]
    input_moves: tuple[Move, ...]
    n_outputs: int
    #: per op, the model that costs it: ``table``, ``predictor`` or ``roofline``
    cost_models: tuple[str, ...] = ()
    #: per op, the cores it takes of its unit, when the placement runs some unit as a
    #: core pool (``Placement.cores``); empty otherwise (each op takes ``cores_per_op``)
    op_cores: tuple[int, ...] = ()
    #: the units this plan runs as core pools (no per-request order between their ops)
    pool_units: frozenset[str] = frozenset()

    @property
    def size(self) -> int:
        return len(self.ops)

    @property
    def holders(self) -> tuple[int, ...]:
        """Per op, how many readers hold its output buffer: same-unit consumers + moves out
        (a view's readers hold its input's buffer: :func:`buffer_owners`)."""
        counts = [0] * len(self.moves_out)
        for moves in self.moves_out:
            for move in moves:
                counts[move.holder] += 1  # type: ignore[index]  # moves out have a source op
        for producers in self.local_inputs:
            for i in producers:
                counts[i] += 1
        return tuple(counts)


def buffer_owners(graph: ModelGraph, order: tuple[str, ...], units: tuple[str, ...]) -> list[int]:
    """Per op (placement order), the op whose buffer holds its output.

    An op owns its output, except a view (:attr:`~simulator.graph.model.Op.is_view`) of
    one op's output on its own unit: a Reshape, Flatten or Squeeze aliases its input in
    real runtimes, so its output is its input's buffer (its owner's, through a chain of
    views). Such a view allocates nothing, and its readers hold the owner's buffer, so
    the buffer stays live until the view's consumers are done (and its copies to other
    units have left). A view of the request input or of a tensor moved in from another
    unit owns its output (the copy it reads is not an op's buffer). The one statement of
    aliasing the engine's memory tally and the nodes' memory pools follow.
    """
    index = {name: i for i, name in enumerate(order)}
    owner = list(range(len(order)))
    for i, name in enumerate(order):
        if not graph.op(name).is_view:
            continue
        producers = graph.predecessors(name)
        if len(producers) == 1 and units[index[producers[0]]] == units[i]:
            owner[i] = owner[index[producers[0]]]  # placement order is topological
    return owner


def dram_demand(
    op,
    uid: str,
    oracle: CostOracle,
    parts: Callable[[], tuple[float, float, float]],
    pool: bool = False,
) -> tuple[float, float] | None:
    """(fixed s, DRAM bytes) of an op that pulls from a node's finite shared DRAM, else None.

    ``parts()`` is ``op_time_parts_s(op, unit, uid)`` (computed at most once per op by the
    caller).

    An op with a tabled time or no memory term (a unit of unbounded bandwidth, a view)
    has no known DRAM rate: it shares nothing; neither does an op on a node that can run
    only one op at a time within its bandwidth. The one statement of who shares a node's
    DRAM: the engine (through the plan) and ``co_execute``'s bound both ask it.
    """
    node = oracle.platform.node_of(uid)
    unit = oracle.platform.unit(uid)
    if math.isinf(node.dram_bps):
        return None
    alone = len(node.units) == 1 and unit.slots == 1 and not pool
    if alone and unit.memory_bandwidth_bytes_per_s <= node.dram_bps:
        return None  # one op at a time, never short of bandwidth: nothing to share
    fixed_s, _, memory_s = parts()
    nbytes = dram_traffic_bytes(op, unit)
    if memory_s <= 0 or nbytes <= 0:
        return None
    return fixed_s, nbytes


def compile_plan(
    graph: ModelGraph,
    placement: Placement,
    oracle: CostOracle,
    label: str | None = None,
    costs_of: ExecutionPlan | None = None,
) -> ExecutionPlan:
    """Precompute durations, dependencies and tensor moves of ``placement``.

    Parameters
    ----------
    graph : ModelGraph
    placement : Placement
        Already checked (see :func:`~simulator.placement.base.place`).
    oracle : CostOracle
    label : str, optional
        The decision's name (default: :meth:`Placement.label`).
    costs_of : ExecutionPlan, optional
        A plan of the same graph and op order whose op ``i`` ran on a unit equal to this
        placement's op ``i`` in every field (on a node equal in every field but its
        name), with the same cores: an identical fleet member's
        (:mod:`simulator.placement.members`). Its :data:`COST_FIELDS`, which read the
        units alone, are taken as they are; the moves and routes are this placement's.

    Returns
    -------
    ExecutionPlan
    """
    order = placement.order
    index = {op: i for i, op in enumerate(order)}
    units = tuple(placement.assignment[op] for op in order)
    source = placement.source
    ops = [graph.op(name) for name in order]
    waits = [0] * len(order)
    local_next: list[list[int]] = [[] for _ in order]
    moves_out: list[list[Move]] = [[] for _ in order]
    local_inputs: list[list[int]] = [[] for _ in order]
    owner = buffer_owners(graph, order, units)

    pools = frozenset(placement.assignment[name] for name in placement.cores)
    last_on_unit: dict[str, int] = {}
    for i, uid in enumerate(units):
        if uid in pools:  # a core pool: the request's ops there wait for inputs and cores only
            continue
        if uid in last_on_unit:  # the unit runs a request's ops in placement order
            local_next[last_on_unit[uid]].append(i)
            waits[i] += 1
        last_on_unit[uid] = i

    for i, name in enumerate(order):
        groups: dict[str, list] = {}
        for dst_name in graph.successors(name):
            j = index[dst_name]
            edge = graph.edge(name, dst_name)
            waits[j] += 1
            if units[j] == units[i]:
                local_next[i].append(j)
                local_inputs[j].append(owner[i])  # the buffer it reads (a view's: its input's)
            elif edge.comm_s is not None:
                transfer = oracle.edge_transfer(edge, units[i], units[j])
                moves_out[i].append(
                    Move(i, units[i], units[j], edge.bytes, transfer, (j,), _alias(owner, i))
                )
            else:
                group = groups.setdefault(units[j], [0, []])
                group[0] = max(group[0], edge.bytes)
                group[1].append(j)
        for dst_unit, (nbytes, consumers) in groups.items():
            transfer = oracle.edge_transfer(None, units[i], dst_unit)
            moves_out[i].append(
                Move(i, units[i], dst_unit, nbytes, transfer, tuple(consumers), _alias(owner, i))
            )

    node_of = {uid: oracle.platform.node_of(uid).name for uid in set(units)}
    n_outputs = 0
    for name in graph.exit_ops():
        i = index[name]
        hops = oracle.route(node_of[units[i]], source)
        kind = "network" if hops else "local"
        moves_out[i].append(
            Move(
                i,
                units[i],
                None,
                ops[i].output_bytes,
                Transfer(kind, hops=hops),
                (),
                _alias(owner, i),
            )
        )
        n_outputs += 1

    inputs: dict[str, list[int]] = {}
    for name in graph.entry_ops():
        i = index[name]
        inputs.setdefault(units[i], []).append(i)
        waits[i] += 1
    input_moves = []
    for dst_unit, consumers in inputs.items():
        hops = oracle.route(source, node_of[dst_unit])
        transfer = Transfer("network" if hops else "local", hops=hops)
        input_moves.append(
            Move(None, None, dst_unit, graph.request_input_bytes, transfer, tuple(consumers))
        )

    if costs_of is not None:  # an identical member's units: the same costs, bit for bit
        costs = {name: getattr(costs_of, name) for name in COST_FIELDS}
    else:
        costs = _op_costs(ops, units, placement, oracle, pools)
    return ExecutionPlan(
        model=graph.name,
        source=source,
        label=label or placement.label(oracle),
        placement=placement,
        ops=tuple(order),
        kinds=tuple(op.kind for op in ops),
        units=units,
        output_bytes=tuple(op.output_bytes if owner[i] == i else 0 for i, op in enumerate(ops)),
        weight_bytes=tuple(op.weight_bytes for op in ops),
        waits=tuple(waits),
        local_next=tuple(tuple(x) for x in local_next),
        local_inputs=tuple(tuple(x) for x in local_inputs),
        moves_out=tuple(tuple(x) for x in moves_out),
        input_moves=tuple(input_moves),
        n_outputs=n_outputs,
        pool_units=pools,
        **costs,
    )


def _alias(owner: list[int], i: int) -> int | None:
    """A move's ``buffer_op``: None when op ``i`` owns its output."""
    return None if owner[i] == i else owner[i]


#: The fields of an :class:`ExecutionPlan` that read only each op's unit (and node).
COST_FIELDS = (
    "duration_s",
    "energy_j",
    "cost_models",
    "dvfs_parts",
    "core_share",
    "dram",
    "op_cores",
)


def _op_costs(
    ops: list, units: tuple[str, ...], placement: Placement, oracle: CostOracle, pools: frozenset
) -> dict[str, Any]:
    """Per op, the :data:`COST_FIELDS` of the plan: what its unit makes of it."""
    order = placement.order
    # each op's roofline parts on its unit, at most once: the DVFS model and the DRAM
    # demand both need them, and they cost every memory level's traffic
    memo: dict[int, tuple[float, float, float]] = {}
    costed = [oracle.platform.unit(uid) for uid in units]  # each op's unit at its cores
    for i, name in enumerate(order):
        if name in placement.cores:
            costed[i] = with_cores(costed[i], placement.cores[name])

    def parts(i: int) -> tuple[float, float, float]:
        if i not in memo:
            if units[i] in pools:  # a core pool's unit at the op's cores: not the oracle's
                memo[i] = op_time_parts_s(ops[i], costed[i], units[i])
            else:
                memo[i] = oracle.op_time_parts_s(ops[i], units[i])
        return memo[i]

    def demand(i: int) -> tuple[float, float] | None:
        uid = units[i]
        if uid in pools:
            return dram_demand(ops[i], uid, oracle, partial(parts, i), True)
        # the same for every plan that puts the op on this unit
        return oracle.derived(
            ops[i], "dram_demand", uid, lambda: dram_demand(ops[i], uid, oracle, partial(parts, i))
        )

    if pools:
        pool_ops = [name in placement.cores for name in order]
        duration_s = tuple(
            op_time_s(op, costed[i], uid) if pool_ops[i] else oracle.op_time_s(op, uid)
            for i, (op, uid) in enumerate(zip(ops, units, strict=True))
        )
        energy_j = tuple(
            energy_for_time_j(costed[i], duration_s[i])
            if pool_ops[i]
            else oracle.op_energy_j(op, uid)
            for i, (op, uid) in enumerate(zip(ops, units, strict=True))
        )
        models = tuple(
            cost_model(op, costed[i], uid) if pool_ops[i] else oracle.cost_model(op, uid)
            for i, (op, uid) in enumerate(zip(ops, units, strict=True))
        )
    else:
        duration_s = tuple(oracle.op_time_s(op, uid) for op, uid in zip(ops, units, strict=True))
        energy_j = tuple(oracle.op_energy_j(op, uid) for op, uid in zip(ops, units, strict=True))
        models = tuple(oracle.cost_model(op, uid) for op, uid in zip(ops, units, strict=True))
    dram: tuple[tuple[float, float] | None, ...] = tuple(demand(i) for i in range(len(ops)))
    return {
        "duration_s": duration_s,
        "energy_j": energy_j,
        "cost_models": models,
        "dvfs_parts": tuple(
            parts(i) if oracle.platform.unit(uid).dvfs is not None else None
            for i, uid in enumerate(units)
        ),
        "core_share": tuple(unit.op_cores / unit.cores for unit in costed),
        "dram": dram,
        "op_cores": tuple(unit.op_cores for unit in costed) if pools else (),
    }
